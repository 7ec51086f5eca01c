"""The replay timeline: one row per step, drawn with the Line API so only visible rows render.

Rows are events of an `EventSource` (a lazily parsed trajectory); a filter narrows them to a list
of event indices. Rendered rows are kept in an LRU cache of Strips keyed by (row, width, cursor).
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from simulator.describe import describe_event
from simulator.replay.index import EventSource
from simulator.trajectory import TrajectoryError

ACTOR_COLOURS = {"human": "green", "agent": "magenta", "system": "blue"}
_CACHE_SIZE = 1024


class Timeline(ScrollView, can_focus=True):
    """A scrolling list of steps with a cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Previous", show=False, id="replay.previous"),
        Binding("down,j", "move(1)", "Next", show=False, id="replay.next"),
        Binding("pageup", "move(-20)", "Page up", show=False, id="replay.page_up"),
        Binding("pagedown", "move(20)", "Page down", show=False, id="replay.page_down"),
        Binding("home,g", "go_to_row(0)", "First", id="replay.first"),
        Binding("end,G", "last", "Last", id="replay.last"),
    ]

    DEFAULT_CSS = """
    Timeline { background: $surface; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    class Selected(Message):
        """The cursor moved to the event at `index` (an index into the source)."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source: EventSource | None = None
        self.rows: array[int] | None = None
        self._cache: OrderedDict[tuple[int, int, bool], Strip] = OrderedDict()

    # -- data ------------------------------------------------------------------------------

    def set_source(self, source: EventSource, rows: array[int] | None = None) -> None:
        self.source = source
        self.set_rows(rows)

    def set_rows(self, rows: array[int] | None) -> None:
        """Show only these event indices (None: every event); the cursor keeps its event."""
        current = self.current_index
        self.rows = rows
        self._cache.clear()
        self.virtual_size = Size(self.size.width, self.row_count)
        if current is not None:
            self.cursor = self.row_of(current, nearest=True)
        else:
            self.cursor = 0
        self.refresh()

    def grow(self) -> None:
        """The source has more events than before (it is still being indexed)."""
        if self.rows is None:
            self.virtual_size = Size(self.size.width, self.row_count)
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
        import bisect

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
        self._forget_row(old)
        self._forget_row(new)
        if not self.scroll_to_region_visible(new):
            # No scrolling: only the two rows whose highlight changed are repainted.
            self.refresh_line(old)
            self.refresh_line(new)
        index = self.current_index
        if index is not None:
            self.post_message(self.Selected(index))

    def scroll_to_region_visible(self, row: int) -> bool:
        """Scroll so that `row` is visible; True if that scrolled (and so repaints all)."""
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)
        else:
            return False
        return True

    def _forget_row(self, row: int) -> None:
        for key in [k for k in self._cache if k[0] == row]:
            del self._cache[key]

    async def _on_click(self, event: object) -> None:
        y = getattr(event, "y", None)
        if isinstance(y, int):
            self.go_to_row(int(self.scroll_offset.y) + y)

    # -- drawing ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        row = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if self.source is None or row >= self.row_count:
            return Strip.blank(width, self.rich_style)
        key = (row, width, row == self.cursor)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(row, width)
            self._cache[key] = strip
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return strip

    def _render_row(self, row: int, width: int) -> Strip:
        assert self.source is not None
        index = self.index_at(row)
        base = self.rich_style
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
        segments = [
            Segment(seq + " ", Style(dim=True)),
            Segment(t + " ", Style(dim=True)),
            Segment(f"{actor:<7}", Style(color=ACTOR_COLOURS.get(actor, "red"), bold=True)),
            Segment(text.replace("\n", " "), text_style),
        ]
        strip = Strip(segments).apply_style(base).crop_extend(0, width, base)
        if row == self.cursor:
            cursor = (
                Style(reverse=True) if not self.has_focus else Style(bgcolor="blue", color="white")
            )
            strip = strip.apply_style(cursor)
        return strip

    def on_focus(self) -> None:
        self._forget_row(self.cursor)
        self.refresh()

    def on_blur(self) -> None:
        self._forget_row(self.cursor)
        self.refresh()

    def on_resize(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, self.row_count)
