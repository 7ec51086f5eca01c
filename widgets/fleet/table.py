"""The fleet's table: one line per session, drawn with the Line API.

Textual's DataTable re-renders every visible cell through Rich whenever any cell changes or the
rows are sorted (each `update_cell` bumps one counter every cached cell is keyed by): with 500
live sessions that was ~300 ms of rendering several times a second, and a key press waited
behind it (bench/fleet.py: a sort answered in 305 ms median, p95 926 ms). Here a row is a tuple
of strings turned into one Strip of cell-exact segments, cached by the row's version and the
column widths; an update repaints that row's line only, a sort or a filter re-lays the order
and repaints the visible lines from the cache, and the cursor is a style laid over one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from widgets.keybindings import default_bindings
from widgets.replay.lines import paint_lines, scroll_row_into_view


class Column:
    """A column: its name, the widest it may get, and whether it takes the spare width."""

    def __init__(self, name: str, most: int, *, flexible: bool = False, right: bool = False):
        self.name = name
        self.most = most
        self.flexible = flexible
        self.right = right


class FleetTable(ScrollView, can_focus=True):
    """Rows keyed by session, each a tuple of cell strings and a style for one column."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("fleet_table"))
    DEFAULT_CSS = """
    FleetTable { background: $surface; overflow-x: hidden; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"fleet-table--even"}

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    @dataclass
    class RowSelected(Message):
        """Enter (or a second click) on a row."""

        table: FleetTable
        key: str

        @property
        def control(self) -> FleetTable:
            return self.table

    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self._cells: dict[str, tuple[str, ...]] = {}
        self._styles: dict[str, dict[int, Style]] = {}
        self._versions: dict[str, int] = {}
        self._order: list[str] = []
        self._index: dict[str, int] = {}
        self._natural = [cell_len(column.name) for column in self.columns]
        self._widths: list[int] = []
        self._cache: dict[str, tuple[int, tuple[int, ...], Style, bool, Strip]] = {}
        self._base = Style()
        self._even = Style()
        self.header: Static | None = None
        """A Static above the table that gets the column names, laid out as the rows."""

    # -- data ------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def keys(self) -> list[str]:
        """The row keys in the order shown."""
        return list(self._order)

    def add_row(
        self, key: str, cells: Sequence[str], styles: dict[int, Style] | None = None
    ) -> None:
        """Append a row (the sort puts it in place)."""
        if key in self._cells:
            self.update_row(key, cells, styles)
            return
        self._index[key] = len(self._order)
        self._order.append(key)
        self._set(key, cells, styles)
        self._resized()

    def update_row(
        self, key: str, cells: Sequence[str], styles: dict[int, Style] | None = None
    ) -> None:
        """New cells for a row: its line alone is repainted (all of them if a column widens)."""
        if key not in self._cells:
            return
        self._set(key, cells, styles)
        if not self._widen(self._cells[key]):
            self.refresh_line(self._index[key])

    def remove_row(self, key: str) -> None:
        if key not in self._cells:
            return
        del self._cells[key], self._styles[key], self._versions[key]
        self._cache.pop(key, None)
        self._order.remove(key)
        self._reindex()
        self._resized()

    def clear(self) -> None:
        self._cells.clear()
        self._styles.clear()
        self._versions.clear()
        self._cache.clear()
        self._order.clear()
        self._index.clear()
        self._resized()

    def sort(self, key: Callable[[str], Any]) -> None:
        """Order the rows by `key(row key)`; the cursor stays on its session."""
        current = self.cursor_key
        self._order.sort(key=key)
        self._reindex()
        if current is not None:
            self.set_reactive(FleetTable.cursor, self._index[current])
            self._scroll_to_cursor()
        self.refresh()

    def get_cell(self, key: str, column: str) -> str:
        names = [c.name for c in self.columns]
        return self._cells[key][names.index(column)]

    def get_row_index(self, key: str) -> int:
        return self._index[key]

    @property
    def cursor_key(self) -> str | None:
        if not self._order:
            return None
        return self._order[max(0, min(self.cursor, len(self._order) - 1))]

    def move_cursor(self, *, row: int) -> None:
        self.go(row)

    def _set(self, key: str, cells: Sequence[str], styles: dict[int, Style] | None) -> None:
        self._cells[key] = tuple(cells)
        self._styles[key] = styles or {}
        self._versions[key] = self._versions.get(key, 0) + 1
        self._widen(self._cells[key])

    def _reindex(self) -> None:
        self._index = {key: n for n, key in enumerate(self._order)}

    def _widen(self, cells: tuple[str, ...]) -> bool:
        """Columns only grow (to their `most`): rows do not jump as values come and go."""
        grew = False
        for n, (column, text) in enumerate(zip(self.columns, cells, strict=True)):
            want = min(column.most, cell_len(text))
            if want > self._natural[n]:
                self._natural[n] = want
                grew = True
        if grew:
            self._layout()
            self.refresh()
        return grew

    def _layout(self) -> None:
        """Columns at their natural width; the flexible one takes what the others leave (at
        least 10 cells), so a narrow terminal shortens the last action, not the other columns."""
        width = max(1, self.scrollable_content_region.width)
        widths = list(self._natural)
        flexible = [n for n, c in enumerate(self.columns) if c.flexible]
        others = [n for n in range(len(widths)) if n not in flexible]
        # Too narrow for every column: the widest others give up cells first (down to 6).
        over = sum(widths[n] + 2 for n in others) + 12 * len(flexible) - width
        while over > 0:
            widest = max(others, key=lambda n: widths[n])
            if widths[widest] <= 6:
                break
            widths[widest] -= 1
            over -= 1
        fixed = sum(widths[n] + 2 for n in others)
        for n in flexible:
            widths[n] = max(10, (width - fixed) // len(flexible) - 2)
        self._widths = widths
        self._cache.clear()
        if self.header is not None:
            self.header.update(self._header_text())

    def _header_text(self) -> str:
        return "".join(
            " " + set_cell_size(c.name, w) + " "
            for c, w in zip(self.columns, self._widths, strict=True)
        )

    def _resized(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self._order))
        if self.cursor >= len(self._order):
            self.set_reactive(FleetTable.cursor, max(0, len(self._order) - 1))
        self.refresh()

    # -- moving ----------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        self.go(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.go(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_go(self, row: int) -> None:
        self.go(row)

    def action_last(self) -> None:
        self.go(len(self._order) - 1)

    def action_select(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.RowSelected(self, key))

    def go(self, row: int) -> None:
        if self._order:
            self.cursor = max(0, min(row, len(self._order) - 1))

    def watch_cursor(self, old: int, new: int) -> None:
        if not self._scroll_to_cursor():
            self.refresh_line(old)
            self.refresh_line(new)

    def _scroll_to_cursor(self) -> bool:
        return scroll_row_into_view(self, self.cursor)

    async def _on_click(self, event: Click) -> None:
        row = int(self.scroll_offset.y) + event.y
        if row == self.cursor and event.chain >= 2:
            self.action_select()
        self.go(row)

    # -- drawing ---------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._base = self.rich_style
        self._even = self.get_component_rich_style("fleet-table--even", partial=True)
        if not self._widths:
            self._layout()
        return paint_lines(self, crop, self.render_line)

    def render_line(self, y: int) -> Strip:
        row = int(self.scroll_offset.y) + y
        width = self.size.width
        if row >= len(self._order):
            return Strip.blank(width, self._base)
        key = self._order[row]
        even = row % 2 == 1
        widths = tuple(self._widths)
        cached = self._cache.get(key)
        if cached is not None and cached[:4] == (self._versions[key], widths, self._base, even):
            strip = cached[4]
        else:
            strip = self._render_row(key, widths, width, even)
            self._cache[key] = (self._versions[key], widths, self._base, even, strip)
        if row == self.cursor:
            strip = strip.apply_style(
                Style(bgcolor="blue", color="white", bold=True)
                if self.has_focus
                else Style(reverse=True)
            )
        return strip

    def _render_row(self, key: str, widths: tuple[int, ...], width: int, even: bool) -> Strip:
        base = self._base + self._even if even else self._base
        styles = self._styles[key]
        segments = []
        used = 0
        for n, (column, text, cells) in enumerate(
            zip(self.columns, self._cells[key], widths, strict=True)
        ):
            text = text.replace("\n", " ")
            if column.right:
                text = text.rjust(cells)
            cell = " " + set_cell_size(text, cells) + " "
            style = styles.get(n)
            segments.append(Segment(cell, base + style if style is not None else base))
            used += cells + 2
        if used < width:
            segments.append(Segment(" " * (width - used), base))
        strip = Strip(segments, max(used, width))
        return strip.crop(0, width) if used > width else strip

    def on_focus(self) -> None:
        self.refresh_line(self.cursor)

    def on_blur(self) -> None:
        self.refresh_line(self.cursor)

    def on_resize(self) -> None:
        self._layout()
        self._resized()
