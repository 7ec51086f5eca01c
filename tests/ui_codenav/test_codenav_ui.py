"""F12, Shift+F12 and the outline in the editor, over a real local session."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import OptionList

from simulator.events import Event, Kind
from simulator.session import Session
from tests.ui.helpers import notices
from tests.ui_editor.conftest import open_editor, wait_for
from widgets.codenav import NavListScreen
from widgets.editor_pane import EditorPane

FILE_KINDS = {Kind.FILE_WRITE, Kind.FILE_EDIT, Kind.FILE_CREATE, Kind.FILE_DELETE}


class NavApp(App[None]):
    """The editor alone; session file events reach it as the real app forwards them."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.indexed: list[int] = []
        self.reindexed: list[str] = []

    def compose(self) -> ComposeResult:
        yield EditorPane(self.session, id="editor")

    def on_mount(self) -> None:
        self.session.subscribe(self._event)

    def _event(self, event: Event) -> None:
        if event.kind in FILE_KINDS and event.payload.get("path"):
            pane = self.query_one(EditorPane)
            self.run_worker(pane.on_external_change(str(event.payload["path"])))

    def on_editor_pane_index_ready(self, message: EditorPane.IndexReady) -> None:
        self.indexed.append(message.files)

    def on_editor_pane_index_changed(self, message: EditorPane.IndexChanged) -> None:
        self.reindexed.extend(message.paths)


@asynccontextmanager
async def indexed_app(
    session: Session, size: tuple[int, int] = (100, 30)
) -> AsyncIterator[tuple[NavApp, Pilot[None], EditorPane]]:
    """The editor app running on `session`, its pilot, and its pane once the first index is
    ready."""
    app = NavApp(session)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: bool(app.indexed))
        yield app, pilot, app.query_one(EditorPane)


def cursor(pane: EditorPane) -> tuple[str | None, tuple[int, int]]:
    editor = pane.current_editor
    assert editor is not None
    return pane.current_path, editor.cursor_location


def nav_screen(app: App[None]) -> NavListScreen | None:
    screen = app.screen
    return screen if isinstance(screen, NavListScreen) else None


async def shown_screen(pilot: Pilot[None], app: App[None]) -> NavListScreen:
    """The navigation list, once it is on screen."""
    await wait_for(pilot, lambda: nav_screen(app) is not None)
    screen = nav_screen(app)
    assert screen is not None
    return screen


def shown_labels(screen: NavListScreen) -> list[str]:
    return [entry.label.plain.strip() for entry in screen.shown]


async def test_f12_on_an_imported_call_opens_the_definition_in_another_file(
    session: Session,
) -> None:
    app = NavApp(session)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(EditorPane)
        await wait_for(pilot, lambda: app.indexed == [6])
        editor = await open_editor(pane, "pkg/a.py")
        editor.move_cursor((4, 13))  # inside `helper` in `total = helper(value)`
        await pilot.press("f12")
        await wait_for(pilot, lambda: pane.current_path == "pkg/b.py")
        assert cursor(pane) == ("pkg/b.py", (3, 4))  # `def helper(x):`, on the name
        assert pane.open_paths == ["pkg/a.py", "pkg/b.py"]

        # C: the call of square() in main.c goes to its definition in util.c.
        editor = await open_editor(pane, "src/main.c")
        editor.move_cursor((3, 12))
        await pilot.press("f12")
        await wait_for(pilot, lambda: pane.current_path == "src/util.c")
        assert cursor(pane)[1][0] == 2

        # Nothing to find: a clear notification, the cursor stays.
        editor = await open_editor(pane, "pkg/a.py")
        editor.move_cursor((5, 14))  # the literal 1 in `return total + 1`
        await pilot.press("f12")
        await wait_for(pilot, lambda: bool(notices(app)))
        messages = notices(app)
        assert any("No definition" in m for m in messages)
        assert cursor(pane) == ("pkg/a.py", (5, 14))


async def test_shift_f12_lists_callers_and_enter_opens_the_call(session: Session) -> None:
    async with indexed_app(session) as (app, pilot, pane):
        editor = await open_editor(pane, "pkg/b.py")
        editor.move_cursor((4, 8))  # inside helper's body
        await pilot.press("shift+f12")
        screen = await shown_screen(pilot, app)
        labels = shown_labels(screen)
        assert labels[0] == "Callers (2)"
        assert labels[1] == "run  pkg/a.py:5  helper"
        assert labels[2] == "Box.size  pkg/b.py:10  helper"
        assert labels[3] == "Callees (0)"
        # Filtering keeps the matching caller; Enter opens the call site in a.py.
        await pilot.press(*"run")
        await wait_for(pilot, lambda: len(screen.shown) == 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.current_path == "pkg/a.py")
        assert cursor(pane) == ("pkg/a.py", (4, 12))


async def test_outline_lists_symbols_jumps_and_follows_session_writes(session: Session) -> None:
    async with indexed_app(session) as (app, pilot, pane):
        await pane.open_file("pkg/b.py")
        await pilot.press("ctrl+shift+o")
        screen = await shown_screen(pilot, app)
        assert [label.split()[0] for label in shown_labels(screen)] == ["helper", "Box", "size"]
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: nav_screen(app) is None)
        assert cursor(pane) == ("pkg/b.py", (8, 8))  # on `size` in `    def size(self):`

        # The agent (or a command) rewrites the file through the session.
        await session.write(
            "pkg/b.py", "def helper(x):\n    return x\n\n\ndef renamed_tool():\n    pass\n"
        )
        await wait_for(pilot, lambda: "renamed_tool" in getattr(pane.current_editor, "text", ""))

        async def outline_names() -> list[str]:
            await pilot.press("f8")
            shown = await shown_screen(pilot, app)
            names = [label.split()[0] for label in shown_labels(shown)]
            await pilot.press("escape")
            await wait_for(pilot, lambda: nav_screen(app) is None)
            return names

        assert await outline_names() == ["helper", "renamed_tool"]
        # Unsaved edits are indexed when the outline is asked for.
        editor = pane.current_editor
        assert editor is not None
        editor.move_cursor((6, 0))
        editor.insert("\n\nclass Fresh:\n    pass\n")
        assert await outline_names() == ["helper", "renamed_tool", "Fresh"]


async def test_indexing_state_hides_and_a_filter_matching_nothing_says_so(session: Session) -> None:
    async with indexed_app(session) as (app, pilot, pane):
        assert not pane.query_one("#index-state").display
        await pane.open_file("pkg/a.py")
        await pilot.press("f8")
        screen = await shown_screen(pilot, app)
        await pilot.press(*"zzz")
        await wait_for(pilot, lambda: screen.shown == [])
        options = screen.query_one(OptionList)
        assert options.option_count == 1 and options.get_option_at_index(0).disabled


async def test_a_command_that_adds_a_caller_reaches_the_call_list(session: Session) -> None:
    async with indexed_app(session) as (app, pilot, pane):
        await pane.open_file("pkg/b.py")
        result = await session.exec(
            "printf 'from pkg.b import helper\\n\\n\\ndef extra():\\n    helper(9)\\n' > pkg/c.py"
        )
        assert result.exit_code == 0

        async def callers() -> list[str]:
            editor = pane.current_editor
            assert editor is not None
            editor.move_cursor((3, 5))  # on `helper` in `def helper(x):`
            await pilot.press("shift+f12")
            shown = await shown_screen(pilot, app)
            labels = shown_labels(shown)
            await pilot.press("escape")
            await wait_for(pilot, lambda: nav_screen(app) is None)
            return labels

        await wait_for(pilot, lambda: app.reindexed == ["pkg/c.py"])
        labels = await callers()
        assert labels[0] == "Callers (3)"
        assert "extra  pkg/c.py:5  helper" in labels


async def test_closing_the_pane_gives_its_frozen_index_back_to_the_collector(
    session: Session,
) -> None:
    """The build freezes what survives it (so full collections never walk the index); when
    the pane goes away, the app and its index must become collectable again."""
    app = NavApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.query_one(EditorPane)
        await wait_for(pilot, lambda: pane.code_index.ready)
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    assert not pane.code_index.ready


# A C definition whose name sits far right of its line, in a file wider than the view.
WIDE_C = (
    "#include <stdio.h>\n\n/* " + "a long comment " * 10 + "*/\n"
    "static unsigned long long compute_total_value(int x)\n{\n    return x;\n}\n\n"
    "int main(void)\n{\n    return (int)compute_total_value(4);\n}\n"
)


async def test_f12_shows_the_start_of_the_definition_line(session: Session) -> None:
    await session.write("src/wide.c", WIDE_C)
    async with indexed_app(session, size=(40, 20)) as (_, pilot, pane):
        editor = await open_editor(pane, "src/wide.c")
        editor.move_cursor((10, 20))  # on the call of compute_total_value
        await pilot.press("f12")
        await wait_for(pilot, lambda: editor.cursor_location == (3, 26))
        await pilot.pause()
        # The name fits in the view with the line's start: `static` is not scrolled away.
        assert editor.scroll_x == 0
        assert (
            "static unsigned"
            in editor.render_line(editor.cursor_location[0] - int(editor.scroll_y)).text
        )


async def test_alt_left_goes_back_after_a_jump_and_alt_right_forward(session: Session) -> None:
    async with indexed_app(session) as (app, pilot, pane):
        editor = await open_editor(pane, "pkg/a.py")
        await pilot.press("alt+left")  # nothing to go back to yet: says so
        await wait_for(pilot, lambda: any("Nothing to go back to" in n for n in notices(app)))
        editor.move_cursor((4, 13))  # inside `helper` in `total = helper(value)`
        await pilot.press("f12")
        await wait_for(pilot, lambda: pane.current_path == "pkg/b.py")
        assert cursor(pane) == ("pkg/b.py", (3, 4))
        await pilot.press("alt+left")
        await wait_for(pilot, lambda: pane.current_path == "pkg/a.py")
        assert cursor(pane) == ("pkg/a.py", (4, 13))
        assert app.focused is pane.current_editor
        await pilot.press("alt+right")
        await wait_for(pilot, lambda: pane.current_path == "pkg/b.py")
        assert cursor(pane) == ("pkg/b.py", (3, 4))
        # Through the outline within one file, then back to where the outline was opened.
        await pilot.press("f8")
        await wait_for(pilot, lambda: nav_screen(app) is not None)
        await pilot.press(*"size", "enter")
        await wait_for(pilot, lambda: cursor(pane) == ("pkg/b.py", (8, 8)))
        await pilot.press("alt+left")
        await wait_for(pilot, lambda: cursor(pane) == ("pkg/b.py", (3, 4)))
        assert not pane.dirty_paths()  # the keys moved the cursor only


async def test_outline_filter_puts_the_exact_name_first(session: Session) -> None:
    await session.write(
        "pkg/many.py",
        "def resize_all():\n    pass\n\n\n"
        "class Sizer:\n    def sizes(self):\n        pass\n\n"
        "    def size(self):\n        pass\n\n\n"
        "def size_of(x):\n    return x\n",
    )
    async with indexed_app(session) as (app, pilot, pane):
        await pane.open_file("pkg/many.py")
        await pilot.press("f8")
        screen = await shown_screen(pilot, app)
        await pilot.press(*"size")
        await wait_for(pilot, lambda: len(screen.shown) == 5)
        names = [label.split()[0] for label in shown_labels(screen)]
        # The exact name, then names starting with it, then containing it (source order within).
        assert names == ["size", "Sizer", "sizes", "size_of", "resize_all"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: nav_screen(app) is None)
        assert cursor(pane) == ("pkg/many.py", (8, 8))
