"""The editor pane driven with Pilot on a real local session."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Button, Input, Tab

from simulator.session import Session
from tests.ui.helpers import notices
from widgets.code_editor import CodeEditor
from widgets.editor_pane import ChoiceScreen

from .conftest import editing, open_editor, wait_for


def workspace(session: Session) -> Path:
    return Path(session.workspace_path)


def highlights_of(editor: CodeEditor, row: int) -> set[str]:
    return {name for _, _, name in editor._highlights[row]}


async def test_python_file_opens_with_tree_sitter_highlighting(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):
        await pane.open_file("pkg/core.py")
        await pilot.pause()
        editor = pane.current_editor
        assert editor is not None and pane.current_path == "pkg/core.py"
        await wait_for(pilot, lambda: app.opened == ["pkg/core.py"])
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        assert editor.highlighter == "tree-sitter"
        assert "string.documentation" in highlights_of(editor, 0) or "string" in highlights_of(
            editor, 0
        )
        assert "include" in highlights_of(editor, 2) or "keyword" in highlights_of(editor, 2)
        assert "comment" in highlights_of(editor, 6)
        # The highlight becomes a style on screen: the comment's colour is in the rendered line.
        theme = editor._theme
        assert theme is not None
        comment_style = theme.syntax_styles["comment"]
        strip = editor.render_line(6)
        assert any(
            segment.style is not None and segment.style.color == comment_style.color
            for segment in strip
        )


async def test_c_file_uses_the_c_grammar(session: Session) -> None:
    async with editing(session) as (_, pilot, pane):
        editor = await open_editor(pane, "src/main.c")
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        assert editor.highlighter == "tree-sitter" and editor.language == "c"
        assert "keyword" in highlights_of(editor, 0)  # #include
        assert "comment" in highlights_of(editor, 2)
        assert {"type", "function"} <= highlights_of(editor, 3)  # int main(void)
        assert "string" in highlights_of(editor, 4)
        assert "number" in highlights_of(editor, 4)


async def test_other_languages_use_pygments_or_plain_text(session: Session) -> None:
    async with editing(session) as (_, pilot, pane):
        await pane.open_file("Makefile")
        editor = pane.current_editor
        assert editor is not None and editor.highlighter == "pygments"
        await pilot.pause()
        assert highlights_of(editor, 0)
        (workspace(session) / "data.unknownext").write_text("just words\n")
        await pane.open_file("data.unknownext")
        editor = pane.current_editor
        assert editor is not None and editor.highlighter == "plain"


async def test_edit_undo_redo_and_dirty_marker(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):
        editor = await open_editor(pane, "pkg/core.py", line=6)
        assert editor.cursor_location == (5, 0)
        await pilot.press("end", *" # edited")
        assert editor.document[5] == "def add(a, b): # edited"
        assert pane.is_dirty("pkg/core.py")
        tab_label = str(app.query(Tab).last().label)
        assert tab_label.startswith("●")
        editor.undo()
        await pilot.pause()
        assert editor.document[5] == "def add(a, b):"
        assert not pane.is_dirty("pkg/core.py")
        editor.redo()
        await pilot.pause()
        assert editor.document[5] == "def add(a, b): # edited"
        assert pane.is_dirty("pkg/core.py")


async def test_typing_keeps_highlights_right_before_and_after_the_reparse(
    session: Session,
) -> None:
    async with editing(session) as (_, pilot, pane):
        editor = await open_editor(pane, "pkg/core.py", line=8)
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        await pilot.press("enter", *"# new comment")
        # The line moved down with the inserted one; the class keyword row too.
        assert "comment" in highlights_of(editor, 6)
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        assert "comment" in highlights_of(editor, 8)
        class_row = editor.document.lines.index("class Greeter:")
        assert "keyword" in highlights_of(editor, class_row)


async def test_save_goes_through_the_session_and_is_recorded(
    session: Session, tmp_path: Path
) -> None:
    async with editing(session) as (app, pilot, pane):
        await pane.open_file("pkg/core.py", line=1)
        await pilot.press(*"# header", "enter")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.saved == ["pkg/core.py"])
        assert not pane.is_dirty("pkg/core.py")
    text = (workspace(session) / "pkg/core.py").read_text()
    assert text.startswith("# header\n")
    events = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    writes = [e for e in events if e.get("kind") == "file.write"]
    assert writes and writes[-1]["payload"]["path"] == "pkg/core.py"
    assert "+# header" in writes[-1]["payload"]["diff"]


async def test_failed_save_is_a_clear_message(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):
        await pane.open_file("notes.md")
        await pilot.press("x")
        target = workspace(session) / "notes.md"
        target.unlink()
        target.mkdir()  # now a directory: the write must fail
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("notes.md" in m for m in notices(app)))
        assert pane.is_dirty("notes.md")


async def test_find_and_go_to_line(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):
        editor = await open_editor(pane, "pkg/core.py")
        await pilot.press("ctrl+f")
        bar = app.query_one("#find-bar", Input)
        assert bar.has_focus
        await pilot.press(*"hello")
        assert editor.selection.start == (11, 8)
        assert editor.selected_text == "hello"
        await pilot.press("escape")
        assert editor.has_focus
        await pilot.press("ctrl+g")
        await pilot.press(*"8", "enter")
        assert editor.cursor_location == (7, 0)
        pane.go_to_line(10_000)
        assert editor.cursor_location[0] == editor.document.line_count - 1


async def test_external_change_reloads_a_clean_buffer(session: Session) -> None:
    async with editing(session) as (_, pilot, pane):
        await pane.open_file("notes.md")
        await session.write("notes.md", "# Changed by the agent\n")
        await pane.on_external_change("notes.md")
        await pilot.pause()
        editor = pane.current_editor
        assert editor is not None
        assert editor.text == "# Changed by the agent\n"
        assert not pane.is_dirty("notes.md")


async def test_external_change_asks_before_replacing_a_dirty_buffer(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):

        async def changed_on_disk(text: str, answer: str) -> None:
            """notes.md changes on disk to `text`: the pane asks, and `answer` is clicked."""
            await session.write("notes.md", text)
            await pane.on_external_change("notes.md")
            await pilot.pause()
            assert isinstance(app.screen, ChoiceScreen)
            await pilot.click(answer)
            await pilot.pause()

        await pane.open_file("notes.md")
        await pilot.press(*"mine ")
        await changed_on_disk("theirs\n", "#keep")
        editor = pane.current_editor
        assert editor is not None and editor.text.startswith("mine ")
        # A second change: this time take the disk's version.
        await changed_on_disk("theirs again\n", "#reload")
        assert editor.text == "theirs again\n"
        assert not pane.is_dirty("notes.md")


async def test_binary_file_is_a_clear_message_not_a_tab(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):
        await pane.open_file("logo.bin")
        await wait_for(pilot, lambda: any("logo.bin is not UTF-8 text" in m for m in notices(app)))
        assert pane.current_path is None
        await pane.open_file("does/not/exist.py")
        await wait_for(pilot, lambda: len(notices(app)) == 2)
        assert pane.current_path is None


async def test_close_tab_asks_when_dirty(session: Session) -> None:
    async with editing(session) as (app, pilot, pane):
        await pane.open_file("notes.md")
        await pane.open_file("pkg/core.py")
        assert pane.open_paths == ["notes.md", "pkg/core.py"]
        await pilot.press("ctrl+w")
        await pilot.pause()
        assert pane.open_paths == ["notes.md"]
        await pilot.press("x", "ctrl+w")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceScreen)
        assert app.screen.query_one("#discard", Button)
        await pilot.click("#discard")
        await pilot.pause()
        assert pane.open_paths == []


async def test_a_20k_line_file_opens_and_edits(session: Session) -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}  # n\n\n" for i in range(7000))
    (workspace(session) / "big.py").write_text(body)
    async with editing(session, (120, 40)) as (_, pilot, pane):
        await pane.open_file("big.py", line=15_000)
        editor = pane.current_editor
        assert editor is not None and editor.document.line_count > 20_000
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        row = editor.cursor_location[0]
        await pilot.press("end", *"  # typed")
        assert editor.document[row].endswith("# typed")
        # Until the reparse the neighbours keep their colours; after it the new comment has one.
        assert highlights_of(editor, row - 1) and highlights_of(editor, row + 1)
        await wait_for(pilot, lambda: not editor.document.needs_parse)  # type: ignore[attr-defined]
        assert "comment" in highlights_of(editor, row)


async def test_find_next_does_not_scroll_sideways_when_the_match_is_in_view(
    session: Session,
) -> None:
    lines = [f"value_{i} = compute(alpha, beta, gamma, delta)  # line {i}" for i in range(300)]
    lines[200] = "value_200 = compute(alpha, beta, gamma, delta)  # the NEEDLE is here"
    lines[3] = "WIDE = " + "x" * 300  # the file is wider than the editor: it can scroll sideways
    await session.write("long.py", "\n".join(lines) + "\n")
    async with editing(session) as (_, pilot, pane):
        await pane.open_file("long.py")
        await pilot.pause()
        editor = pane.current_editor
        assert editor is not None
        await pilot.press("ctrl+f", *"NEEDLE", "enter")
        await wait_for(pilot, lambda: editor.selection.end[0] == 200)
        await pilot.pause()
        assert editor.scroll_x == 0  # every column of the match is in view
        assert editor.scroll_y > 150  # the match's line was scrolled to
        top = int(editor.scroll_y)
        height = editor.scrollable_content_region.height
        assert top <= 200 < top + height
