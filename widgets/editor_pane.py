"""Editor tabs over the session: open, edit, save (through `session.write`), find, go to line.

Every read and save goes through the session gateway so that the human's edits land in the
trajectory like an agent's. Files changed behind the editor's back (an agent edit, a command in
the terminal) reload a clean buffer and ask before replacing a dirty one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from textual import on
from textual._context import active_message_pump
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static

from simulator.event_kinds import Kind
from simulator.session_errors import SessionError
from simulator.workspace import BackendError
from widgets.keybindings import default_bindings
from widgets.palette import PaletteAction

if TYPE_CHECKING:
    # The code index (tree-sitter, pathspec) loads after the first frame, the code editor
    # (Textual's TextArea) and the tabs when the first file opens, the code navigation when
    # first used (issue 29).
    from textual.widgets import TabbedContent, TextArea
    from textual.widgets.text_area import Selection

    from simulator.analysis.session_index import WorkspaceIndex
    from simulator.events import Event
    from simulator.session import Session
    from widgets.code_editor import CodeEditor
    from widgets.codenav import NavTarget


def normalize(path: str) -> str:
    """Session.normalize. simulator.session is not imported with this module: the UI's first
    frame, which imports it, comes before the session opens (issue 29); an editor has a session,
    so it is loaded whenever this runs."""
    from simulator.session import Session

    return Session.normalize(path)


@dataclass
class Buffer:
    """One open file: its editor, its tab and the text last read from or saved to disk."""

    path: str
    pane_id: str
    editor: CodeEditor
    saved_text: str
    dirty: bool = False


class ChoiceScreen(ModalScreen[str]):
    """A question with a few buttons; dismisses with the id of the button pressed."""

    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical {
        width: 64; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    ChoiceScreen Label { width: 100%; margin-bottom: 1; }
    ChoiceScreen Horizontal { height: auto; align-horizontal: right; }
    ChoiceScreen Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("editor_choice"))

    def __init__(self, question: str, choices: list[tuple[str, str]], default: str) -> None:
        super().__init__()
        self.question = question
        self.choices = choices
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, id="question")
            with Horizontal():
                for choice_id, label in self.choices:
                    yield Button(label, id=choice_id)

    @on(Button.Pressed)
    def _chosen(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id or self.default)

    def action_dismiss_default(self) -> None:
        self.dismiss(self.default)


class FindInput(Input):
    """The find box: Tab goes to the replace box when it is shown (as in VS Code); otherwise
    Tab moves on to the next pane, as everywhere."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("editor_find"))

    def action_to_replace(self) -> None:
        if self.screen.query_one("#find-panel").has_class("-replace"):
            self.screen.query_one("#replace-bar", Input).focus()
        else:
            self.app.action_focus_next()


class ReplaceInput(Input):
    """The replace box: Enter replaces the match, Alt+Enter (Ctrl+Alt+Enter in VS Code; the
    terminal sends ESC Enter) replaces them all; Shift+Tab goes back to the find box."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("editor_replace"))

    def action_to_find(self) -> None:
        self.screen.query_one("#find-bar", Input).focus()

    class ReplaceAll(Message):
        pass

    def action_replace_all(self) -> None:
        self.post_message(self.ReplaceAll())


# Actions after which any file may differ; the terminal's commands are announced by the app
# through on_workspace_changed, since the PTY does not say when a command ends.
INDEX_STALE_KINDS = frozenset({Kind.EXEC_RESULT, Kind.TEST_RESULT, Kind.RESTORE})
RESYNC_DELAY = 0.5
CATCH_UP_TIMEOUT = 2.0
"""Seconds a save waits for the editor to handle keys typed before it (it never should)."""
"""Seconds of quiet before the code index re-reads the workspace (bursts coalesce)."""


class EditorPane(Widget):
    """Tabs of CodeEditors bound to files in the session's workspace."""

    DEFAULT_CSS = """
    EditorPane { height: 1fr; }
    EditorPane > TabbedContent { height: 1fr; }
    EditorPane TabPane { padding: 0; }
    EditorPane CodeEditor { height: 1fr; border: none; padding: 0; }
    EditorPane #editor-empty {
        height: 1fr; content-align: center middle; color: $text-muted;
    }
    EditorPane .editor-bar { dock: bottom; height: 3; display: none; }
    EditorPane .editor-bar.-shown { display: block; }
    /* One row per box (not three): at 80x24 find and replace leave the editor its lines. */
    EditorPane #find-panel { height: auto; border-top: hkey $primary; background: $surface; }
    EditorPane #find-row { height: 1; }
    EditorPane #find-bar, EditorPane #replace-bar {
        width: 1fr; height: 1; border: none; padding: 0 1; background: $surface;
    }
    EditorPane #find-bar:focus, EditorPane #replace-bar:focus { background: $boost; }
    EditorPane #find-count { width: 16; height: 1; padding: 0 1; color: $text-muted; }
    EditorPane #replace-bar { display: none; }
    EditorPane #find-panel.-replace #replace-bar { display: block; }
    EditorPane #index-state {
        dock: bottom; height: 1; width: 100%; content-align: right middle;
        color: $text-muted; display: none;
    }
    EditorPane #index-state.-shown { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("editor"))

    @dataclass
    class FileOpened(Message):
        path: str

    @dataclass
    class IndexReady(Message):
        """The code index of the workspace has been built (`files` Python/C files)."""

        files: int

    @dataclass
    class IndexChanged(Message):
        """Files re-read into the code index after a command (added, changed or removed)."""

        paths: list[str]

    class _WorkspaceMayHaveChanged(Message):
        pass

    @dataclass
    class CursorMoved(Message):
        """The current tab's cursor moved (or the tab changed): "Ln 3, Col 7", or "" when no
        file is open. The app shows it in the status bar."""

        position: str

    @dataclass
    class FileSaved(Message):
        path: str

    def __init__(
        self,
        session: Session,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.session = session
        self._buffers: dict[str, Buffer] = {}
        self._by_pane: dict[str, Buffer] = {}
        self._pane_ids = itertools.count(1)
        self._asking: set[str] = set()
        self._code_index: WorkspaceIndex | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._resync_timer: Timer | None = None
        self._find_origin_x: float | None = None
        # Where code-navigation jumps left from (Alt+Left) and, after going back, where to go
        # forward to (Alt+Right): (path, (row, column)).
        self._back: list[tuple[str, tuple[int, int]]] = []
        self._forward: list[tuple[str, tuple[int, int]]] = []
        self._mounting_parts = asyncio.Lock()

    def compose(self) -> ComposeResult:
        # The first frame shows this alone: the tabs and the find and go-to bars (a dozen
        # hidden widgets, each styled before that frame) come with the first file (`_tabs`),
        # the indexing note when indexing starts (issue 29).
        yield Static("Open a file from the tree or with Ctrl+P.", id="editor-empty")

    async def _tabs(self) -> TabbedContent:
        """The tabs, mounted with the find and go-to bars the first time a file opens."""
        async with self._mounting_parts:  # two files opened at once mount them once
            if not self.query("#editor-tabs"):
                from widgets.editor_tabs import EditorTabs

                tabs = EditorTabs(id="editor-tabs")
                tabs.display = False  # until it has a tab (`_sync_empty`)
                find = Vertical(
                    Horizontal(
                        FindInput(
                            placeholder="Find (Enter: next match, Esc: close)", id="find-bar"
                        ),
                        Static("", id="find-count"),
                        id="find-row",
                    ),
                    ReplaceInput(
                        placeholder="Replace with (Enter: this match, Alt+Enter: all, Esc: close)",
                        id="replace-bar",
                    ),
                    id="find-panel",
                    classes="editor-bar",
                )
                goto = Input(
                    placeholder="Go to line", id="goto-bar", type="integer", classes="editor-bar"
                )
                # before the indexing note, as they were composed: the docked bars stack alike
                state = self.query("#index-state")
                await self.mount_all([tabs, find, goto], before=state.first() if state else None)
        return self._open_tabs()

    def _open_tabs(self) -> TabbedContent:
        """The tabs (mounted with the first file: NoMatches before). Their module loads with
        them, not before the first frame (issue 29)."""
        from textual.widgets import TabbedContent

        return self.query_one("#editor-tabs", TabbedContent)

    async def _index_state(self) -> Static:
        """The indexing note, mounted when indexing starts."""
        found = self.query("#index-state")
        if found:
            return found.first(Static)
        state = Static("indexing code…", id="index-state")
        await self.mount(state)
        return state

    @property
    def code_index(self) -> WorkspaceIndex:
        if self._code_index is None:
            from simulator.analysis.session_index import WorkspaceIndex

            self._code_index = WorkspaceIndex(self.session)
        return self._code_index

    def on_mount(self) -> None:
        self._sync_empty()
        # After the first frame: loading and building the index is not what the person sees first.
        self.call_after_refresh(
            lambda: self.run_worker(self._build_index(), group="code-index", exclusive=True)
        )
        self._unsubscribe = self.session.subscribe(self._session_event)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._code_index is not None:  # never started: nothing to close, nothing to import
            self._code_index.close()

    # -- public API ----------------------------------------------------------------------------

    @property
    def current_path(self) -> str | None:
        buffer = self._current()
        return buffer.path if buffer else None

    @property
    def current_editor(self) -> CodeEditor | None:
        buffer = self._current()
        return buffer.editor if buffer else None

    @property
    def open_paths(self) -> list[str]:
        return list(self._buffers)

    def is_dirty(self, path: str) -> bool:
        buffer = self._buffers.get(normalize(path))
        return bool(buffer and buffer.dirty)

    async def open_file(self, path: str, line: int | None = None, *, focus: bool = True) -> None:
        """Open (or switch to) a file; optionally put the cursor on a 1-based line. The file's
        editor takes the keyboard unless `focus` is False (the editor following the agent)."""
        path = normalize(path)
        buffer = self._buffers.get(path)
        if buffer is None:
            tabs = await self._tabs()
            try:
                text = await self.session.read(path)
            except (SessionError, BackendError) as error:
                self._error(error, f"{path} could not be opened", "Cannot open file")
                return
            pane_id = f"editor-tab-{next(self._pane_ids)}"
            from widgets.code_editor import CodeEditor

            editor = CodeEditor(
                text,
                path=path,
                show_line_numbers=True,
                soft_wrap=False,
                tab_behavior="indent",
                id=f"{pane_id}-editor",
            )
            buffer = Buffer(path, pane_id, editor, text)
            self._buffers[path] = buffer
            self._by_pane[pane_id] = buffer
            from textual.widgets import TabPane

            await tabs.add_pane(TabPane(self._label(buffer), editor, id=pane_id))
            tabs.active = pane_id
            self._sync_empty()
            self.post_message(self.FileOpened(path))
        else:
            self._open_tabs().active = buffer.pane_id
        if line is not None:
            self.go_to_line(line, focus=focus)
        if focus:
            buffer.editor.focus()

    def dirty_paths(self) -> list[str]:
        """The open files with unsaved edits, in tab order."""
        return [path for path, buffer in self._buffers.items() if buffer.dirty]

    async def save_all(self) -> bool:
        """Save every file with unsaved edits; False when one of them could not be saved."""
        for path in self.dirty_paths():
            await self._save(self._buffers[path])
        return not self.dirty_paths()

    async def save_current(self) -> None:
        buffer = self._current()
        if buffer is None:
            self.notify("There is no open file to save.", severity="warning")
            return
        await self._save(buffer)

    async def _save(self, buffer: Buffer) -> None:
        await _caught_up(buffer.editor)
        text = buffer.editor.text
        if text == buffer.saved_text:
            # Nothing to write: a save of an unchanged file is not an action worth recording.
            self._mark_dirty(buffer, False)
            return
        try:
            await self.session.write(buffer.path, text)
        except (SessionError, BackendError) as error:
            self._error(error, f"{buffer.path} could not be saved", "Save failed")
            return
        buffer.saved_text = text
        self._mark_dirty(buffer, buffer.editor.text != text)
        self._refresh_index(buffer.path)
        self.post_message(self.FileSaved(buffer.path))

    def _error(self, error: Exception, fallback: str, title: str) -> None:
        """An error notice titled `title`: the engine's own sentence, or `fallback` when the
        error has none."""
        self.notify(_sentence(error, fallback), title=title, severity="error")

    def go_to_line(self, line: int, *, focus: bool = True) -> None:
        """Move the cursor to a 1-based line (clamped to the file) and centre it."""
        buffer = self._current()
        if buffer is None:
            return
        editor = buffer.editor
        row = max(0, min(line - 1, editor.document.line_count - 1))
        self._reveal(editor, (row, 0))
        if focus:
            editor.focus()

    async def on_external_change(self, path: str) -> None:
        """A file changed outside the editor: reload a clean buffer, ask about a dirty one."""
        path = normalize(path)
        self._refresh_index(path)
        buffer = self._buffers.get(path)
        if buffer is None or path in self._asking:
            return
        try:
            data = await self.session.read_bytes(path)
        except (SessionError, BackendError):
            if buffer.dirty:
                return
            self.notify(
                f"{path} was deleted or moved; its tab keeps the last text.", severity="warning"
            )
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self.notify(
                f"{path} is no longer UTF-8 text; the tab keeps the last text.", severity="warning"
            )
            return
        if text == buffer.saved_text:
            return
        if not buffer.dirty:
            self._reload(buffer, text)
            return
        self._asking.add(path)
        screen = ChoiceScreen(
            f"{path} changed on disk while you have unsaved edits.",
            [("keep", "Keep my edits"), ("reload", "Reload from disk")],
            default="keep",
        )

        def answered(choice: str | None) -> None:
            self._asking.discard(path)
            if choice == "reload":
                self._reload(buffer, text)
            else:
                # Saving now overwrites what is on disk; that is the user's call.
                buffer.saved_text = text
                self._mark_dirty(buffer, True)

        self.app.push_screen(screen, answered)

    # -- actions -------------------------------------------------------------------------------

    async def action_save(self) -> None:
        await self.save_current()

    def action_find(self) -> None:
        self._show_find(replace=False)

    def action_replace(self) -> None:
        self._show_find(replace=True)

    def _show_find(self, *, replace: bool) -> None:
        if self._current() is None:
            return
        panel = self.query_one("#find-panel")
        bar = self.query_one("#find-bar", Input)
        self.query_one("#goto-bar", Input).remove_class("-shown")
        editor = self._current_editor_or_none()
        if editor is not None:
            if not panel.has_class("-shown"):
                self._find_origin_x = editor.scroll_x
            if editor.selected_text and "\n" not in editor.selected_text:
                bar.value = editor.selected_text
        panel.add_class("-shown")
        panel.set_class(replace, "-replace")
        self._update_count()
        if replace and bar.value:
            self.query_one("#replace-bar", Input).focus()
        else:
            bar.focus()

    def action_goto_line(self) -> None:
        if self._current() is None:
            return
        bar = self.query_one("#goto-bar", Input)
        self.query_one("#find-panel").remove_class("-shown")
        bar.value = ""
        bar.add_class("-shown")
        bar.focus()

    def action_switch_tab(self, step: int) -> None:
        """Ctrl+PgDn / Ctrl+PgUp: the next or previous tab, wrapping around, with the keyboard
        in its editor."""
        buffer = self._current()
        if buffer is None:
            return
        order = list(self._by_pane.values())  # tabs are added at the end, in opening order
        target = order[(order.index(buffer) + step) % len(order)]
        self._open_tabs().active = target.pane_id
        target.editor.focus()

    def action_hide_bars(self) -> None:
        finding = bool(self.query("#find-panel.-shown"))
        for bar in self.query(".editor-bar"):
            bar.remove_class("-shown")
        editor = self._current_editor_or_none()
        if editor is not None:
            if finding:
                self._restore_view(editor)
            editor.focus()

    def _restore_view(self, editor: CodeEditor) -> None:
        """Closing find puts the view back where it was sideways, when the match (now the
        selection) is visible from there; the match's line stays in view."""
        origin = self._find_origin_x
        self._find_origin_x = None
        if origin is None or editor.scroll_x == origin:
            return
        row, column = editor.cursor_location
        line = editor.document[row] if row < editor.document.line_count else ""
        cell = len(line[:column].expandtabs(editor.indent_width))
        width = editor.scrollable_content_region.width - editor.gutter_width
        if origin <= cell < origin + width:
            editor.scroll_to(x=origin, animate=False)

    async def action_close_tab(self) -> None:
        buffer = self._current()
        if buffer is None:
            return
        if not buffer.dirty:
            await self._close(buffer)
            return

        async def answered(choice: str | None) -> None:
            if choice == "discard":
                await self._close(buffer)
            elif choice == "save":
                await self.save_current()
                if not buffer.dirty:
                    await self._close(buffer)

        self.app.push_screen(
            ChoiceScreen(
                f"{buffer.path} has unsaved edits.",
                [("cancel", "Cancel"), ("discard", "Discard"), ("save", "Save")],
                default="cancel",
            ),
            answered,
        )

    # -- code navigation -----------------------------------------------------------------------

    @classmethod
    def help_bindings(cls) -> list[Binding]:
        """Every key of the editor (the pane's, the text area's, the replace box's), for F1."""
        from widgets.code_editor import CodeEditor

        declared = [
            *cls.BINDINGS,
            *CodeEditor.BINDINGS,
            *FindInput.BINDINGS,
            *ReplaceInput.BINDINGS,
        ]
        return [binding for binding in declared if isinstance(binding, Binding)]

    def palette_actions(self) -> list[PaletteAction]:
        """The editor's commands and code navigation, for the app's command palette."""
        return [
            PaletteAction("Find", "Ctrl+F: find in the open file", self.action_find),
            PaletteAction(
                "Replace", "Ctrl+H / Ctrl+R: find and replace in the open file", self.action_replace
            ),
            PaletteAction("Go to line", "Ctrl+G", self.action_goto_line),
            PaletteAction("Close tab", "Ctrl+W", self.action_close_tab),
            PaletteAction("Next tab", "Ctrl+PgDn / Ctrl+Tab", lambda: self.action_switch_tab(1)),
            PaletteAction(
                "Previous tab", "Ctrl+PgUp / Ctrl+Shift+Tab", lambda: self.action_switch_tab(-1)
            ),
            PaletteAction("Toggle line comment", "Ctrl+/", self._toggle_comment),
            PaletteAction(
                "Diff of this file",
                "Its changes since the session started, side by side (saved text)",
                self.show_diff,
            ),
            PaletteAction("Go to definition", "F12", self.action_goto_definition),
            PaletteAction(
                "Go back", "Alt+Left: where the last jump left from", self.action_go_back
            ),
            PaletteAction("Go forward", "Alt+Right", self.action_go_forward),
            PaletteAction("Show callers and callees", "Shift+F12", self.action_call_hierarchy),
            PaletteAction(
                "Go to symbol in file (outline)", "Ctrl+Shift+O / F8", self.action_outline
            ),
            PaletteAction("Rebuild code index", "Index the workspace again", self.rebuild_index),
        ]

    async def show_diff(self) -> None:
        """The open file's saved changes since the session started, in the diff view."""
        from widgets.changes_view import DiffScreen  # loaded on first use

        buffer = self._current()
        if buffer is None:
            self.notify("Open a file first.", severity="warning")
            return
        try:
            diff = await self.session.diff(path=buffer.path)
        except (SessionError, BackendError) as error:
            self.notify(_sentence(error, f"No diff for {buffer.path}"), severity="warning")
            return
        if not diff.strip():
            self.notify(f"{buffer.path} has no saved changes since the session started.")
            return
        self.app.push_screen(DiffScreen(buffer.path, diff, unified=self.app.size.width < 100))

    def _toggle_comment(self) -> None:
        editor = self._current_editor_or_none()
        if editor is not None:
            editor.action_toggle_comment()
            editor.focus()

    def rebuild_index(self) -> None:
        self.run_worker(self._build_index(), group="code-index", exclusive=True)

    async def action_goto_definition(self) -> None:
        where = await self._cursor_for_index()
        if where is None:
            return
        path, line, col, word = where
        location = await self.code_index.query(lambda index: index.definition_at(path, line, col))
        if location is None:
            name = f"{word!r}" if word else "the name under the cursor"
            self.notify(f"No definition of {name} was found in the workspace.", severity="warning")
            return
        from widgets.codenav import NavTarget  # the code navigation loads when first used

        await self.open_target(NavTarget(location.path, location.line, location.col, location.name))

    async def action_call_hierarchy(self) -> None:
        where = await self._cursor_for_index()
        if where is None:
            return
        path, line, col, _word = where
        from simulator.analysis.session_index import call_hierarchy
        from widgets.codenav import NavListScreen, hierarchy_entries

        hierarchy = await self.code_index.query(
            lambda index: call_hierarchy(index, path, line, col)
        )
        if hierarchy is None:
            self.notify("The cursor is not in or on a function.", severity="warning")
            return
        function = hierarchy.function
        screen = NavListScreen(
            f"Calls of {function.qualname}  ({function.path}:{function.def_line})",
            hierarchy_entries(hierarchy),
            "Filter callers and callees (Enter opens, Esc closes)",
        )
        self.app.push_screen(screen, self._nav_chosen)

    async def action_outline(self) -> None:
        where = await self._cursor_for_index()
        if where is None:
            return
        path = where[0]
        symbols = await self.code_index.query(lambda index: index.outline(path))
        if not symbols:
            self.notify(f"{path} has no functions or classes.", severity="warning")
            return
        from widgets.codenav import NavListScreen, outline_entries

        screen = NavListScreen(
            f"Outline of {path}",
            outline_entries(path, symbols),
            "Filter functions and classes (Enter jumps, Esc closes)",
            ranked=True,
        )
        self.app.push_screen(screen, self._nav_chosen)

    async def open_target(self, target: NavTarget) -> None:
        """Open a file at a 1-based line and a tree-sitter (byte) column; Alt+Left comes back."""
        here = self._position()
        await self.open_file(target.path)
        buffer = self._buffers.get(normalize(target.path))
        if buffer is None or self._current() is not buffer:
            return
        editor = buffer.editor
        row = max(0, min(target.line - 1, editor.document.line_count - 1))
        text = editor.document[row]
        if target.col:
            col = len(text.encode("utf-8")[: target.col].decode("utf-8", "ignore"))
        else:
            col = _name_column(text, target.name.rpartition(".")[2])
        if here is not None and here != (buffer.path, (row, col)):
            self._back.append(here)
            del self._back[:-_HISTORY]
            self._forward.clear()
        self._reveal(editor, (row, col))
        editor.focus()

    async def action_go_back(self) -> None:
        await self._travel(
            self._back,
            self._forward,
            "Nothing to go back to: Alt+Left returns "
            "from a jump (F12, the outline, the call list).",
        )

    async def action_go_forward(self) -> None:
        await self._travel(self._forward, self._back, "Nothing to go forward to.")

    async def _travel(
        self,
        source: list[tuple[str, tuple[int, int]]],
        other: list[tuple[str, tuple[int, int]]],
        nothing: str,
    ) -> None:
        """Pop a position from one history into the other; closed files are reopened, a
        position past a file's end (the file shrank) is clamped."""
        if not source:
            self.notify(nothing)
            return
        here = self._position()
        path, (row, col) = source.pop()
        await self.open_file(path)
        buffer = self._buffers.get(path)
        if buffer is None or self._current() is not buffer:
            return
        if here is not None:
            other.append(here)
        document = buffer.editor.document
        row = max(0, min(row, document.line_count - 1))
        self._reveal(buffer.editor, (row, min(col, len(document[row]))))
        buffer.editor.focus()

    def _position(self) -> tuple[str, tuple[int, int]] | None:
        buffer = self._current()
        return (buffer.path, buffer.editor.cursor_location) if buffer else None

    def _reveal(self, editor: CodeEditor, location: tuple[int, int]) -> None:
        """Put the cursor at `location` with its line centred, and the line's start in view
        whenever the cursor fits there too: a jump centred sideways as well hid `def` / the
        return type left of the name. Again after a refresh: a tab just opened has no width
        yet, and its first layout scrolled to the cursor column."""
        editor.move_cursor(location, center=True)
        _start_of_line_in_view(editor)
        self.call_after_refresh(_start_of_line_in_view, editor)

    def _nav_chosen(self, target: NavTarget | None) -> None:
        if target is not None:
            self.run_worker(self.open_target(target), group="code-nav")

    async def _cursor_for_index(self) -> tuple[str, int, int, str] | None:
        """(path, 1-based line, byte column, word) of the cursor, once the index can answer;
        unsaved edits are indexed first so the position means the same text."""
        buffer = self._current()
        if buffer is None:
            self.notify("Open a Python or C file first.", severity="warning")
            return None
        if not self.code_index.ready:
            if self.code_index.error:
                self.notify(f"The code index failed: {self.code_index.error}", severity="error")
            else:
                self.notify("The code index is still being built; try again in a moment.")
            return None
        from simulator.analysis.languages import lang_of

        if lang_of(buffer.path) is None:
            self.notify(f"{buffer.path} is not a Python or C file.", severity="warning")
            return None
        editor = buffer.editor
        text = editor.text
        if text != buffer.saved_text:  # (the dirty flag follows a message, maybe not yet handled)
            await self.code_index.update_text(buffer.path, text)
        row, col = editor.cursor_location
        line = editor.document[row]
        byte_col = len(line[:col].encode("utf-8"))
        return buffer.path, row + 1, byte_col, _word_at(line, col)

    async def _build_index(self) -> None:
        if not self.is_attached:
            # The app is quitting: from `App.exit()` Textual refuses every mount (MountError)
            # until its loop ends and cancels the workers; a quit at the first frame came
            # before this after-frame start. Nothing to index for.
            return
        state = await self._index_state()
        state.update("indexing code…")
        state.add_class("-shown")
        try:
            index = await self.code_index.build()
        except (SessionError, BackendError) as error:
            state.update(_sentence(error, "The code index could not be built"))
            return
        state.remove_class("-shown")
        self.post_message(self.IndexReady(len(index.files)))

    def on_workspace_changed(self) -> None:
        """Something may have changed any file (a command, tests, a restore): re-read the
        workspace into the code index soon, re-extracting only the files that changed."""
        if self._resync_timer is not None:
            self._resync_timer.stop()
        self._resync_timer = self.set_timer(RESYNC_DELAY, self._resync)

    def _resync(self) -> None:
        self._resync_timer = None
        self.run_worker(self._resync_index(), group="code-index-resync", exclusive=True)

    async def _resync_index(self) -> None:
        try:
            changed = await self.code_index.resync()
        except (SessionError, BackendError):
            return  # the workspace is unreachable now; the next change tries again
        if changed:
            self.post_message(self.IndexChanged(changed))

    def _session_event(self, event: Event) -> None:
        # Subscribers may be called off the event loop: only post a message from here.
        if event.kind in INDEX_STALE_KINDS:
            self.post_message(self._WorkspaceMayHaveChanged())
        elif event.kind == Kind.FILE_RENAME:
            from simulator.events import FileRenamePayload  # loaded: the event is one

            renamed = event.typed(FileRenamePayload)
            if renamed.path and renamed.to:
                self.post_message(self._Renamed(renamed.path, renamed.to))

    @dataclass
    class _Renamed(Message):
        src: str
        dst: str

    @on(_Renamed)
    def _renamed(self, message: _Renamed) -> None:
        """A file or folder was renamed (from the tree, by the agent): open tabs of it, or
        under it, follow it to its new path, unsaved edits and all."""
        message.stop()
        if not self._buffers:
            return  # no file open (and maybe no tabs yet)
        src, dst = normalize(message.src), normalize(message.dst)
        tabs = self._open_tabs()
        for path, buffer in list(self._buffers.items()):
            if path != src and not path.startswith(src + "/"):
                continue
            new_path = dst + path[len(src) :]
            del self._buffers[path]
            self._buffers[new_path] = buffer
            buffer.path = new_path
            editor = buffer.editor
            if PurePosixPath(path).suffix.lower() != PurePosixPath(new_path).suffix.lower():
                where = editor.cursor_location
                editor.set_path_language(new_path)  # a new suffix may mean a new language
                editor.move_cursor(where)
            else:
                editor.path = new_path
            tabs.get_tab(buffer.pane_id).label = self._label(buffer)
            self._refresh_index(new_path)

    @on(_WorkspaceMayHaveChanged)
    def _workspace_may_have_changed(self, message: _WorkspaceMayHaveChanged) -> None:
        message.stop()
        self.on_workspace_changed()

    def _refresh_index(self, path: str) -> None:
        self.run_worker(self.code_index.refresh(path), group="code-index-refresh")

    def find_next(self, needle: str, *, from_start: bool = False) -> bool:
        """Select the next occurrence of `needle` after the cursor (wrapping); False if none."""
        editor = self._current_editor_or_none()
        if editor is None or not needle:
            return False
        document = editor.document
        row, column = (0, 0) if from_start else editor.selection.end
        line_count = document.line_count
        for step in range(line_count + 1):
            index = (row + step) % line_count
            line = document[index]
            start = column if step == 0 else 0
            found = line.find(needle, start)
            if step == line_count and found >= column:
                found = -1
            if found != -1:
                editor.selection = _selection((index, found), (index, found + len(needle)))
                # Centre the match's line, but scroll sideways only as far as the match needs:
                # centring on both axes shifted the text left although the match was in view.
                editor.scroll_cursor_visible(center=False, animate=False)
                height = editor.scrollable_content_region.height
                editor.scroll_to(y=max(0, index - height // 2), animate=False)
                return True
        return False

    def match_count(self, needle: str) -> tuple[int, int]:
        """(which match the selection is, 1-based or 0 when it is on none; how many there are)
        for `needle` in the current tab, counted as find-next walks them."""
        editor = self._current_editor_or_none()
        if editor is None or not needle:
            return 0, 0
        text = editor.text
        total = text.count(needle)
        if not total or editor.selected_text != needle:
            return 0, total
        start = min(editor.selection.start, editor.selection.end)
        document = editor.document
        row, column = start
        before = sum(map(len, document.lines[:row])) + row * len(document.newline) + column
        return text.count(needle, 0, before) + 1, total

    def _update_count(self) -> None:
        needle = self.query_one("#find-bar", Input).value
        current, total = self.match_count(needle)
        if not needle:
            label = ""
        elif not total:
            label = "No results"
        elif current:
            label = f"{current} of {total}"
        else:
            label = f"{total} found"
        self.query_one("#find-count", Static).update(label)

    def replace_current(self, needle: str, replacement: str) -> bool:
        """Replace the selected match (typing it, as it were; saved with the file) and select
        the next one; when the selection is no match, find the next first. False if none."""
        editor = self._current_editor_or_none()
        if editor is None or not needle:
            return False
        if editor.selected_text == needle:
            start, end = sorted(editor.selection)
            editor.replace(replacement, start, end)
        found = self.find_next(needle)
        self._update_count()
        return found

    async def replace_all(self, needle: str, replacement: str) -> int:
        """Replace every match in the current tab as one undo step. A file without unsaved
        edits is then written through `session.edit(..., replace_all=True)`: one recorded
        edit; in one with unsaved edits the replacement waits, like them, for Ctrl+S."""
        buffer = self._current()
        if buffer is None or not needle:
            return 0
        editor = buffer.editor
        text = editor.text
        count = text.count(needle)
        if not count:
            self.notify(f"{needle!r} was not found.", severity="warning")
            return 0
        was_saved = text == buffer.saved_text
        first, last = text.find(needle), text.rfind(needle) + len(needle)
        start, end = _location_of(text, first), _location_of(text, last)
        editor.replace(text[first:last].replace(needle, replacement), start, end)
        after = text.replace(needle, replacement)
        self._update_count()
        noun = "occurrence" if count == 1 else "occurrences"
        if not was_saved:
            self.notify(f"Replaced {count} {noun}; Ctrl+S saves them with your other edits.")
            return count
        try:
            await self.session.edit(buffer.path, needle, replacement, replace_all=True)
        except (SessionError, BackendError) as error:
            self._error(error, f"{buffer.path} could not be saved", "Replaced in the editor only")
            return count
        buffer.saved_text = after
        self._mark_dirty(buffer, editor.text != after)
        self._refresh_index(buffer.path)
        self.post_message(self.FileSaved(buffer.path))
        self.notify(f"Replaced {count} {noun} in {buffer.path} (saved).")
        return count

    # -- events --------------------------------------------------------------------------------

    # Handled by name, not with @on(TextArea.…): TextArea loads with the first open file.
    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        buffer = self._buffer_of(event.text_area)
        if buffer is not None:
            self._mark_dirty(buffer, event.text_area.text != buffer.saved_text)

    @on(Input.Submitted, "#find-bar")
    def _find_submitted(self, event: Input.Submitted) -> None:
        if not self.find_next(event.value):
            self.notify(f"{event.value!r} was not found.", severity="warning")
        self._update_count()

    @on(Input.Changed, "#find-bar")
    def _find_changed(self, event: Input.Changed) -> None:
        editor = self._current_editor_or_none()
        if editor is not None and event.value:
            top = min(editor.selection.start, editor.selection.end)
            editor.selection = _selection(top, top)
            self.find_next(event.value)
        self._update_count()

    @on(Input.Submitted, "#replace-bar")
    def _replace_submitted(self, event: Input.Submitted) -> None:
        needle = self.query_one("#find-bar", Input).value
        if not needle:
            self.query_one("#find-bar", Input).focus()
        elif not self.replace_current(needle, event.value):
            self.notify(f"{needle!r} was not found.", severity="warning")

    @on(ReplaceInput.ReplaceAll)
    async def _replace_all_requested(self, message: ReplaceInput.ReplaceAll) -> None:
        message.stop()
        needle = self.query_one("#find-bar", Input).value
        if needle:
            await self.replace_all(needle, self.query_one("#replace-bar", Input).value)

    @on(Input.Submitted, "#goto-bar")
    def _goto_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("-shown")
        try:
            line = int(event.value)
        except ValueError:
            self.notify("Type a line number.", severity="warning")
            return
        self.go_to_line(line)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # by name: `@on(TabbedContent.TabActivated)` would load the tabs' module before the
        # first frame
        event.stop()
        self._announce_cursor()

    def on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        if event.text_area is self._current_editor_or_none():
            self._announce_cursor()

    def _announce_cursor(self) -> None:
        editor = self._current_editor_or_none()
        self.post_message(self.CursorMoved(cursor_position(editor) if editor else ""))

    # -- internals -----------------------------------------------------------------------------

    def _current(self) -> Buffer | None:
        if not self._buffers:
            return None
        active = self._open_tabs().active
        return self._by_pane.get(active)

    def _current_editor_or_none(self) -> CodeEditor | None:
        buffer = self._current()
        return buffer.editor if buffer else None

    def _buffer_of(self, editor: object) -> Buffer | None:
        for buffer in self._buffers.values():
            if buffer.editor is editor:
                return buffer
        return None

    def _label(self, buffer: Buffer) -> str:
        name = PurePosixPath(buffer.path).name
        return f"● {name}" if buffer.dirty else name

    def _mark_dirty(self, buffer: Buffer, dirty: bool) -> None:
        if buffer.dirty == dirty:
            return
        buffer.dirty = dirty
        tabs = self._open_tabs()
        tabs.get_tab(buffer.pane_id).label = self._label(buffer)

    def _reload(self, buffer: Buffer, text: str) -> None:
        editor = buffer.editor
        location = editor.cursor_location
        scroll = editor.scroll_offset
        buffer.saved_text = text
        editor.load_text(text)
        row = min(location[0], editor.document.line_count - 1)
        editor.move_cursor((row, location[1]))
        editor.scroll_to(scroll.x, scroll.y, animate=False)
        self._mark_dirty(buffer, False)
        self.notify(f"{buffer.path} was changed on disk and has been reloaded.")

    async def _close(self, buffer: Buffer) -> None:
        if buffer.dirty:  # the index saw the discarded edits: back to what is on disk
            self._refresh_index(buffer.path)
        self._buffers.pop(buffer.path, None)
        self._by_pane.pop(buffer.pane_id, None)
        await self._open_tabs().remove_pane(buffer.pane_id)
        self._sync_empty()
        editor = self._current_editor_or_none()
        if editor is not None:
            editor.focus()

    def _sync_empty(self) -> None:
        if not self._buffers:
            self.post_message(self.CursorMoved(""))
        empty = not self._buffers
        self.query_one("#editor-empty").display = empty
        for tabs in self.query("#editor-tabs"):  # none before the first file
            tabs.display = not empty


async def _caught_up(widget: Widget) -> None:
    """Wait until `widget` has handled the messages already queued for it. Ctrl+S is a priority
    binding, run by the app as soon as the key arrives, while an Enter typed just before it may
    still wait in the editor's queue: saving then lost that last keystroke."""
    if active_message_pump.get(None) is widget or not widget.is_running:
        return
    handled = asyncio.get_running_loop().create_future()

    def mark() -> None:
        if not handled.done():
            handled.set_result(None)

    if widget.call_later(mark):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(handled, CATCH_UP_TIMEOUT)


def _location_of(text: str, index: int) -> tuple[int, int]:
    """The (row, column) of a character index into a document's text (any newline)."""
    return text.count("\n", 0, index), index - (text.rfind("\n", 0, index) + 1)


def _selection(start: tuple[int, int], end: tuple[int, int]) -> Selection:
    from textual.widgets.text_area import Selection

    return Selection(start, end)


def _selected_length(editor: TextArea) -> int:
    """How many characters are selected (newlines count one), without building the text: a
    select-all of a 20k-line file would otherwise cost milliseconds on every cursor move."""
    (top, left), (bottom, right) = sorted(editor.selection)
    if top == bottom:
        return right - left
    lines = editor.document.lines
    return len(lines[top]) - left + sum(map(len, lines[top + 1 : bottom])) + right + bottom - top


def cursor_position(editor: TextArea) -> str:
    """VS Code's "Ln 12, Col 5" (1-based; a tab counts to the next tab stop), plus
    "(N selected)" when text is selected."""
    row, column = editor.cursor_location
    line = editor.document[row] if row < editor.document.line_count else ""
    col = len(line[:column].expandtabs(editor.indent_width)) + 1
    position = f"Ln {row + 1}, Col {col}"
    selected = _selected_length(editor)
    if selected:
        position += f" ({selected} selected)"
    return position


_HISTORY = 50  # positions kept for Alt+Left


def _start_of_line_in_view(editor: CodeEditor) -> None:
    """Scroll back to the first column when the cursor stays visible there."""
    if not editor.scroll_x:
        return
    row, column = editor.cursor_location
    line = editor.document[row] if row < editor.document.line_count else ""
    cell = cell_len(line[:column].expandtabs(editor.indent_width))
    width = editor.scrollable_content_region.width - editor.gutter_width
    if cell + 1 < width:
        editor.scroll_to(x=0, animate=False, immediate=True)


def _name_column(text: str, name: str) -> int:
    """The column of `name` as a whole word in the line, else of its first non-blank."""
    if name:
        found = re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text)
        if found is not None:
            return found.start()
    return len(text) - len(text.lstrip())


def _word_at(text: str, col: int) -> str:
    start = col
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    end = col
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end]


def _sentence(error: Exception, fallback: str) -> str:
    text = str(error).strip()
    return text if text else fallback + "."
