"""Fixtures for the code-navigation tests: a real session over a small Python + C repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.session import Session
from tests.analysis.nav_project import NAV_REPO
from tests.conftest import RepoFactory, SessionOn


@pytest.fixture
def nav_repo(make_repo: RepoFactory) -> Path:
    return make_repo(NAV_REPO, name="navrepo")


@pytest.fixture
async def session(nav_repo: Path, session_on: SessionOn) -> Session:
    return await session_on(nav_repo, "run.jsonl")
