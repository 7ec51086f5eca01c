"""UI test fixtures: a real session on a real git repository, the app driven by Textual's Pilot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.session import Session


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep every test away from the user's ~/.config/reposim."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home / "reposim"


@pytest.fixture
async def session(sample_repo: Path, tmp_path: Path) -> AsyncIterator[Session]:
    opened = await Session.open(sample_repo, trajectory_path=tmp_path / "trajectory.jsonl")
    yield opened
    await opened.close()
