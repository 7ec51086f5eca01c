"""The curation table: thousands of targets, only the visible rows rendered (Line API).

Textual's DataTable builds every row's renderables when rows are added (about 3 s for 5,000
targets here); this table keeps the rows as plain `Row`s and a list of the shown indices, so
opening and filtering cost what the selection costs plus one screen of rows.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from widgets.curation.model import COLUMNS, Row
from widgets.keybindings import default_bindings

FIXED = {"state": 9, "coverage": 8, "mutation": 8, "flaky": 5, "last run": 8}
FIXED |= {"parity": 6, "no pickle": 9, "why": 24}
# When the full widths do not fit (80 columns): short headers and narrow figures, and the
# function and file share what is left, so every column stays on screen.
COMPACT = {"state": 9, "coverage": 4, "mutation": 4, "flaky": 1, "last run": 5}
COMPACT |= {"parity": 4, "no pickle": 4, "why": 8}
SHORT = {"coverage": "cov", "mutation": "mut", "flaky": "!", "last run": "run"}
SHORT |= {"parity": "par", "no pickle": "npk"}


class TargetTable(ScrollView, can_focus=True):
    """Rows of targets with a header line; a cursor row; marked rows shown with a dot."""

    DEFAULT_CSS = """
    TargetTable { background: $surface; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "target-table--header",
        "target-table--cursor",
        "target-table--marked",
        "target-table--accepted",
        "target-table--rejected",
        "target-table--stale",
    }

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("curation_table"))

    @dataclass
    class Highlighted(Message):
        """The cursor moved to another row (index into the problems)."""

        index: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[Row] = []
        self.shown: list[int] = []
        self.marked: set[int] = set()
        self.cursor = 0
        self.widths: dict[str, int] = {}
        self.compact = False

    # -- content --------------------------------------------------------------------------

    def set_rows(self, rows: list[Row], shown: list[int], *, keep: int | None = None) -> None:
        """Show `rows[i]` for i in `shown`; the cursor goes to the row of `keep` (a row index)
        when it is shown, else it stays at its position (the next row takes its place)."""
        self.rows = rows
        self.shown = shown
        if not self.widths:
            self._measure()
        position = self.cursor
        if keep is not None:
            with contextlib.suppress(ValueError):  # not shown: the next row takes its place
                position = shown.index(keep)
        self.cursor = min(position, max(0, len(shown) - 1))
        self.virtual_size = Size(sum(self.widths.values()) + len(self.widths), len(shown) + 1)
        self._scroll_to_cursor()
        self.refresh()
        if shown:
            self.post_message(self.Highlighted(shown[self.cursor]))

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.size.height - 1)
        top = round(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def _measure(self) -> None:
        longest_fn = max((len(r.function) for r in self.rows), default=8)
        longest_file = max((len(r.file) for r in self.rows), default=4)
        self.widths = {"function": min(max(longest_fn + 2, 10), 40)}
        self.widths["file"] = min(max(longest_file, 6), 40)
        self.widths.update(FIXED)
        room = self.size.width
        self.compact = bool(room) and sum(self.widths.values()) + len(self.widths) > room
        if self.compact:
            self.widths.update(COMPACT)
            fixed = sum(COMPACT.values()) + len(self.widths)
            left = max(16, room - fixed)
            function = min(self.widths["function"], max(8, left * 11 // 20))
            self.widths["file"] = min(self.widths["file"], max(6, left - function))
            self.widths["function"] = max(8, left - self.widths["file"])
        self.virtual_size = Size(sum(self.widths.values()) + len(self.widths), len(self.shown) + 1)

    def on_resize(self) -> None:
        if self.rows:
            self._measure()
            self._scroll_to_cursor()
            self.refresh()

    def refresh_row(self, index: int) -> None:
        self.refresh()

    @property
    def current(self) -> int | None:
        return self.shown[self.cursor] if self.shown else None

    def move_cursor(self, position: int) -> None:
        if not self.shown:
            return
        position = max(0, min(position, len(self.shown) - 1))
        changed = position != self.cursor
        self.cursor = position
        self._scroll_to_cursor()
        self.refresh()
        if changed:
            self.post_message(self.Highlighted(self.shown[position]))

    def action_move(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * max(1, self.size.height - 2))

    def on_click(self, event: events.Click) -> None:
        if event.y >= 1:
            self.move_cursor(round(self.scroll_offset.y) + event.y - 1)

    # -- rendering ------------------------------------------------------------------------

    def _cells(self, values: tuple[str, ...], style: Style) -> list[Segment]:
        segments = []
        for name, value in zip(COLUMNS, values, strict=True):
            width = self.widths[name]
            if self.compact and name == "flaky" and value:
                value = "!"  # "flaky" in a one-column flaky column
            if len(value) <= width:
                text = value
            elif name == "file":  # the file's name is what tells two rows apart: keep it
                text = "…" + value[len(value) - width + 1 :]
            else:
                text = value[: width - 1] + "…"
            segments.append(Segment(f"{text:<{width}} ", style))
        return segments

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        scroll_x = round(self.scroll_offset.x)
        if y == 0:
            style = base + self.get_component_rich_style("target-table--header")
            names = tuple(SHORT.get(c, c) for c in COLUMNS) if self.compact else COLUMNS
            strip = Strip(self._cells(names, style))
            return strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, style)
        position = round(self.scroll_offset.y) + y - 1
        if position >= len(self.shown):
            return Strip.blank(width, base)
        index = self.shown[position]
        row = self.rows[index]
        style = base
        if row.state in ("accepted", "rejected"):
            style += self.get_component_rich_style(f"target-table--{row.state}")
        if row.stale:  # figures from before an edit: shown, but not as current
            style += self.get_component_rich_style("target-table--stale")
        if position == self.cursor:
            style += self.get_component_rich_style("target-table--cursor")
        cells = row.cells()
        # ● marked for an action on several; ✎ has a note (the status line shows the last)
        mark = ("●" if index in self.marked else " ") + ("✎" if row.notes else " ")
        strip = Strip(self._cells((mark + cells[0], *cells[1:]), style))
        return strip.crop(scroll_x, scroll_x + width).adjust_cell_length(width, style)
