"""Fixtures for setup tests: sessions in real containers on the setup image (network on).

Setup installs from the package index, so these tests need a Docker engine and the index (the
host CA bundle is passed into the container). Without an engine they skip with the reason; with
REPOSIM_REQUIRE_DOCKER=1 they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from simulator.backend_factory import BackendOptions, make_backend
from simulator.session import Session
from simulator.setup import SetupResult, run_setup

SETUP_IMAGE = os.environ.get("REPOSIM_SETUP_IMAGE", "reposim/base:bookworm-2")

SessionFactory = Callable[[Path], Awaitable[Session]]
SetUp = Callable[[Path], Awaitable[tuple[Session, SetupResult]]]


def docker_or_skip() -> None:
    from tests.docker.conftest import engine_or_skip

    client = engine_or_skip()
    try:
        client.images.get(SETUP_IMAGE)
    except Exception:
        pytest.fail(
            f"The setup image {SETUP_IMAGE} is missing (set REPOSIM_SETUP_IMAGE).", pytrace=False
        )
    finally:
        client.close()


@pytest.fixture
async def docker_session(tmp_path: Path) -> AsyncIterator[SessionFactory]:
    """Open sessions in fresh containers with the network on; all are closed at the end."""
    docker_or_skip()
    opened: list[Session] = []

    async def factory(repo: Path) -> Session:
        backend = make_backend(
            "docker", repo, options=BackendOptions(image=SETUP_IMAGE, network=True)
        )
        session = await Session.open(
            repo, backend=backend, trajectory_path=tmp_path / f"{repo.name}.jsonl"
        )
        opened.append(session)
        return session

    yield factory
    for session in opened:
        await session.close()


@pytest.fixture
def set_up(docker_session: SessionFactory) -> SetUp:
    """Runs setup (the ladder, default options) on a repository in a fresh container of
    `docker_session`: the session, left open for more commands, and the result."""

    async def run(repo: Path) -> tuple[Session, SetupResult]:
        session = await docker_session(repo)
        return session, await run_setup(session)

    return run
