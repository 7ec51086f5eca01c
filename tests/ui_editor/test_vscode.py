"""What a VS Code user reaches for first, driven with Pilot in the whole app on a real session:
line:column in the status bar, tab switching, Ctrl+Home/End, select all, comment toggle, find
with a match count and replace, file operations in the tree, and the Changes list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.session import Session
from widgets.app import RepoSimApp
from widgets.editor_pane import EditorPane
from widgets.status_bar import StatusBar

from .conftest import wait_for

SIZE = (140, 40)


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every test away from the user's ~/.config/reposim (keymap, theme)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))


@pytest.fixture
async def app(session: Session) -> AsyncIterator[RepoSimApp]:
    yield RepoSimApp(session)


def status_text(app: RepoSimApp) -> str:
    return str(app.query_one(StatusBar).render())


async def test_status_bar_shows_line_and_column_as_the_cursor_moves(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        assert "Ln " not in status_text(app)
        await pane.open_file("pkg/core.py")
        await wait_for(pilot, lambda: "Ln 1, Col 1" in status_text(app))
        await pilot.press("down", "down", "right", "right")
        await wait_for(pilot, lambda: "Ln 3, Col 3" in status_text(app))
        await pilot.press("shift+right", "shift+right")
        await wait_for(pilot, lambda: "Ln 3, Col 5 (2 selected)" in status_text(app))
        # A tab counts to the next tab stop, as in VS Code.
        await pane.open_file("Makefile")
        await wait_for(pilot, lambda: "Ln 1, Col 1" in status_text(app))
        await pilot.press("down", "right")
        await wait_for(pilot, lambda: "Ln 2, Col 5" in status_text(app))
        # Back to the first tab: its own cursor; no tab at all: no position.
        await pane.open_file("pkg/core.py")
        await wait_for(pilot, lambda: "Ln 3, Col 5" in status_text(app))
        await pilot.press("ctrl+w")
        await wait_for(pilot, lambda: pane.current_path == "Makefile")
        await pilot.press("ctrl+w")
        await wait_for(pilot, lambda: pane.current_path is None)
        await wait_for(pilot, lambda: "Ln " not in status_text(app))
