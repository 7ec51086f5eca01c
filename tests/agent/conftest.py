"""Fixtures for the agent tests: a buggy project, a session on it, the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.session import Session
from tests.conftest import RepoFactory, SessionOn

BUGGY_PROJECT = {
    "stats/__init__.py": "",
    "stats/core.py": (
        "def total(values):\n    return sum(values)\n\n\n"
        "def mean(values):\n    return total(values) / (len(values) - 1)\n"
    ),
    "tests/test_core.py": (
        "from stats.core import mean, total\n\n\n"
        "def test_total():\n    assert total([1, 2, 3]) == 6\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    ),
}

BUG = "total(values) / (len(values) - 1)"
FIX = "total(values) / len(values)"


@pytest.fixture
def buggy_repo(make_repo: RepoFactory) -> Path:
    return make_repo(BUGGY_PROJECT, name="buggy")


@pytest.fixture
async def session(buggy_repo: Path, session_on: SessionOn) -> Session:
    return await session_on(buggy_repo, "run.jsonl")
