"""The changes view: the workspace's diff against where the session started, file by file."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from simulator.session import FileChange, Session
from widgets.coalesce import Coalesced

STATUS_WORDS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed"}


class ChangesView(Widget):
    """Changed files on the left; the highlighted file's diff on the right; Enter opens it."""

    DEFAULT_CSS = """
    ChangesView { height: 1fr; }
    ChangesView #changes-files { width: 30%; min-width: 20; height: 1fr; border: none; }
    ChangesView #changes-scroll { height: 1fr; }
    ChangesView #changes-diff { width: auto; padding: 0 1; }
    ChangesView > .changes--added { color: $success; }
    ChangesView > .changes--removed { color: $error; }
    ChangesView > .changes--hunk { color: $accent; }
    ChangesView > .changes--header { color: $text-muted; text-style: bold; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "changes--added",
        "changes--removed",
        "changes--hunk",
        "changes--header",
    }

    class OpenFile(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def __init__(self, session: Session, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session
        self.changes: list[FileChange] = []
        self._diff_path: str | None = None
        self._reload = Coalesced(self, self._reload_once, "changes-list")
        self._show_diff = Coalesced(self, self._show_diff_once, "changes-diff")

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield OptionList(id="changes-files")
            with VerticalScroll(id="changes-scroll"):
                yield Static("No changes since the session started.", id="changes-diff")

    def reload(self) -> None:
        """List the changed files again (coalesced with a reload already running)."""
        self._reload()

    async def _reload_once(self) -> None:
        try:
            changes = await self.session.changes()
        except Exception as exc:  # e.g. no git in the backend: one sentence
            self.query_one("#changes-diff", Static).update(f"Changes are unavailable: {exc}")
            return
        options = self.query_one("#changes-files", OptionList)
        previous = self.selected_path()
        self.changes = changes
        options.clear_options()
        for change in changes:
            row = Text()
            style = {"A": "green", "D": "red"}.get(change.status, "yellow")
            row.append(f"{change.status} ", f"bold {style}")
            row.append(change.path)
            options.add_option(Option(row))
        if not changes:
            self.query_one("#changes-diff", Static).update("No changes since the session started.")
            return
        paths = [c.path for c in changes]
        options.highlighted = paths.index(previous) if previous in paths else 0

    def selected_path(self) -> str | None:
        options = self.query_one("#changes-files", OptionList)
        index = options.highlighted
        if index is None or not 0 <= index < len(self.changes):
            return None
        return self.changes[index].path

    @on(OptionList.OptionHighlighted, "#changes-files")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        path = self.selected_path()
        if path is not None:
            self.show_diff(path)

    @on(OptionList.OptionSelected, "#changes-files")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        path = self.selected_path()
        if path is None:
            return
        if any(c.path == path and c.status == "D" for c in self.changes):
            self.notify(f"{path} was deleted; its diff is shown here.", severity="warning")
            return
        self.post_message(self.OpenFile(path))

    def show_diff(self, path: str) -> None:
        self._diff_path = path
        self._show_diff()

    async def _show_diff_once(self) -> None:
        path = self._diff_path
        if path is None:
            return
        try:
            diff = await self.session.diff(path=path)
        except Exception as exc:  # one sentence in the pane
            self.query_one("#changes-diff", Static).update(f"No diff for {path}: {exc}")
            return
        self.query_one("#changes-diff", Static).update(self.highlight(diff))

    def highlight(self, diff: str) -> Text:
        styles = {
            "+": self.get_component_rich_style("changes--added", partial=True),
            "-": self.get_component_rich_style("changes--removed", partial=True),
            "@": self.get_component_rich_style("changes--hunk", partial=True),
        }
        header = self.get_component_rich_style("changes--header", partial=True)
        text = Text(no_wrap=True)
        for line in diff.splitlines():
            if line.startswith(("diff --git", "index ", "+++ ", "--- ", "new file", "deleted")):
                text.append(line + "\n", header)
            else:
                text.append(line + "\n", styles.get(line[:1], ""))
        if not text:
            text.append("(binary file or no textual change)")
        return text
