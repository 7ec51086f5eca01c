"""What a VS Code user reaches for first, driven with Pilot in the whole app on a real session:
line:column in the status bar, tab switching, Ctrl+Home/End, select all, comment toggle, find
with a match count and replace, file operations in the tree, and the Changes list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets.text_area import Selection

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


async def test_ctrl_pgdn_pgup_and_ctrl_tab_switch_editor_tabs(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        for path in ("pkg/core.py", "src/main.c", "notes.md"):
            await pane.open_file(path)
        assert pane.current_path == "notes.md"
        await pilot.press("ctrl+pagedown")  # wraps around to the first tab
        await wait_for(pilot, lambda: pane.current_path == "pkg/core.py")
        assert app.focused is pane.current_editor
        await pilot.press("ctrl+pagedown")
        await wait_for(pilot, lambda: pane.current_path == "src/main.c")
        await pilot.press("ctrl+pageup", "ctrl+pageup")
        await wait_for(pilot, lambda: pane.current_path == "notes.md")
        await pilot.press("ctrl+tab")  # where the terminal sends it (kitty keyboard protocol)
        await wait_for(pilot, lambda: pane.current_path == "pkg/core.py")
        await pilot.press("ctrl+shift+tab")
        await wait_for(pilot, lambda: pane.current_path == "notes.md")
        assert app.focused is pane.current_editor
        # The keys switched tabs only: no text was typed or indented anywhere.
        assert not pane.dirty_paths()


async def test_ctrl_home_end_and_ctrl_a_select_all(app: RepoSimApp, session: Session) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("pkg/core.py")
        editor = pane.current_editor
        assert editor is not None
        last = editor.document.line_count - 1
        await pilot.press("down", "down", "ctrl+end")
        assert editor.cursor_location == (last, len(editor.document[last]))
        await pilot.press("ctrl+home")
        assert editor.cursor_location == (0, 0)
        await pilot.press("down", "ctrl+shift+end")
        assert editor.selected_text == editor.text.split("\n", 1)[1]
        await pilot.press("ctrl+a")
        assert editor.selected_text == editor.text
        await pilot.press("x")
        assert editor.text == "x"
        await pilot.press("ctrl+z")
        assert editor.text == (Path(session.workspace_path) / "pkg/core.py").read_text()


async def test_ctrl_slash_toggles_line_comments_per_language(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("pkg/core.py")
        editor = pane.current_editor
        assert editor is not None
        # Lines 6-8: "def add(a, b):", "    # the sum", "    return a + b"; a selection
        # ending at column 0 of line 9 does not take line 9.
        editor.move_cursor((5, 4))
        await pilot.press("shift+down", "shift+down", "shift+down", "shift+home")
        await pilot.press("ctrl+underscore")  # what terminals send for Ctrl+/
        assert editor.document.lines[5:9] == [
            "# def add(a, b):",
            "#     # the sum",
            "#     return a + b",
            "",
        ]
        # The selection stays on the same text.
        assert editor.selection == Selection((5, 6), (8, 0))
        await pilot.press("ctrl+slash")  # the kitty keyboard protocol's name for it
        assert editor.document.lines[5:8] == ["def add(a, b):", "    # the sum", "    return a + b"]
        # One line, indented: the marker goes at the indent; again: back as it was.
        editor.move_cursor((7, 6))
        await pilot.press("ctrl+underscore")
        assert editor.document[7] == "    # return a + b"
        assert editor.cursor_location == (7, 8)
        await pilot.press("ctrl+underscore")
        assert editor.document[7] == "    return a + b"
        # C comments with //.
        await pane.open_file("src/main.c")
        c_editor = pane.current_editor
        assert c_editor is not None and c_editor is not editor
        c_editor.move_cursor((4, 0))
        await pilot.press("ctrl+underscore")
        assert c_editor.document[4] == '    // printf("%d\\n", 42);'
        await pilot.press("ctrl+z")
        assert c_editor.document[4] == '    printf("%d\\n", 42);'


async def test_new_editor_keys_are_in_f1_with_binding_ids(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE):
        rows = {row[3]: row for row in app.help_rows()}
    for binding_id in (
        "editor.next_tab",
        "editor.previous_tab",
        "editor.select_all",
        "editor.file_start",
        "editor.file_end",
        "editor.toggle_comment",
    ):
        assert binding_id in rows, binding_id
    assert "Ctrl+Pagedown" in rows["editor.next_tab"][1]
