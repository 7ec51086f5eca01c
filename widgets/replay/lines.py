"""Handing a Line-API widget's own strips to the compositor as they are.

Textual's default `render_lines` passes every line of a refreshed widget through its styles
cache (padding, borders, tint, opacity, a new Strip per line): for the replay panes, whose every
line changes on a jump, that was most of a frame's cost. The panes below have no border, padding,
tint or opacity, and their strips already carry their background and the full width of the
widget, so only the app's line filters (e.g. monochrome) are applied.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget


def scroll_row_into_view(view: ScrollView, row: int) -> bool:
    """Scroll a one-line-a-row view so that `row` is visible; True if that scrolled (and so
    repaints every line), False if it was visible already (repaint only what changed)."""
    top = int(view.scroll_offset.y)
    height = max(1, view.scrollable_content_region.height)
    if row < top:
        view.scroll_to(y=row, animate=False, immediate=True)
    elif row >= top + height:
        view.scroll_to(y=row - height + 1, animate=False, immediate=True)
    else:
        return False
    return True


def paint_lines(widget: Widget, crop: Region, render_line: Callable[[int], Strip]) -> list[Strip]:
    """The lines of `crop` (widget coordinates) from `render_line`, with the app's filters.

    The compositor gets new strips, never the ones the panes cache: a strip it cuts keeps
    itself in its own cache (`Strip.divide`), a reference cycle. Cached strips that had been
    cut were garbage only a full collection could free once evicted, and those collections
    were the slowest jumps; copies handed over die young, and the cached ones are freed by
    reference counting. Filters are applied to the copies without being cached."""
    filters = widget.get_line_filters()
    background = widget.background_colors[1] if filters else None
    strips = []
    for y in crop.line_range:
        strip = render_line(y)
        segments = list(strip)
        for f in filters:
            assert background is not None
            segments = f.apply(segments, background)
        strips.append(Strip(segments, strip.cell_length))
    x1, x2 = crop.column_span
    if x1 or x2 != widget.size.width:
        strips = [strip.crop(x1, x2) for strip in strips]
    return strips


class LeanScrollBar(ScrollBar):
    """Textual's scroll bar, its rows made straight from the bar's segments.

    A jump moves the timeline's bar and resizes the step pane's, so both repaint in every
    frame; through the styles pass every widget line goes through they cost more than the
    two panes' own rows (2-3 ms each of a ~12 ms frame)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        renderable = self.render()
        if not isinstance(renderable, ScrollBarRender) or not self.vertical:
            return super().render_lines(crop)
        width, height = self.size
        style = renderable.style if isinstance(renderable.style, Style) else Style()
        bar = ScrollBarRender.render_bar(
            size=height,
            virtual_size=renderable.virtual_size,
            window_size=renderable.window_size,
            position=renderable.position,
            thickness=width,
            vertical=True,
            back_color=style.bgcolor or Color.parse("#555555"),
            bar_color=style.color or Color.parse("bright_magenta"),
        )
        base = self.rich_style
        rows = [
            Strip([Segment(segment.text, base + segment.style)], width) for segment in bar.segments
        ]
        return paint_lines(self, crop, lambda y: rows[y] if y < len(rows) else Strip.blank(width))


def lean_vertical_scrollbar(widget: Widget) -> ScrollBar:
    """The widget's vertical scroll bar, created as a LeanScrollBar (as Textual's
    `Widget.vertical_scrollbar` creates its own)."""
    if widget._vertical_scrollbar is None:
        bar = LeanScrollBar(
            vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical
        )
        bar.display = False
        widget._vertical_scrollbar = bar
        widget.app._start_widget(widget, bar)
    return widget._vertical_scrollbar
