"""The changes view: the workspace's diff against where the session started, file by file.

Enter opens a changed file at its first change; `d` shows its diff full screen, read-only, side
by side (or unified, `u`), with added and removed lines coloured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from simulator.session import FileChange, Session
from widgets.coalesce import Coalesced
from widgets.keybindings import default_bindings

STATUS_WORDS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed"}
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_HEADERS = (
    "diff --git",
    "index ",
    "+++ ",
    "--- ",
    "new file",
    "deleted file",
    "similarity",
    "rename ",
)


def short_path(path: str, width: int) -> str:
    """`path` in at most `width` cells: the file name is kept, the middle gives way
    ("src/…/deep/name.py", then "…/deep/name.py", then "…me.py")."""
    if len(path) <= width:
        return path
    parts = path.split("/")
    name = parts[-1]
    if len(name) + 2 > width:
        return "…" + name[-(width - 1) :] if width > 1 else "…"
    tail = name
    for part in reversed(parts[1:-1]):
        if len(parts[0]) + len(part) + len(tail) + 4 > width:
            break
        tail = f"{part}/{tail}"
    head = f"{parts[0]}/…/" if len(parts[0]) + len(tail) + 3 <= width else "…/"
    return head + tail


def first_changed_line(diff: str) -> int | None:
    """The 1-based line of the working copy where a unified diff's first change is."""
    new_line: int | None = None
    for line in diff.splitlines():
        hunk = _HUNK.match(line)
        if hunk:
            new_line = int(hunk.group(2))
            continue
        if new_line is None or line.startswith("\\"):
            continue
        if line.startswith(("+", "-")):
            return max(new_line, 1)
        new_line += 1
    return None


@dataclass(frozen=True)
class DiffRow:
    """One row of a side-by-side diff; `kind` is "context", "change" or "hunk"."""

    kind: str
    old_no: int | None = None
    old: str | None = None
    new_no: int | None = None
    new: str | None = None


def side_by_side(diff: str) -> list[DiffRow]:
    """Pair a unified diff's removed and added lines, hunk by hunk."""
    rows: list[DiffRow] = []
    minus: list[str] = []
    plus: list[str] = []
    old_no = new_no = 0

    def flush() -> None:
        nonlocal old_no, new_no
        for index in range(max(len(minus), len(plus))):
            old = minus[index] if index < len(minus) else None
            new = plus[index] if index < len(plus) else None
            rows.append(
                DiffRow(
                    "change",
                    old_no + index if old is not None else None,
                    old,
                    new_no + index if new is not None else None,
                    new,
                )
            )
        old_no += len(minus)
        new_no += len(plus)
        minus.clear()
        plus.clear()

    for line in diff.splitlines():
        if line.startswith(_HEADERS):
            continue
        hunk = _HUNK.match(line)
        if hunk:
            flush()
            old_no, new_no = int(hunk.group(1)), int(hunk.group(2))
            rows.append(DiffRow("hunk", old=line))
        elif line.startswith("-"):
            minus.append(line[1:])
        elif line.startswith("+"):
            plus.append(line[1:])
        elif line.startswith("\\"):
            continue
        else:
            flush()
            rows.append(DiffRow("context", old_no, line[1:], new_no, line[1:]))
            old_no += 1
            new_no += 1
    flush()
    return rows


class DiffScreen(ModalScreen[None]):
    """A changed file's diff, read-only, full screen: side by side, or unified (`u`)."""

    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    DiffScreen > Vertical {
        width: 100%; height: 100%; background: $surface; border: round $primary; padding: 0 1;
    }
    DiffScreen #diff-title { height: 1; color: $text-muted; }
    DiffScreen #diff-scroll { height: 1fr; }
    DiffScreen > .diff--added { background: $success 20%; }
    DiffScreen > .diff--removed { background: $error 20%; }
    DiffScreen > .diff--hunk { color: $accent; }
    DiffScreen > .diff--number { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "diff--added",
        "diff--removed",
        "diff--hunk",
        "diff--number",
    }
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("diff"))

    def __init__(self, path: str, diff: str, *, unified: bool = False) -> None:
        super().__init__()
        self.path = path
        self.diff = diff
        self.unified = unified

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="diff-title")
            with VerticalScroll(id="diff-scroll"):
                yield Static(id="diff-body")

    def on_mount(self) -> None:
        self._show()
        self.query_one("#diff-scroll").focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_toggle_layout(self) -> None:
        self.unified = not self.unified
        self._show()

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"diff--{name}", partial=True)

    def _show(self) -> None:
        layout = "unified" if self.unified else "side by side"
        self.query_one("#diff-title", Static).update(
            f"{self.path}: changes since the session started ({layout}; u switches, Esc closes)"
        )
        rows = side_by_side(self.diff)
        body = self.query_one("#diff-body", Static)
        if not rows:
            body.update("(binary file or no textual change)")
            return
        body.update(self._unified() if self.unified else self._side_by_side(rows))

    def _side_by_side(self, rows: list[DiffRow]) -> Table:
        table = Table.grid(expand=True, padding=(0, 1))
        number = self._style("number")
        for ratio in (None, 1, None, 1):
            table.add_column(ratio=ratio, no_wrap=True, overflow="ellipsis")
        for row in rows:
            if row.kind == "hunk":
                table.add_row("", Text(row.old or "", self._style("hunk")), "", "")
                continue
            changed = row.kind == "change"
            old_style = self._style("removed") if changed and row.old is not None else Style()
            new_style = self._style("added") if changed and row.new is not None else Style()
            table.add_row(
                Text(str(row.old_no) if row.old_no is not None else "", number),
                Text(row.old or "", old_style, no_wrap=True),
                Text(str(row.new_no) if row.new_no is not None else "", number),
                Text(row.new or "", new_style, no_wrap=True),
            )
        return table

    def _unified(self) -> Text:
        text = Text(no_wrap=True)
        number = self._style("number")
        old_no = new_no = 0
        for line in self.diff.splitlines():
            hunk = _HUNK.match(line)
            if line.startswith(_HEADERS) or line.startswith("\\"):
                continue
            if hunk:
                old_no, new_no = int(hunk.group(1)), int(hunk.group(2))
                text.append(line + "\n", self._style("hunk"))
            elif line.startswith("-"):
                text.append(f"{old_no:>5} ", number)
                text.append(f"- {line[1:]}\n", self._style("removed"))
                old_no += 1
            elif line.startswith("+"):
                text.append(f"{new_no:>5} ", number)
                text.append(f"+ {line[1:]}\n", self._style("added"))
                new_no += 1
            else:
                text.append(f"{new_no:>5} ", number)
                text.append(f"  {line[1:]}\n")
                old_no += 1
                new_no += 1
        return text


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

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("changes"))

    @dataclass
    class OpenFile(Message):
        """Open `path`, at the 1-based `line` of its first change when it has one."""

        path: str
        line: int | None = None

    def __init__(self, session: Session, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session
        self.changes: list[FileChange] = []
        self.diffs: dict[str, str] = {}
        """The last diff read of each changed file."""
        self._diff_path: str | None = None
        self._row_width = 0
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
        previous = self.selected_path()
        self.changes = changes
        self.diffs = {path: diff for path, diff in self.diffs.items() if path in self._paths()}
        self._fill_rows()
        if not changes:
            self.query_one("#changes-diff", Static).update("No changes since the session started.")
            return
        paths = self._paths()
        options = self.query_one("#changes-files", OptionList)
        options.highlighted = paths.index(previous) if previous in paths else 0

    def _paths(self) -> list[str]:
        return [change.path for change in self.changes]

    def _fill_rows(self) -> None:
        """One row per file, never wrapped: a path too long for the list loses its middle."""
        options = self.query_one("#changes-files", OptionList)
        highlighted = options.highlighted
        width = options.scrollable_content_region.width or 30
        self._row_width = width
        options.clear_options()
        for change in self.changes:
            row = Text(no_wrap=True, overflow="ellipsis")
            style = {"A": "green", "D": "red"}.get(change.status, "yellow")
            row.append(f"{change.status} ", f"bold {style}")
            row.append(short_path(change.path, max(1, width - 3)))
            options.add_option(Option(row))
        if highlighted is not None and highlighted < len(self.changes):
            options.highlighted = highlighted

    @on(events.Resize)
    def _resized(self) -> None:
        width = self.query_one("#changes-files", OptionList).scrollable_content_region.width
        if self.changes and width and width != self._row_width:
            self._fill_rows()

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
    async def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        path = self.selected_path()
        if path is None:
            return
        if any(c.path == path and c.status == "D" for c in self.changes):
            self.notify(f"{path} was deleted; d shows its diff.", severity="warning")
            return
        diff = await self._diff_of(path)
        self.post_message(self.OpenFile(path, first_changed_line(diff) if diff else None))

    async def action_show_diff_screen(self) -> None:
        path = self.selected_path()
        if path is None:
            return
        diff = await self._diff_of(path)
        if diff is not None:
            self.app.push_screen(DiffScreen(path, diff, unified=self.app.size.width < 100))

    async def _diff_of(self, path: str) -> str | None:
        """The file's diff (read again: the file may have changed since it was shown)."""
        try:
            diff = await self.session.diff(path=path)
        except Exception as exc:  # one sentence
            self.notify(f"No diff for {path}: {exc}", severity="warning")
            return None
        self.diffs[path] = diff
        return diff

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
        self.diffs[path] = diff
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
