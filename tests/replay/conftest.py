"""Fixtures for replay tests: trajectories recorded by real sessions on real git repositories."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.replay.replay_helpers import SMALL_PROJECT, record_session


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New trajectories and scratch workspaces go under the test's own directory."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
async def recorded(make_repo: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    """(repository, trajectory) of a recorded session without a test run."""
    repo = make_repo(SMALL_PROJECT, name="project")
    return repo, await record_session(repo, tmp_path / "recorded.jsonl")


@pytest.fixture
def original(recorded: tuple[Path, Path]) -> Path:
    """The trajectory of `recorded` (what replay, re-execution and forks start from), for the
    tests that need no repository of their own."""
    return recorded[1]
