"""Fixtures for tests against a real Docker engine.

Without a usable engine these tests skip with the reason; with REPOSIM_REQUIRE_DOCKER=1 (CI)
they fail instead. The image comes from REPOSIM_TEST_IMAGE (default reposim/base:bookworm-2, built
by `reposim image bootstrap`); a missing image is a failure that says how to build it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from backends.base import BackendUnavailableError
from backends.docker import DockerBackend, DockerOptions
from backends.docker_engine import LABEL_MANAGED, LABEL_PID, connect

TEST_IMAGE = os.environ.get("REPOSIM_TEST_IMAGE", "reposim/base:bookworm-2")
NO_PYTHON = "rm -f /usr/bin/python3* /usr/bin/python /usr/local/bin/python3*"
"""Removes python3 from the test image (file operations then take the bash fallback)."""
REQUIRED = os.environ.get("REPOSIM_REQUIRE_DOCKER") == "1"

BackendFactory = Callable[..., Awaitable[DockerBackend]]

ROOT = Path(__file__).resolve().parents[2]

SESSION_UNTIL_KILLED = """
import asyncio, sys
from backends.docker import DockerBackend, DockerOptions

async def main():
    backend = DockerBackend(sys.argv[1], DockerOptions.build(image=sys.argv[2]))
    await backend.start()
    print(backend.container_id, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""
"""A session in a process of its own: prints its container's id, then waits to be killed."""


async def killed_owner(
    repo: Path, *, within: float, env: Mapping[str, str] | None = None
) -> tuple[str, int]:
    """Start a session on `repo` in a process of its own, read its container id, then SIGKILL the
    process so that no cleanup code gets to run: the container it left and the dead owner's pid."""
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SESSION_UNTIL_KILLED, str(repo), TEST_IMAGE,
        cwd=ROOT, stdout=subprocess.PIPE, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert owner.stdout is not None
    orphan = (await asyncio.wait_for(owner.stdout.readline(), within)).decode().strip()
    assert orphan
    owner.send_signal(signal.SIGKILL)  # no cleanup code gets to run
    await owner.wait()
    return orphan, owner.pid


def reposim_cli(
    *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`reposim ARGS` in a process of its own, from the checkout, with `env` over this one's."""
    return subprocess.run(
        [sys.executable, "-c", "from reposim.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )


@contextlib.contextmanager
def committed_image(docker_client: Any, script: str, repository: str, tag: str) -> Iterator[str]:
    """TEST_IMAGE after `script` ran in it as root, committed as REPOSITORY:TAG while the block
    runs, removed after. Callers put the process id in TAG: pytest-xdist workers build their
    own copies side by side."""
    container = docker_client.containers.run(
        TEST_IMAGE, ["sh", "-c", script], user="0", detach=True, network_mode="none"
    )
    try:
        assert container.wait(timeout=60)["StatusCode"] == 0
        image = container.commit(repository=repository, tag=tag)
    finally:
        container.remove(force=True)
    yield f"{repository}:{tag}"
    docker_client.images.remove(image.id, force=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.docker)


def engine_or_skip() -> Any:
    """A client of the Docker engine; without a usable engine the test skips (fails with
    REPOSIM_REQUIRE_DOCKER=1, as in CI)."""
    try:
        return connect(timeout=30)
    except BackendUnavailableError as exc:
        if REQUIRED:
            pytest.fail(f"REPOSIM_REQUIRE_DOCKER=1 but Docker is not usable: {exc}", pytrace=False)
        pytest.skip(f"no usable Docker engine: {exc}")


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    client = engine_or_skip()
    import docker.errors

    try:
        client.images.get(TEST_IMAGE)
        missing = False
    except docker.errors.ImageNotFound:
        missing = True
    if missing:
        client.close()
        pytest.fail(
            f"The test image {TEST_IMAGE} is missing: build it with "
            f"`sudo uv run reposim image bootstrap --tag {TEST_IMAGE}` "
            "(or set REPOSIM_TEST_IMAGE).",
            pytrace=False,
        )
    yield client
    client.close()


@pytest.fixture(autouse=True)
def _needs_docker(docker_client: Any) -> None:
    """Every test in this folder needs the engine (skips or fails at once without it)."""


def our_containers(client: Any) -> list[dict[str, Any]]:
    """Labelled containers created by this test process."""
    return [
        c
        for c in client.api.containers(all=True, filters={"label": f"{LABEL_MANAGED}=1"})
        if (c.get("Labels") or {}).get(LABEL_PID) == str(os.getpid())
    ]


@pytest.fixture
async def make_backend() -> AsyncIterator[BackendFactory]:
    """Start DockerBackends on the test image; every one is stopped at the end of the test."""
    started: list[DockerBackend] = []

    async def factory(source: Path, **options: Any) -> DockerBackend:
        options.setdefault("image", TEST_IMAGE)
        backend = DockerBackend(source, DockerOptions.build(**options))
        started.append(backend)
        await backend.start()
        return backend

    yield factory
    for backend in started:
        await backend.stop()


@pytest.fixture
async def backend(make_backend: BackendFactory, sample_repo: Path) -> DockerBackend:
    return await make_backend(sample_repo)
