"""Fixtures for tests against a real Docker engine.

Without a usable engine these tests skip with the reason; with REPOSIM_REQUIRE_DOCKER=1 (CI)
they fail instead. The image comes from REPOSIM_TEST_IMAGE (default reposim/base:bookworm-2, built
by `reposim image bootstrap`); a missing image is a failure that says how to build it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.base import BackendUnavailableError
from backends.docker import DockerBackend, DockerOptions
from backends.docker_engine import LABEL_MANAGED, LABEL_PID, connect

TEST_IMAGE = os.environ.get("REPOSIM_TEST_IMAGE", "reposim/base:bookworm-2")
REQUIRED = os.environ.get("REPOSIM_REQUIRE_DOCKER") == "1"

BackendFactory = Callable[..., Awaitable[DockerBackend]]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    try:
        client = connect(timeout=30)
    except BackendUnavailableError as exc:
        if REQUIRED:
            pytest.fail(f"REPOSIM_REQUIRE_DOCKER=1 but Docker is not usable: {exc}", pytrace=False)
        pytest.skip(f"no usable Docker engine: {exc}")
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
