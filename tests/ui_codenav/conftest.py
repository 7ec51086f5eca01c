"""Fixtures for the code-navigation tests: a real session over a small Python + C repository."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from simulator.session import Session
from tests.analysis.nav_project import NAV_REPO
from tests.conftest import RepoFactory


@pytest.fixture
def nav_repo(make_repo: RepoFactory) -> Path:
    return make_repo(NAV_REPO, name="navrepo")


@pytest.fixture
async def session(nav_repo: Path, tmp_path: Path) -> AsyncIterator[Session]:
    session = await Session.open(nav_repo, trajectory_path=tmp_path / "run.jsonl")
    yield session
    await session.close()


async def wait_for(
    pilot: Pilot[None], condition: Callable[[], bool], timeout: float = 20.0
) -> None:
    """Let the app run until `condition` holds; fail with a clear message after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition was not met in time")
        await pilot.pause(0.02)
        await asyncio.sleep(0)
