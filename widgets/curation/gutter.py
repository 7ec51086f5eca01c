"""A read-only source view with branch coverage in the gutter.

Line API: only the rows on screen are rendered, so a 2,000-line file scrolls as fast as a short
one; the marks are a dict looked up per visible row.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

MARK_GLYPH = {"covered": "▌", "partial": "◐", "missed": "✗"}


class CoverageView(ScrollView, can_focus=True):
    """Source text; each measured line marked covered, partly covered (a branch not taken both
    ways) or missed, from the harness run."""

    DEFAULT_CSS = """
    CoverageView { background: $surface; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "coverage--covered",
        "coverage--partial",
        "coverage--missed",
        "coverage--number",
        "coverage--target",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[str] = []
        self.marks: dict[int, str] = {}
        self.span: tuple[int, int] = (0, -1)  # the target's lines, highlighted
        self._width = 4

    def show(self, text: str, marks: dict[int, str], span: tuple[int, int] = (0, -1)) -> None:
        self.lines = text.splitlines()
        self.marks = marks
        self.span = span
        self._width = len(str(len(self.lines))) + 1
        longest = max((len(line) for line in self.lines), default=0)
        self.virtual_size = Size(longest + self._width + 2, len(self.lines))
        self.refresh()

    def set_marks(self, marks: dict[int, str]) -> None:
        self.marks = marks
        self.refresh()

    def mark_of(self, line: int) -> str | None:
        return self.marks.get(line)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        number = index + 1
        mark = self.marks.get(number)
        base = self.rich_style
        number_style = base + self.get_component_rich_style("coverage--number")
        if mark is not None:
            mark_style = base + self.get_component_rich_style(f"coverage--{mark}")
            glyph = MARK_GLYPH[mark]
        else:
            mark_style, glyph = base, " "
        text_style = base
        if self.span[0] <= number <= self.span[1]:
            text_style = base + self.get_component_rich_style("coverage--target")
        code = self.lines[index].expandtabs(4)[scroll_x:]
        segments = [
            Segment(f"{number:>{self._width}}", number_style),
            Segment(glyph, mark_style),
            Segment(" ", base),
            Segment(code, text_style),
        ]
        return Strip(segments).adjust_cell_length(width, Style.null() + base).crop(0, width)
