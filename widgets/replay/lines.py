"""Handing a Line-API widget's own strips to the compositor as they are.

Textual's default `render_lines` passes every line of a refreshed widget through its styles
cache (padding, borders, tint, opacity, a new Strip per line): for the replay panes, whose every
line changes on a jump, that was most of a frame's cost. The panes below have no border, padding,
tint or opacity, and their strips already carry their background and the full width of the
widget, so only the app's line filters (e.g. monochrome) are applied.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget


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
