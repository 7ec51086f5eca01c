"""The step detail pane: a Rich renderable drawn through the Line API.

A `Static` in a scroll container needs a layout pass of the whole screen whenever its height
changes, which is on every step; here the renderable is rendered to strips once per (step, width)
and only this widget repaints. The vertical scrollbar is always shown so that its appearing or
disappearing never changes the layout either. Rendered steps are kept in a small LRU cache (their
syntax highlighting is the costly part), so going back to a step costs nothing but the repaint.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from rich.console import RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from widgets.replay.lines import lean_vertical_scrollbar, paint_lines

_MARGIN = 1


class StepView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    StepView {
        overflow-y: scroll;
        overflow-x: hidden;
    }
    """

    CACHE_SIZE = 8
    """Steps kept rendered: enough to go back and forth between neighbours. Each holds a
    strip per line (several container objects each, which every full garbage collection
    walks), so more costs frames more than it saves."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._make: Callable[[], RenderableType] = lambda: Text("")
        self._key: Hashable = None
        self._strips: list[Strip] = []
        self._width = -1
        self._cache: OrderedDict[tuple[Hashable, int, Style], list[Strip]] = OrderedDict()
        self._blank = Strip.blank(0)

    def show(
        self, renderable: RenderableType | Callable[[], RenderableType], key: Hashable = None
    ) -> None:
        """Show a renderable from the top. With a `key`, `renderable` may be a function that makes
        it: the strips rendered for (key, width) are reused when the same key is shown again."""
        self._make = renderable if callable(renderable) else (lambda: renderable)
        self._key = key
        self._width = -1
        if self.scroll_offset.y:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self._render_strips()
        self.refresh()

    @property
    def text(self) -> str:
        """What the pane shows, as plain text (for tests and copying)."""
        self._render_strips()
        return "\n".join(strip.text[_MARGIN:].rstrip() for strip in self._strips)

    def _render_strips(self) -> None:
        width = max(1, self.scrollable_content_region.width or 80)
        if width == self._width:
            return
        style = self.rich_style
        # The style is in the key: a theme change renders again.
        key = (self._key, width, style)
        cached = self._cache.get(key) if self._key is not None else None
        if cached is None:
            # A one-cell margin each side, and blank under the scrollbar: each strip is the
            # widget's full width, ready for the compositor (see widgets.replay.lines).
            console = self.app.console
            text_width = max(1, width - 2 * _MARGIN)
            options = console.options.update_width(text_width).update(highlight=False)
            lines = console.render_lines(self._make(), options, style=style, pad=True)
            left = [Segment(" " * _MARGIN, style)]
            right = [Segment(" " * (max(width, self.size.width) - text_width - _MARGIN), style)]
            cached = [Strip(left + line + right) for line in lines]
            if self._key is not None:
                self._cache[key] = cached
                if len(self._cache) > self.CACHE_SIZE:
                    self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        self._strips = cached
        self._width = width
        size = Size(width, len(self._strips))
        if size != self.virtual_size:
            # Set without the reactive's layout pass: only this widget's scrollbar changes.
            self.set_reactive(StepView.virtual_size, size)
            self._scroll_update(size)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        return lean_vertical_scrollbar(self)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._render_strips()
        self._blank = Strip.blank(self.size.width, self.rich_style)
        return paint_lines(self, crop, self.render_line)

    def render_line(self, y: int) -> Strip:
        self._render_strips()
        row = int(self.scroll_offset.y) + y
        if 0 <= row < len(self._strips):
            return self._strips[row]
        return self._blank

    def on_resize(self) -> None:
        self._width = -1
        self.refresh()
