"""The replay timeline: one row per step, drawn with the Line API so only visible rows render.

Rows are events of an `EventSource` (a lazily parsed trajectory); a filter narrows them to a list
of event indices. Rendered rows are kept in an LRU cache of Strips keyed by (event, width), without
the cursor's highlight, which is laid over the one cursor row when it is drawn: moving the cursor
re-renders nothing, and a filter change keeps every row already rendered.
"""

from __future__ import annotations

import bisect
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from simulator.describe import describe_event
from simulator.trajectory import EventSource, TrajectoryError
from widgets.keybindings import default_bindings
from widgets.replay.lines import lean_vertical_scrollbar, paint_lines, scroll_row_into_view

ACTOR_COLOURS = {"human": "green", "agent": "magenta", "system": "blue"}
_CACHE_SIZE = 256
"""Rows kept rendered: about five screens. Strips are several container objects each, which
every full garbage collection walks; a bigger cache made the collections longer than the
rows it saved cost to render again."""


class Timeline(ScrollView, can_focus=True):
    """A scrolling list of steps with a cursor."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("replay_timeline"))

    DEFAULT_CSS = """
    Timeline { background: $surface; overflow-x: hidden; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    @dataclass
    class Selected(Message):
        """The cursor moved to the event at `index` (an index into the source)."""

        index: int

    def __init__(
        self, *, id: str | None = None, on_select: Callable[[int], None] | None = None
    ) -> None:
        """`on_select(index)` is called as the cursor moves, before `Selected` is posted: a
        message reaches the screen only after the timeline's own repaint has been composed, so a
        pane that follows the cursor through it would cost a second frame per move."""
        super().__init__(id=id)
        self.source: EventSource | None = None
        self.rows: array[int] | None = None
        self.on_select = on_select
        self._cache: OrderedDict[tuple[int, int, int, Style], Strip] = OrderedDict()
        self._base = Style()
        self._widths = (0, 0)

    # -- data ------------------------------------------------------------------------------

    def set_source(self, source: EventSource, rows: array[int] | None = None) -> None:
        self.source = source
        self.set_rows(rows)

    def set_rows(self, rows: array[int] | None) -> None:
        """Show only these event indices (None: every event); the cursor keeps its event."""
        current = self.current_index
        self.rows = rows
        self.virtual_size = Size(self.scrollable_content_region.width, self.row_count)
        if current is not None:
            self.cursor = self.row_of(current, nearest=True)
        else:
            self.cursor = 0
        self.refresh()

    def grow(self) -> None:
        """The source has more events than before (it is still being indexed)."""
        if self.rows is None:
            self.virtual_size = Size(self.scrollable_content_region.width, self.row_count)
            self.refresh()

    @property
    def row_count(self) -> int:
        if self.source is None:
            return 0
        return len(self.rows) if self.rows is not None else len(self.source)

    def index_at(self, row: int) -> int:
        return int(self.rows[row]) if self.rows is not None else row

    @property
    def current_index(self) -> int | None:
        if self.source is None or not self.row_count:
            return None
        return self.index_at(max(0, min(self.cursor, self.row_count - 1)))

    def row_of(self, index: int, *, nearest: bool = False) -> int:
        if self.rows is None:
            return index
        row = bisect.bisect_left(self.rows, index)
        if row < len(self.rows) and self.rows[row] == index:
            return row
        return min(row, len(self.rows) - 1) if nearest else -1

    # -- moving ----------------------------------------------------------------------------

    def action_move(self, delta: int) -> None:
        self.go_to_row(self.cursor + delta)

    def action_go_to_row(self, row: int) -> None:
        self.go_to_row(row)

    def action_last(self) -> None:
        self.go_to_row(self.row_count - 1)

    def go_to_row(self, row: int) -> None:
        if not self.row_count:
            return
        self.cursor = max(0, min(row, self.row_count - 1))

    def go_to_index(self, index: int) -> None:
        """Put the cursor on an event (the nearest shown one if the filter hides it)."""
        self.go_to_row(self.row_of(index, nearest=True))

    def watch_cursor(self, old: int, new: int) -> None:
        if not self.scroll_to_region_visible(new):
            # No scrolling: only the two rows whose highlight changed are repainted.
            self.refresh_line(old)
            self.refresh_line(new)
        index = self.current_index
        if index is not None:
            if self.on_select is not None:
                self.on_select(index)
            self.post_message(self.Selected(index))

    def scroll_to_region_visible(self, row: int) -> bool:
        """Scroll so that `row` is visible; True if that scrolled (and so repaints all)."""
        return scroll_row_into_view(self, row)

    async def _on_click(self, event: object) -> None:
        y = getattr(event, "y", None)
        if isinstance(y, int):
            self.go_to_row(int(self.scroll_offset.y) + y)

    # -- drawing ---------------------------------------------------------------------------

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        return lean_vertical_scrollbar(self)

    def render_lines(self, crop: Region) -> list[Strip]:
        # The style and widths are looked up once per frame, not per row.
        self._base = self.rich_style
        self._widths = (self.scrollable_content_region.width, self.size.width)
        return paint_lines(self, crop, self.render_line)

    def render_line(self, y: int) -> Strip:
        row = int(self.scroll_offset.y) + y
        text_width, width = self._widths
        base = self._base
        if self.source is None or row >= self.row_count:
            return Strip.blank(width, base)
        index = self.index_at(row)
        key = (index, text_width, width, base)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(index, text_width, width, base)
            self._cache[key] = strip
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        if row == self.cursor:
            focused = self.has_focus
            strip = strip.apply_style(
                Style(bgcolor="blue", color="white") if focused else Style(reverse=True)
            )
        return strip

    def _render_row(self, index: int, text_width: int, width: int, base: Style) -> Strip:
        """One row, `text_width` cells of text and blank up to `width` (under the scrollbar)."""
        assert self.source is not None
        try:
            event = self.source.event(index)
            seq, t, actor = f"{event.seq:>6}", f"{event.t:>9.2f}s", str(event.actor)
            text = describe_event(event)
            text_style = Style()
            if event.cause is not None:
                text = "  " + text
                text_style = Style(dim=True)
        except TrajectoryError as exc:
            seq, t, actor, text = f"{index + 1:>6}", " " * 10, "-", str(exc)
            text_style = Style(color="red")
        # One Strip built from cell-exact segments: no crop/extend/apply_style passes, each of
        # which would build another Strip.
        head = f"{seq} {t} "[:text_width]
        actor_cell = f"{actor:<7}"[:7][: text_width - len(head)]
        rest = max(0, text_width - len(head) - len(actor_cell))
        segments = [
            Segment(head, base + _DIM),
            Segment(actor_cell, base + _actor_style(actor)),
            Segment(set_cell_size(text.replace("\n", " "), rest), base + text_style),
        ]
        if width > text_width:
            segments.append(Segment(" " * (width - text_width), base))
        return Strip(segments, max(width, text_width))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, self.row_count)


_DIM = Style(dim=True)
_ACTOR_STYLES = {actor: Style(color=colour, bold=True) for actor, colour in ACTOR_COLOURS.items()}


def _actor_style(actor: str) -> Style:
    return _ACTOR_STYLES.get(actor) or Style(color="red", bold=True)
