"""Editor tabs over the session: open, edit, save (through `session.write`), find, go to line.

Every read and save goes through the session gateway so that the human's edits land in the
trajectory like an agent's. Files changed behind the editor's back (an agent edit, a command in
the terminal) reload a clean buffer and ask before replacing a dirty one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static, TabbedContent, TabPane, TextArea
from textual.widgets.text_area import Selection

from simulator.session import BackendError, Session, SessionError
from widgets.code_editor import CodeEditor


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
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_default", "Cancel", show=False)
    ]

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
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="editor.save", priority=True),
        Binding("ctrl+f", "find", "Find", id="editor.find", priority=True),
        Binding("ctrl+g", "goto_line", "Go to line", id="editor.goto_line", priority=True),
        Binding("ctrl+w", "close_tab", "Close tab", id="editor.close_tab", priority=True),
        Binding("escape", "hide_bars", "Hide find", show=False, id="editor.hide_bars"),
    ]

    class FileOpened(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    class FileSaved(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

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

    def compose(self) -> ComposeResult:
        yield Static("Open a file from the tree or with Ctrl+P.", id="editor-empty")
        yield TabbedContent(id="editor-tabs")
        yield Input(
            placeholder="Find (Enter: next match, Esc: close)", id="find-bar", classes="editor-bar"
        )
        yield Input(placeholder="Go to line", id="goto-bar", type="integer", classes="editor-bar")

    def on_mount(self) -> None:
        self._sync_empty()

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
        buffer = self._buffers.get(Session.normalize(path))
        return bool(buffer and buffer.dirty)

    async def open_file(self, path: str, line: int | None = None) -> None:
        """Open (or switch to) a file; optionally put the cursor on a 1-based line."""
        path = Session.normalize(path)
        buffer = self._buffers.get(path)
        if buffer is None:
            try:
                text = await self.session.read(path)
            except (SessionError, BackendError) as error:
                self.notify(
                    _sentence(error, f"{path} could not be opened"),
                    title="Cannot open file",
                    severity="error",
                )
                return
            pane_id = f"editor-tab-{next(self._pane_ids)}"
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
            tabs = self.query_one(TabbedContent)
            await tabs.add_pane(TabPane(self._label(buffer), editor, id=pane_id))
            tabs.active = pane_id
            self._sync_empty()
            self.post_message(self.FileOpened(path))
        else:
            self.query_one(TabbedContent).active = buffer.pane_id
        if line is not None:
            self.go_to_line(line)
        buffer.editor.focus()

    async def save_current(self) -> None:
        buffer = self._current()
        if buffer is None:
            self.notify("There is no open file to save.", severity="warning")
            return
        text = buffer.editor.text
        try:
            await self.session.write(buffer.path, text)
        except (SessionError, BackendError) as error:
            self.notify(
                _sentence(error, f"{buffer.path} could not be saved"),
                title="Save failed",
                severity="error",
            )
            return
        buffer.saved_text = text
        self._mark_dirty(buffer, buffer.editor.text != text)
        self.post_message(self.FileSaved(buffer.path))

    def go_to_line(self, line: int) -> None:
        """Move the cursor to a 1-based line (clamped to the file) and centre it."""
        buffer = self._current()
        if buffer is None:
            return
        editor = buffer.editor
        row = max(0, min(line - 1, editor.document.line_count - 1))
        editor.move_cursor((row, 0), center=True)
        editor.focus()

    async def on_external_change(self, path: str) -> None:
        """A file changed outside the editor: reload a clean buffer, ask about a dirty one."""
        path = Session.normalize(path)
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
        if self._current() is None:
            return
        bar = self.query_one("#find-bar", Input)
        self.query_one("#goto-bar", Input).remove_class("-shown")
        bar.add_class("-shown")
        editor = self._current_editor_or_none()
        if editor is not None and editor.selected_text and "\n" not in editor.selected_text:
            bar.value = editor.selected_text
        bar.focus()

    def action_goto_line(self) -> None:
        if self._current() is None:
            return
        bar = self.query_one("#goto-bar", Input)
        self.query_one("#find-bar", Input).remove_class("-shown")
        bar.value = ""
        bar.add_class("-shown")
        bar.focus()

    def action_hide_bars(self) -> None:
        for bar in self.query(".editor-bar"):
            bar.remove_class("-shown")
        editor = self._current_editor_or_none()
        if editor is not None:
            editor.focus()

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
                editor.selection = Selection((index, found), (index, found + len(needle)))
                editor.scroll_cursor_visible(center=True)
                return True
        return False

    # -- events --------------------------------------------------------------------------------

    @on(TextArea.Changed)
    def _text_changed(self, event: TextArea.Changed) -> None:
        buffer = self._buffer_of(event.text_area)
        if buffer is not None:
            self._mark_dirty(buffer, event.text_area.text != buffer.saved_text)

    @on(Input.Submitted, "#find-bar")
    def _find_submitted(self, event: Input.Submitted) -> None:
        if not self.find_next(event.value):
            self.notify(f"{event.value!r} was not found.", severity="warning")

    @on(Input.Changed, "#find-bar")
    def _find_changed(self, event: Input.Changed) -> None:
        editor = self._current_editor_or_none()
        if editor is not None and event.value:
            top = editor.selection.start
            editor.selection = Selection(top, top)
            self.find_next(event.value)

    @on(Input.Submitted, "#goto-bar")
    def _goto_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("-shown")
        try:
            line = int(event.value)
        except ValueError:
            self.notify("Type a line number.", severity="warning")
            return
        self.go_to_line(line)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()

    # -- internals -----------------------------------------------------------------------------

    def _current(self) -> Buffer | None:
        if not self._buffers:
            return None
        active = self.query_one(TabbedContent).active
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
        tabs = self.query_one(TabbedContent)
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
        self._buffers.pop(buffer.path, None)
        self._by_pane.pop(buffer.pane_id, None)
        await self.query_one(TabbedContent).remove_pane(buffer.pane_id)
        self._sync_empty()
        editor = self._current_editor_or_none()
        if editor is not None:
            editor.focus()

    def _sync_empty(self) -> None:
        empty = not self._buffers
        self.query_one("#editor-empty").display = empty
        self.query_one(TabbedContent).display = not empty


def _sentence(error: Exception, fallback: str) -> str:
    text = str(error).strip()
    return text if text else fallback + "."
