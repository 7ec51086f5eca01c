"""The step detail pane: a Rich renderable drawn through the Line API.

A `Static` in a scroll container needs a layout pass of the whole screen whenever its height
changes, which is on every step; here the renderable is rendered to strips once per (step, width)
and only this widget repaints. The vertical scrollbar is always shown so that its appearing or
disappearing never changes the layout either.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class StepView(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    StepView {
        overflow-y: scroll;
        overflow-x: hidden;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._renderable: RenderableType = Text("")
        self._strips: list[Strip] = []
        self._width = -1

    def show(self, renderable: RenderableType) -> None:
        self._renderable = renderable
        self._width = -1
        self.scroll_to(0, 0, animate=False, immediate=True)
        self._render_strips()
        self.refresh()

    @property
    def text(self) -> str:
        """What the pane shows, as plain text (for tests and copying)."""
        self._render_strips()
        return "\n".join(strip.text.rstrip() for strip in self._strips)

    def _render_strips(self) -> None:
        width = max(1, self.scrollable_content_region.width or 80)
        if width == self._width:
            return
        console = self.app.console
        options = console.options.update_width(width).update(highlight=False)
        lines = console.render_lines(self._renderable, options, style=self.rich_style, pad=True)
        self._strips = [Strip(line, width) for line in lines]
        self._width = width
        size = Size(width, len(self._strips))
        if size != self.virtual_size:
            # Set without the reactive's layout pass: only this widget's scrollbar changes.
            self.set_reactive(StepView.virtual_size, size)
            self._scroll_update(size)

    def render_line(self, y: int) -> Strip:
        self._render_strips()
        row = int(self.scroll_offset.y) + y
        if 0 <= row < len(self._strips):
            return self._strips[row]
        return Strip.blank(self._width, self.rich_style)

    def on_resize(self) -> None:
        self._width = -1
        self.refresh()
