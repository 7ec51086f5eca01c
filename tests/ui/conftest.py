"""UI test fixtures: a real session on a real git repository, the app driven by Textual's Pilot."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.session import Session
from tests.conftest import SessionOn


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep every test away from the user's ~/.config/reposim."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home / "reposim"


@pytest.fixture
async def session(sample_repo: Path, session_on: SessionOn) -> Session:
    return await session_on(sample_repo, "trajectory.jsonl")
