"""What a VS Code user reaches for first, driven with Pilot in the whole app on a real session:
line:column in the status bar, tab switching, Ctrl+Home/End, select all, comment toggle, find
with a match count and replace, file operations in the tree, and the Changes list."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.text_area import Selection

from simulator.session import Session
from tests.conftest import WAIT
from tests.ui.helpers import drained, notices, palette_highlights, recorded, wait_quiet
from widgets.app import RepoSimApp
from widgets.changes_view import (
    ChangesView,
    DiffRow,
    DiffScreen,
    first_changed_line,
    short_path,
    side_by_side,
)
from widgets.code_editor import toggle_line_comments
from widgets.editor_pane import ChoiceScreen, EditorPane
from widgets.file_tree import FileTree, PromptScreen
from widgets.status_bar import StatusBar

from .conftest import open_editor, wait_for

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
        editor = pane.current_editor
        assert editor is not None
        await pilot.press("ctrl+a")  # across lines: every character, newlines included
        count = len(editor.text)
        await wait_for(pilot, lambda: f"({count} selected)" in status_text(app))
        await pilot.press("ctrl+home", "down", "down", "right", "right", "right", "right")
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


async def test_narrow_status_bar_keeps_the_facts_and_the_position(app: RepoSimApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("pkg/core.py")
        await pilot.press("down", "shift+down")
        await wait_for(pilot, lambda: "Ln 3, Col 1 (1 selected)" in status_text(app))
        text = status_text(app)
        assert "F2 commands" not in text  # the hint gives way first
        assert "0 changed files" in text and "F1 help" in text, text
        assert len(text) <= 80


async def test_ctrl_pgdn_pgup_and_ctrl_tab_switch_editor_tabs(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        for path in ("pkg/core.py", "src/main.c", "notes.md"):
            await pane.open_file(path)
        assert pane.current_path == "notes.md"
        await pilot.press("ctrl+pagedown")  # wraps around to the first tab
        # the tab shows first, its editor takes the focus a message later
        await wait_for(
            pilot,
            lambda: pane.current_path == "pkg/core.py" and app.focused is pane.current_editor,
        )
        await pilot.press("ctrl+pagedown")
        await wait_for(pilot, lambda: pane.current_path == "src/main.c")
        await pilot.press("ctrl+pageup", "ctrl+pageup")
        await wait_for(pilot, lambda: pane.current_path == "notes.md")
        await pilot.press("ctrl+tab")  # where the terminal sends it (kitty keyboard protocol)
        await wait_for(pilot, lambda: pane.current_path == "pkg/core.py")
        await pilot.press("ctrl+shift+tab")
        await wait_for(
            pilot, lambda: pane.current_path == "notes.md" and app.focused is pane.current_editor
        )
        # The keys switched tabs only: no text was typed or indented anywhere.
        assert not pane.dirty_paths()


async def test_ctrl_home_end_and_ctrl_a_select_all(app: RepoSimApp, session: Session) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        editor = await open_editor(pane, "pkg/core.py")
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
        editor = await open_editor(pane, "pkg/core.py")
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
        # Markdown has no line comment: the line is wrapped, and unwrapped again.
        await pane.open_file("notes.md")
        md_editor = pane.current_editor
        assert md_editor is not None
        await pilot.press("ctrl+underscore")
        assert md_editor.document[0] == "<!-- # Notes -->"
        await pilot.press("ctrl+underscore")
        assert md_editor.document[0] == "# Notes"


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
        "editor.replace",
        "editor.replace_all",
    ):
        assert binding_id in rows, binding_id
    assert "Ctrl+Pagedown" in rows["editor.next_tab"][1]


def find_count(app: RepoSimApp) -> str:
    return str(app.query_one("#find-count", Static).render())


async def test_find_shows_which_match_of_how_many(app: RepoSimApp, session: Session) -> None:
    await session.write("words.txt", "alpha beta alpha\ngamma alpha\n\nalpha end\n")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("words.txt")
        await pilot.press("ctrl+f", *"alpha")
        await wait_for(pilot, lambda: find_count(app) == "1 of 4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: find_count(app) == "2 of 4")
        await pilot.press("enter", "enter")
        await wait_for(pilot, lambda: find_count(app) == "4 of 4")
        await pilot.press("enter")  # wraps to the first
        await wait_for(pilot, lambda: find_count(app) == "1 of 4")
        await pilot.press("x")
        await wait_for(pilot, lambda: find_count(app) == "No results")


async def test_replace_one_then_all_is_one_recorded_edit(app: RepoSimApp, session: Session) -> None:
    await session.write("words.txt", "alpha beta alpha\ngamma alpha\n\nalpha end\n")
    on_disk = Path(session.workspace_path) / "words.txt"
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        editor = await open_editor(pane, "words.txt")
        await pilot.press("ctrl+r")  # Ctrl+H where the terminal tells it from Backspace
        assert app.query_one("#find-bar", Input).has_focus
        await pilot.press(*"alpha", "tab", *"omega")
        replace_bar = app.query_one("#replace-bar", Input)
        assert replace_bar.has_focus and replace_bar.value == "omega"
        await pilot.press("shift+tab")  # back to the find box, and Tab again to replace
        assert app.query_one("#find-bar", Input).has_focus
        await pilot.press("tab")
        assert replace_bar.has_focus
        await pilot.press("alt+enter")
        await wait_for(pilot, lambda: on_disk.read_text().count("omega") == 4)
        assert editor.text == on_disk.read_text() == "omega beta omega\ngamma omega\n\nomega end\n"
        await wait_for(pilot, lambda: find_count(app) == "No results")
        assert not pane.is_dirty("words.txt")
        edits = [e for e in recorded(session.trajectory_path) if e["kind"] == "file.edit"]
        assert len(edits) == 1
        payload = edits[0]["payload"]
        assert (payload["path"], payload["old"], payload["new"]) == ("words.txt", "alpha", "omega")
        assert payload["replacements"] == 4
        # One undo step brings every match back (in the buffer; the file keeps the edit).
        await pilot.press("escape")
        assert editor.has_focus
        await pilot.press("ctrl+z")
        assert editor.text == "alpha beta alpha\ngamma alpha\n\nalpha end\n"
        await wait_for(pilot, lambda: pane.is_dirty("words.txt"))
        # Enter in the replace box replaces the selected match only and moves to the next.
        await pilot.press("ctrl+r")
        assert replace_bar.has_focus  # the find box still holds "alpha"
        await wait_for(pilot, lambda: find_count(app) == "1 of 4")
        await pilot.press("enter")
        assert editor.text.startswith("omega beta alpha\n")
        await wait_for(pilot, lambda: find_count(app) == "1 of 3")
        assert editor.selection.start == (0, 11)
    assert len([e for e in recorded(session.trajectory_path) if e["kind"] == "file.edit"]) == 1


async def test_esc_after_find_puts_the_view_back_sideways(
    app: RepoSimApp, session: Session
) -> None:
    lines = [f"row {i}" for i in range(60)]
    lines[10] = " " * 200 + "target far right"
    lines[40] = "a target near the left edge"
    await session.write("wide.txt", "\n".join(lines) + "\n")
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        editor = await open_editor(pane, "wide.txt")
        await pilot.press("ctrl+f", *"target")
        await wait_for(pilot, lambda: editor.selection.start == (10, 200))
        await pilot.pause()
        assert editor.scroll_x > 100  # the first match needed the view to move sideways
        await pilot.press("enter")
        await wait_for(pilot, lambda: editor.selection.start == (40, 2))
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert editor.has_focus
        assert editor.scroll_x == 0  # the match is visible from where the view was
        assert editor.selected_text == "target"


async def test_palette_has_the_editor_commands(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("pkg/core.py")
        titles = [action.title for action in app.palette_actions()]
        for title in (
            "Find",
            "Replace",
            "Go to line",
            "Close tab",
            "Toggle line comment",
            "New file…",
            "New folder…",
            "Rename file or folder…",
            "Delete file or folder…",
        ):
            assert title in titles, title
        await pilot.press("f2", *"go to line")
        await wait_for(pilot, lambda: palette_highlights(app, "go to line"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.query_one("#goto-bar", Input).has_focus)
        await pilot.press("7", "enter")
        editor = pane.current_editor
        assert editor is not None
        await wait_for(pilot, lambda: editor.cursor_location == (6, 0))
        await pilot.press("f2", *"close tab")
        await wait_for(pilot, lambda: palette_highlights(app, "close tab"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.current_path is None)
        await pilot.press("f2", *"new folder")
        await wait_for(pilot, lambda: palette_highlights(app, "new folder"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        await pilot.press("escape")


async def open_prompt(pilot: Pilot[None], app: RepoSimApp, key: str) -> Input:
    """Press `key` in the tree and wait until its prompt's line has the keyboard: keys typed
    before that went to the tree (on a loaded machine the new folder's name never arrived)."""
    await pilot.press(key)

    def ready() -> bool:
        screen = app.screen
        return isinstance(screen, PromptScreen) and screen.query_one("#prompt-input").has_focus

    await wait_for(pilot, ready)
    return app.screen.query_one("#prompt-input", Input)


async def cursor_on(pilot: Pilot[None], app: RepoSimApp, tree: FileTree, path: str) -> None:
    """Focus the tree with its cursor on `path`, once the app is quiet and what it had queued
    has run, and again until that holds after a drain. Opening a new file queues the editor's
    focus and the tree's reveal of it (a cursor move); on a loaded machine both ran after the
    tree was seen focused on `path`, and "N" went into the editor (seen with a log of focus
    changes under 8 busy loops)."""
    await wait_quiet(pilot, app)
    deadline = time.monotonic() + WAIT
    while True:
        await drained(pilot, app, tree)
        node = tree.nodes_by_path.get(path)  # a reload makes new nodes
        # app.focused is what keys go to (has_focus follows it one message later)
        if app.focused is tree and node is not None and tree.cursor_node is node:
            return
        assert time.monotonic() < deadline, f"the tree's cursor did not stay on {path}"
        if node is not None and tree.cursor_node is not node:
            tree.move_cursor(node)
        if app.focused is not tree:
            tree.focus()


async def tree_ready(pilot: Pilot[None], tree: FileTree, *paths: str) -> None:
    await wait_for(pilot, lambda: all(path in tree.nodes_by_path for path in paths))


def recorded_kinds(session: Session, *kinds: str) -> list[tuple[str, str, str]]:
    return [
        (e["kind"], e["actor"], e["payload"]["path"])
        for e in recorded(session.trajectory_path)
        if e["kind"] in kinds
    ]


async def test_tree_new_file_and_folder_are_recorded(app: RepoSimApp, session: Session) -> None:
    root = Path(session.workspace_path)
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(FileTree)
        await tree_ready(pilot, tree, "pkg", "notes.md")
        await cursor_on(pilot, app, tree, "pkg")
        await open_prompt(pilot, app, "n")
        await pilot.press(*"util.py", "enter")
        pane = app.query_one(EditorPane)
        await wait_for(pilot, lambda: pane.current_path == "pkg/util.py")  # and it is open
        assert (root / "pkg" / "util.py").read_text() == ""
        await tree_ready(pilot, tree, "pkg/util.py")
        # A new folder, in the folder of the file under the cursor; Esc cancels a prompt.
        await cursor_on(pilot, app, tree, "notes.md")
        await open_prompt(pilot, app, "N")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PromptScreen))
        await open_prompt(pilot, app, "N")
        await pilot.press(*"docs", "enter")
        await wait_for(pilot, lambda: (root / "docs").is_dir())
        await tree_ready(pilot, tree, "docs", "docs/.gitkeep")
        # An existing name is one clear sentence, nothing on disk changes.
        await cursor_on(pilot, app, tree, "notes.md")
        await open_prompt(pilot, app, "n")
        await pilot.press(*"notes.md", "enter")
        await wait_for(pilot, lambda: any("already exists" in n for n in notices(app)))
    assert recorded_kinds(session, "file.create") == [
        ("file.create", "human", "pkg/util.py"),
        ("file.create", "human", "docs/.gitkeep"),
    ]


async def test_tree_rename_follows_open_tabs_and_delete_asks(
    app: RepoSimApp, session: Session
) -> None:
    root = Path(session.workspace_path)
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(FileTree)
        pane = app.query_one(EditorPane)
        await tree_ready(pilot, tree, "notes.md", "pkg")
        await pane.open_file("notes.md")
        await pilot.press("x")  # an unsaved edit travels with the tab
        await cursor_on(pilot, app, tree, "notes.md")
        prompt = await open_prompt(pilot, app, "r")
        assert prompt.value == "notes.md" and prompt.selected_text == "notes"
        await pilot.press(*"readme", "enter")
        await wait_for(pilot, lambda: (root / "readme.md").exists())
        assert not (root / "notes.md").exists()
        await wait_for(pilot, lambda: pane.open_paths == ["readme.md"])
        assert pane.is_dirty("readme.md")
        await tree_ready(pilot, tree, "readme.md")
        # Delete asks; Cancel (the default, Esc) keeps the file.
        await cursor_on(pilot, app, tree, "pkg")
        await pilot.press("delete")
        assert isinstance(app.screen, ChoiceScreen)
        assert "the folder pkg and everything in it" in str(
            app.screen.query_one("#question", Label).render()
        )
        await pilot.press("escape")
        assert (root / "pkg" / "core.py").exists()
        await pilot.press("delete")
        await pilot.click("#delete")
        await wait_for(pilot, lambda: not (root / "pkg").exists())
        await wait_for(pilot, lambda: "pkg" not in tree.nodes_by_path)
    assert recorded_kinds(session, "file.rename", "file.delete") == [
        ("file.rename", "human", "notes.md"),
        ("file.delete", "human", "pkg"),
    ]


async def test_tree_right_expands_left_collapses(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(FileTree)
        await tree_ready(pilot, tree, "pkg")
        tree.focus()
        pkg = tree.nodes_by_path["pkg"]
        tree.move_cursor(pkg)
        await pilot.press("right")
        await tree_ready(pilot, tree, "pkg/core.py")
        assert pkg.is_expanded
        await pilot.press("right")  # on an open folder: its first entry
        assert tree.cursor_node is pkg.children[0]
        await pilot.press("left")  # on a file: up to its folder
        assert tree.cursor_node is pkg and pkg.is_expanded
        await pilot.press("left")
        assert not pkg.is_expanded and tree.cursor_node is pkg


async def test_tree_long_names_end_in_an_ellipsis(app: RepoSimApp, session: Session) -> None:
    long_name = "a_really_long_module_name_that_cannot_fit_in_the_sidebar_at_all.py"
    await session.create(f"pkg/{long_name}", "")
    async with app.run_test(size=(100, 30)) as pilot:
        tree = app.query_one(FileTree)
        await tree_ready(pilot, tree, "pkg")
        tree.nodes_by_path["pkg"].expand()
        await tree_ready(pilot, tree, f"pkg/{long_name}")
        await pilot.pause()
        node = tree.nodes_by_path[f"pkg/{long_name}"]
        rows = [strip.text for strip in tree.render_lines(tree.region.reset_offset)]
        row = next(r for r in rows if "a_really" in r)
        assert row.rstrip().endswith("… A"), row  # cut with an ellipsis; the "added" mark stays
        assert len(row.rstrip()) <= tree.scrollable_content_region.width
        assert tree.virtual_size.width <= tree.scrollable_content_region.width  # no sideways
        # Wider: more of the name, still no scrolling.
        app.query_one("#sidebar").styles.width = 85

        def shown() -> list[str]:
            return [strip.text for strip in tree.render_lines(tree.region.reset_offset)]

        # Laid out again at the new width: the whole name fits (what is asserted).
        await wait_for(pilot, lambda: any(long_name in r for r in shown()))
        assert node.data is not None


async def test_changes_list_opens_at_the_change_and_offers_a_diff_view(
    app: RepoSimApp, session: Session
) -> None:
    deep = "src/very/deeply/nested/package/directory/with/a_module_name_that_is_long.c"
    await session.create(deep, "int x;\n")
    core = (Path(session.workspace_path) / "pkg/core.py").read_text()
    await session.write("pkg/core.py", core.replace("    return a + b", "    return a - b"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("f7")
        changes = app.query_one(ChangesView)
        await wait_for(pilot, lambda: len(changes.changes) == 2)
        options = app.query_one("#changes-files", OptionList)
        await wait_for(pilot, lambda: options.option_count == 2)

        def prompts_now() -> list[str]:
            return [str(options.get_option_at_index(i).prompt) for i in range(2)]

        # The rows were cut to the list's laid-out width (they are again when it changes).
        await wait_for(
            pilot,
            lambda: (
                options.scrollable_content_region.width > 0
                and changes._row_width == options.scrollable_content_region.width
            ),
        )
        # Every row is one line: the long path lost its middle, not its file name.
        prompts = prompts_now()
        long_row = next(p for p in prompts if p.startswith("A "))
        assert "…" in long_row and long_row.endswith("_long.c")
        assert len(long_row) <= options.scrollable_content_region.width
        assert options.virtual_size.height == 2
        # Enter opens the file at its first change (line 8), not at line 1.
        options.focus()
        options.highlighted = prompts.index(next(p for p in prompts if "core.py" in p))
        await pilot.press("enter")
        pane = app.query_one(EditorPane)
        await wait_for(pilot, lambda: pane.current_path == "pkg/core.py")
        editor = pane.current_editor
        assert editor is not None
        await wait_for(pilot, lambda: editor.cursor_location[0] == 7)
        # d: the diff, side by side, read-only; removed and added lines paired.
        options.focus()
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        rows = side_by_side(screen.diff)
        assert DiffRow("change", 8, "    return a + b", 8, "    return a - b") in rows
        await pilot.press("u")
        body = str(screen.query_one("#diff-body", Static).render())
        assert "- " + "    return a + b" in body and "+ " + "    return a - b" in body
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, DiffScreen))


async def test_palette_diff_of_the_open_file(app: RepoSimApp, session: Session) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("pkg/core.py")
        await pane.show_diff()
        assert not isinstance(app.screen, DiffScreen)  # nothing changed yet: a notice
        await pilot.press("x", "ctrl+s")
        await pilot.press("f2", *"diff of this file")
        await wait_for(pilot, lambda: palette_highlights(app, "diff of this file"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
        assert isinstance(app.screen, DiffScreen)
        assert DiffRow("change", 1, '"""Core helpers."""', 1, 'x"""Core helpers."""') in (
            side_by_side(app.screen.diff)
        )


def test_toggle_line_comments_keeps_blank_lines_and_indent() -> None:
    lines = ["    if x:", "", "        y()"]
    commented, _, _ = toggle_line_comments(lines, "#")
    assert commented == ["    # if x:", "", "    #     y()"]
    assert toggle_line_comments(commented, "#")[0] == lines
    wrapped, _, _ = toggle_line_comments(["a", "  b"], "/*", "*/")
    assert wrapped == ["/* a */", "/*   b */"]
    assert toggle_line_comments(wrapped, "/*", "*/")[0] == ["a", "  b"]


def test_short_path_keeps_the_file_name() -> None:
    assert short_path("a/b.py", 20) == "a/b.py"
    assert short_path("src/one/two/three/name.py", 20) == "src/…/three/name.py"
    assert short_path("src/one/two/three/name.py", 12) == "…/name.py"
    assert short_path("averyveryverylongname.py", 10) == "…ngname.py"


def test_first_changed_line_of_a_diff() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -3,4 +3,5 @@ def f():\n a\n b\n+c\n d\n"
    assert first_changed_line(diff) == 5
    assert first_changed_line("--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+new\n") == 1
    assert first_changed_line("") is None


def burst(app: RepoSimApp, *keys: tuple[str, str | None]) -> None:
    """Keys as a terminal delivers a fast burst: all in the app's queue before any is handled
    (Pilot's press waits for the app to go idle after each key, which hides the race)."""
    driver = app._driver
    assert driver is not None
    for key, character in keys:
        event = events.Key(key, character)
        event.set_sender(app)
        driver.send_message(event)


async def test_ctrl_s_right_after_enter_saves_the_newline(
    app: RepoSimApp, session: Session
) -> None:
    on_disk = Path(session.workspace_path) / "notes.md"
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        editor = await open_editor(pane, "notes.md")
        await pilot.press("ctrl+end", "x")
        burst(app, ("enter", "\r"), ("ctrl+s", None))
        await wait_for(pilot, lambda: on_disk.read_text().endswith("x\n"))
        assert editor.text == on_disk.read_text()
        await wait_for(pilot, lambda: not pane.is_dirty("notes.md"))


async def test_ctrl_s_on_an_unchanged_file_records_nothing(
    app: RepoSimApp, session: Session
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("notes.md")
        await pilot.press("ctrl+s")
        await pilot.press("x", "backspace", "ctrl+s")  # edited and back: the same text
        await pilot.press("y", "ctrl+s")
        await wait_for(pilot, lambda: not pane.is_dirty("notes.md"))
    writes = recorded_kinds(session, "file.write")
    assert writes == [("file.write", "human", "notes.md")]


async def test_comment_and_replace_all_are_their_own_undo_steps(app: RepoSimApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        editor = await open_editor(pane, "notes.md")
        editor.path = "notes.py"  # comment as Python
        await pilot.press("ctrl+end", *"abc")  # typing, batched by TextArea's history
        await pilot.press("ctrl+underscore")
        assert editor.document[-1] == "# abc"
        await pilot.press("ctrl+z")  # undoes the comment only, not the typing before it
        assert editor.document[-1] == "abc"
        await pilot.press(*"de", "ctrl+r", *"abcde", "tab", "X", "alt+enter")
        assert editor.document[-1] == "X"
        await pilot.press("escape", "ctrl+z")
        assert editor.document[-1] == "abcde"


async def test_ctrl_pgdn_switches_tabs_in_a_file_with_long_lines(
    app: RepoSimApp, session: Session
) -> None:
    await session.write("wide.py", "x = 1  # " + "long " * 80 + "\n" * 3)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        await pane.open_file("pkg/core.py")
        editor = await open_editor(pane, "wide.py")
        await wait_for(pilot, lambda: editor.max_scroll_x > 0)
        await pilot.press("ctrl+pagedown")
        await wait_for(pilot, lambda: pane.current_path == "pkg/core.py")
        assert editor.scroll_x == 0  # it switched tabs, not scrolled a page sideways
        await pilot.press("ctrl+pageup")
        await wait_for(pilot, lambda: pane.current_path == "wide.py")
        assert editor.scroll_x == 0


async def test_a_tabs_focus_notice_that_arrives_after_the_next_switch_does_not_take_its_tab_back(
    app: RepoSimApp,
) -> None:
    """Each tab's notice that it took the focus travels through that tab's own message queue, so
    after Ctrl+PgDn, Ctrl+PgUp the first tab's notice can reach the tabs last (CI, under load). It
    must not bring its tab back while the keyboard is in the other one."""
    from textual.widgets import TabbedContent, TabPane

    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(EditorPane)
        core = await open_editor(pane, "pkg/core.py")
        notes = await open_editor(pane, "notes.md")
        await wait_for(pilot, lambda: app.focused is notes and pane.current_path == "notes.md")
        tabs = pane.query_one(TabbedContent)
        tabs.post_message(TabPane.Focused(core.query_ancestor(TabPane)))  # the late notice
        handled = asyncio.Event()
        tabs.call_later(handled.set)  # the tabs handle their messages in order
        await wait_for(pilot, handled.is_set)
        assert pane.current_path == "notes.md"  # the tab shown is the one typed into
        assert app.focused is notes
