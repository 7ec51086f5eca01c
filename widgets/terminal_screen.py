"""A VT100/xterm screen emulator built for throughput.

The stream is split with one regular expression into runs of printable text and control
sequences, so Python does work per run, never per character. Runs of ordinary output lines
(printable ASCII and colour codes, each ending in a newline) that arrive while the cursor sits on
the bottom line are not drawn cell by cell at all: they become lazy lines that keep their raw text
and are parsed only if they are ever drawn. A `cat` of a huge file therefore costs a regex split
per line, and only the lines the user scrolls to are ever rendered.

Cells hold one character (a wide character is followed by an empty string) and an attribute
packed into one int: flags in bits 0-7, foreground in bits 8-33, background in bits 34-59, where a
colour is 0 for the default, 1 + n for palette colour n, or 1 << 24 | rgb for true colour.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from itertools import groupby, repeat

from rich.cells import get_character_cell_size
from rich.color import Color
from rich.segment import Segment
from rich.style import Style

BOLD, DIM, ITALIC, UNDERLINE, BLINK, REVERSE, HIDDEN, STRIKE = (1 << n for n in range(8))
# SGR codes that set, and that clear, text attributes.
_SGR_ON = {
    1: BOLD,
    2: DIM,
    3: ITALIC,
    4: UNDERLINE,
    5: BLINK,
    6: BLINK,
    7: REVERSE,
    8: HIDDEN,
    9: STRIKE,
}
_SGR_OFF = {
    22: BOLD | DIM,
    23: ITALIC,
    24: UNDERLINE,
    25: BLINK,
    27: REVERSE,
    28: HIDDEN,
    29: STRIKE,
}
_FG_SHIFT, _BG_SHIFT = 8, 34
_COLOUR_MASK = (1 << 26) - 1
_RGB = 1 << 24
_FG_MASK = _COLOUR_MASK << _FG_SHIFT
_BG_MASK = _COLOUR_MASK << _BG_SHIFT

DEFAULT_SCROLLBACK = 10_000

# One token per match: a run of printable text, a CSI, an OSC, another escape, or one control.
_TOKEN = re.compile(
    r"(?P<text>[^\x00-\x1f\x7f\x1b]+)"
    r"|\x1b\[(?P<priv>[<=>?]?)(?P<params>[0-9;:]*)(?P<inter>[ -/]*)(?P<final>[@-~])"
    r"|\x1b\](?P<osc>[^\x07\x1b]*)(?:\x07|\x1b\\)"
    r"|\x1b(?P<einter>[ -/]*)(?P<efinal>[0-~])"
    r"|(?P<ctrl>[\x00-\x1a\x1c-\x1f\x7f])"
    r"|(?P<stray>\x1b)"
)
# Whole output lines the fast path can take as they are: printable ASCII and SGR codes.
_SIMPLE_BYTES = bytes(range(0x20, 0x7F)) + b"\r\n\x1b"
_SGR_PARAMS = b"0123456789;"
_NOT_SIMPLE = re.compile(r"[^ -~\r\n\x1b]|\x1b(?!\[[0-9;]*m)|\r(?!\r*\n)|(?<!\r)\n")
_CRS_NEWLINE = re.compile(r"\r+\n")
_RESETS = ("\x1b[0m", "\x1b[m")
_FAST_WINDOW = 65536
# After an attempt that took nothing, the next one looks at this much (or four times the line it
# missed on, if longer): a failed attempt costs time in proportion to its window, and output the
# fast path refuses line after line (a tab or a non-ASCII character on every line) would
# otherwise pay a whole window per line (cat -n: 0.05 MB/s where the slow path alone is 0.7).
_FAST_WINDOW_AFTER_A_MISS = 256
_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
# An escape sequence that may still be incomplete at the end of a chunk.
_PARTIAL_TAIL = re.compile(r"\x1b(?:\[[<=>?]?[0-9;:]*[ -/]*|\][^\x07\x1b]*\x1b?|[ -/]*)?\Z")

_DEC_GRAPHICS = str.maketrans(
    {
        "`": "◆", "a": "▒", "f": "°", "g": "±", "j": "┘", "k": "┐", "l": "┌", "m": "└",
        "n": "┼", "o": "⎺", "p": "⎻", "q": "─", "r": "⎼", "s": "⎽", "t": "├", "u": "┤",
        "v": "┴", "w": "┬", "x": "│", "y": "≤", "z": "≥", "{": "π", "|": "≠", "}": "£",
        "~": "·",
    }
)  # fmt: skip


class Line:
    """One row: materialised cells, or (lazily) the raw text it was printed as."""

    __slots__ = ("attrs", "cache", "chars", "raw", "raw_attr", "wrapped")

    def __init__(self, width: int, attr: int = 0) -> None:
        self.chars: list[str] | None = [" "] * width
        self.attrs: list[int] | None = [attr] * width
        self.raw: str | None = None
        self.raw_attr = 0
        self.wrapped = False
        self.cache: object | None = None

    @classmethod
    def lazy(cls, raw: str, attr: int) -> Line:
        line = cls.__new__(cls)
        line.chars = None
        line.attrs = None
        line.raw = raw
        line.raw_attr = attr
        line.wrapped = False
        line.cache = None
        return line

    def materialise(self, width: int) -> None:
        if self.chars is not None:
            return
        chars: list[str] = []
        attrs: list[int] = []
        for text, attr in self._raw_runs():
            chars.extend(text)
            attrs.extend([attr] * len(text))
        pad = width - len(chars)
        if pad > 0:
            chars.extend(" " * pad)
            attrs.extend([0] * pad)
        self.chars, self.attrs = chars[:width], attrs[:width]
        self.raw = None

    def _raw_runs(self) -> Iterator[tuple[str, int]]:
        assert self.raw is not None
        attr = self.raw_attr
        parts = _SGR.split(self.raw)
        for index, part in enumerate(parts):
            if index % 2:
                attr = sgr_step(attr, part)
            elif part:
                yield part, attr

    def runs(self) -> Iterator[tuple[str, int]]:
        """(text, attribute) runs from the left edge."""
        if self.chars is None:
            yield from self._raw_runs()
            return
        assert self.attrs is not None
        chars = self.chars
        index = 0
        for attr, group in groupby(self.attrs):
            size = sum(1 for _ in group)
            yield "".join(chars[index : index + size]), attr
            index += size

    def text(self) -> str:
        return "".join(text for text, _ in self.runs()).rstrip()


_PREFIXES: dict[int, str] = {}
_FLAG_CODES = (1, 2, 3, 4, 5, 7, 8, 9)  # the SGR code that sets each flag bit


def sgr_prefix(attr: int) -> str:
    """An SGR sequence that sets exactly this attribute (for lazy lines that start coloured)."""
    prefix = _PREFIXES.get(attr)
    if prefix is None:
        flags = attr & 0xFF
        codes = ["0"]
        codes += [str(code) for bit, code in enumerate(_FLAG_CODES) if flags & (1 << bit)]
        for base, colour in ((38, fg_of(attr)), (48, bg_of(attr))):
            if colour & _RGB:
                codes.append(
                    f"{base};2;{(colour >> 16) & 0xFF};{(colour >> 8) & 0xFF};{colour & 0xFF}"
                )
            elif colour:
                codes.append(f"{base};5;{colour - 1}")
        prefix = _PREFIXES[attr] = f"\x1b[{';'.join(codes)}m"
    return prefix


_SGR_STEPS: dict[tuple[int, str], int] = {}


def sgr_step(attr: int, params: str) -> int:
    """`apply_sgr`, remembered: a flood repeats a few dozen (attribute, parameters) pairs."""
    key = (attr, params)
    after = _SGR_STEPS.get(key)
    if after is None:
        after = apply_sgr(attr, params)
        if len(params) <= 64:
            if len(_SGR_STEPS) >= 4096:
                _SGR_STEPS.clear()
            _SGR_STEPS[key] = after
    return after


def apply_sgr(attr: int, params: str) -> int:
    """The attribute after a Select Graphic Rendition sequence with these parameters."""
    if not params or params == "0":
        return 0
    flags = attr & 0xFF
    fg = (attr >> _FG_SHIFT) & _COLOUR_MASK
    bg = (attr >> _BG_SHIFT) & _COLOUR_MASK
    codes: list[int | list[int]] = []
    for group in params.split(";"):
        if ":" in group:
            codes.append([int(p) if p else 0 for p in group.split(":")])
        else:
            codes.append(int(group) if group else 0)
    i = 0
    count = len(codes)
    while i < count:
        code = codes[i]
        i += 1
        if isinstance(code, list):
            head = code[0]
            if head in (38, 48) and len(code) >= 3:
                if code[1] == 5:
                    colour = 1 + (code[2] & 0xFF)
                elif code[1] == 2 and len(code) >= 5:
                    r, g, b = code[-3:]
                    colour = _RGB | ((r & 0xFF) << 16) | ((g & 0xFF) << 8) | (b & 0xFF)
                else:
                    continue
                if head == 38:
                    fg = colour
                else:
                    bg = colour
            elif head == 4:
                flags = flags | UNDERLINE if code[-1] else flags & ~UNDERLINE
            continue
        if code == 0:
            flags, fg, bg = 0, 0, 0
        elif 30 <= code <= 37:
            fg = 1 + code - 30
        elif 40 <= code <= 47:
            bg = 1 + code - 40
        elif 90 <= code <= 97:
            fg = 1 + code - 90 + 8
        elif 100 <= code <= 107:
            bg = 1 + code - 100 + 8
        elif code == 39:
            fg = 0
        elif code == 49:
            bg = 0
        elif code in (38, 48):
            colour = -1
            if i < count and codes[i] == 5 and i + 1 < count:
                value = codes[i + 1]
                colour = 1 + (value & 0xFF) if isinstance(value, int) else -1
                i += 2
            elif i < count and codes[i] == 2 and i + 3 < count:
                rgb = codes[i + 1 : i + 4]
                if all(isinstance(v, int) for v in rgb):
                    r, g, b = (int(v) & 0xFF for v in rgb)  # type: ignore[arg-type]
                    colour = _RGB | (r << 16) | (g << 8) | b
                i += 4
            if colour >= 0:
                if code == 38:
                    fg = colour
                else:
                    bg = colour
        elif code in _SGR_ON:
            flags |= _SGR_ON[code]
        elif code in _SGR_OFF:
            flags &= ~_SGR_OFF[code]
    return flags | (fg << _FG_SHIFT) | (bg << _BG_SHIFT)


def _colour(code: int) -> Color | None:
    if code == 0:
        return None
    if code & _RGB:
        return Color.from_rgb((code >> 16) & 0xFF, (code >> 8) & 0xFF, code & 0xFF)
    return Color.from_ansi(code - 1)


_STYLES: dict[int, Style] = {}


def style_for(attr: int) -> Style:
    """The Rich style of a packed attribute (cached: there are few distinct ones)."""
    style = _STYLES.get(attr)
    if style is None:
        flags = attr & 0xFF
        style = Style(
            color=_colour((attr >> _FG_SHIFT) & _COLOUR_MASK),
            bgcolor=_colour((attr >> _BG_SHIFT) & _COLOUR_MASK),
            bold=bool(flags & BOLD) or None,
            dim=bool(flags & DIM) or None,
            italic=bool(flags & ITALIC) or None,
            underline=bool(flags & UNDERLINE) or None,
            blink=bool(flags & BLINK) or None,
            reverse=bool(flags & REVERSE) or None,
            conceal=bool(flags & HIDDEN) or None,
            strike=bool(flags & STRIKE) or None,
        )
        _STYLES[attr] = style
    return style


def fg_of(attr: int) -> int:
    """The packed foreground colour (0 default, 1 + n palette, 1 << 24 | rgb)."""
    return (attr >> _FG_SHIFT) & _COLOUR_MASK


def bg_of(attr: int) -> int:
    return (attr >> _BG_SHIFT) & _COLOUR_MASK


def palette(n: int) -> int:
    """The packed form of palette colour n, for comparisons with fg_of/bg_of."""
    return 1 + n


def rgb(r: int, g: int, b: int) -> int:
    return _RGB | (r << 16) | (g << 8) | b


def line_segments(
    line: Line, width: int, style: Callable[[int], Style] = style_for
) -> list[Segment]:
    """Segments for one row, cut or padded to `width` cells; `style` gives each attribute's
    Rich style (a viewer passes one that already holds its own base style)."""
    segments: list[Segment] = []
    append = segments.append
    used = 0
    for text, attr in line.runs():
        if used >= width:
            break
        if not text.isascii():
            text = _fit(text, width - used)
            size = sum(get_character_cell_size(c) for c in text)
        else:
            text = text[: width - used]
            size = len(text)
        append(Segment(text, style(attr)))
        used += size
    if used < width:
        append(Segment(" " * (width - used), style(0)))
    return segments


def _fit(text: str, cells: int) -> str:
    used = 0
    for index, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > cells:
            return text[:index]
    return text


class TerminalScreen:
    """Screen state of a VT100/xterm-compatible terminal, fed decoded text."""

    def __init__(
        self,
        cols: int = 80,
        rows: int = 24,
        scrollback: int = DEFAULT_SCROLLBACK,
        *,
        fast_path: bool = True,
    ) -> None:
        self.fast_path = fast_path
        self.cols = max(1, cols)
        self.rows = max(1, rows)
        # Lines that scrolled off the top; the fast path stores raw strings (see Line.lazy).
        self.scrollback: deque[Line | str] = deque(maxlen=scrollback)
        self.lines: list[Line] = [Line(self.cols) for _ in range(self.rows)]
        self._main_lines: list[Line] | None = None
        self.alternate = False
        self.x = 0
        self.y = 0
        self.attr = 0
        self.wrap_pending = False
        self.top = 0
        self.bottom = self.rows - 1
        self.autowrap = True
        self.origin_mode = False
        self.insert_mode = False
        self.cursor_visible = True
        self.app_cursor_keys = False
        self.app_keypad = False
        self.bracketed_paste = False
        self.mouse_tracking = False
        self.title = ""
        self.graphics_g0 = False
        self.graphics_g1 = False
        self.shift_out = False
        self.tabstops = set(range(8, 4096, 8))
        self._saved: tuple[int, int, int, bool, bool] = (0, 0, 0, False, False)
        self._saved_main_cursor: tuple[int, int, int, bool, bool] = (0, 0, 0, False, False)
        self._pending = ""
        self.responses: list[str] = []  # replies the host asked for (cursor position, device id)
        self.chars_fed = 0  # every decoded character handed to feed()
        self.dirty: set[int] = set()  # screen rows changed since the last take_dirty()
        self.scrolled = False  # lines moved (scrolling, clears): everything needs a repaint
        self.bell = False
        self.lines_added = 0  # lines pushed into the scrollback, ever

    # -- input ---------------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        """Interpret a chunk of decoded output; an escape sequence cut at the end waits for
        the next chunk."""
        self.chars_fed += len(text)
        if self._pending:
            text = self._pending + text
            self._pending = ""
        tail = _PARTIAL_TAIL.search(text, max(0, len(text) - 256))
        if tail is not None and len(text) - tail.start() < 4096:
            self._pending = text[tail.start() :]
            text = text[: tail.start()]
        self._feed(text)

    def _feed(self, text: str) -> None:
        pos = 0
        end = len(text)
        token = _TOKEN.match
        no_fast_before = 0
        window = _FAST_WINDOW
        while pos < end:
            if (
                pos >= no_fast_before
                and self.fast_path
                and self.x == 0
                and self.y == self.rows - 1
                and not self.wrap_pending
                and self.bottom == self.rows - 1
                and self.top == 0
                and not self.graphics_g0
                and not self.shift_out
                and not self.insert_mode
                and self.autowrap
            ):
                taken = self._append_lines(text, pos, end, window)
                if taken:
                    pos += taken
                    window = min(_FAST_WINDOW, window * 4)
                    continue
                newline = text.find("\n", pos, end)
                no_fast_before = end if newline < 0 else newline + 1
                window = max(_FAST_WINDOW_AFTER_A_MISS, 4 * (no_fast_before - pos))
            match = token(text, pos)
            if match is None:  # unreachable: every character starts some token
                pos += 1
                continue
            pos = match.end()
            kind = match.lastgroup
            if kind == "text":
                self._draw(match.group())
            elif kind == "ctrl":
                self._control(match.group())
            elif kind == "final":
                self._csi(match.group("priv"), match.group("params"), match.group("inter"),
                          match.group("final"))  # fmt: skip
            elif kind == "efinal":
                self._esc(match.group("einter"), match.group("efinal"))
            elif kind == "osc":
                self._osc(match.group("osc"))

    def _append_lines(self, text: str, pos: int, end: int, window: int = _FAST_WINDOW) -> int:
        """The fast path: whole simple lines (printable ASCII and SGR codes, each ending in a
        newline) printed on a blank bottom row scroll up into the scrollback as raw strings.
        Returns how many characters were consumed (0 when the first line does not qualify)."""
        bottom = self.lines[-1]
        if bottom.raw or (
            bottom.chars is not None
            and (bottom.chars.count(" ") != self.cols or any(bottom.attrs or ()))
        ):
            return 0
        # A window bounds the cost of an attempt that ends up taking nothing.
        last = text.rfind("\n", pos, min(end, pos + window))
        if last < 0:
            return 0
        region = text[pos : last + 1]
        # Validate the whole region with C-speed string operations; only when that fails,
        # find the first line that does not qualify with a (slower) regex.
        # Lines must end in CR LF: a bare LF keeps the column, which only the slow path does.
        lines = region.split("\r\n")
        ends = len(lines) - 1
        simple = region.count("\n") == ends == region.count("\r") and region.isascii()
        if simple:
            # Without SGR parameters, every escape must read ESC [ m (an SGR sequence).
            bare = region.encode("ascii").translate(None, _SGR_PARAMS)
            escapes, sgrs = bare.count(b"\x1b"), bare.count(b"\x1b[m")
            simple = escapes == sgrs and not bare.translate(None, _SIMPLE_BYTES)
        if not simple:
            bad = _NOT_SIMPLE.search(region)
            if bad is not None:
                cut = region.rfind("\n", 0, bad.start())
                if cut < 0:
                    return 0
                region = region[: cut + 1]
            crlf_only = region.count("\r") == region.count("\r\n") == region.count("\n")
            if crlf_only:
                lines = region.split("\r\n")
            else:
                lines = _CRS_NEWLINE.sub("\n", region).split("\n")
        lines.pop()
        cols = self.cols
        attr = self.attr
        new: list[str | Line] = []
        if not attr and lines and max(map(len, lines)) <= cols:
            # The usual flood, checked with C-level loops: no line wider than the screen
            # (counting its escapes), each line's colours ended by a reset (or none), so
            # every line starts plain and is kept as it came.
            sgr_at = list(map(str.rfind, lines, repeat("\x1b[")))
            resets = sum(map(str.startswith, lines, repeat(_RESETS), sgr_at))
            if resets + sgr_at.count(-1) == len(lines):
                new = list(lines)
        append = new.append
        for raw in lines[len(new) :]:
            if len(raw) > cols and len(_SGR.sub("", raw)) > cols:
                break
            if new and attr & _BG_MASK:
                break  # the row this line feed brings in is filled with that background
            append(raw if not attr else sgr_prefix(attr) + raw)
            last_sgr = raw.rfind("\x1b[")
            if last_sgr >= 0:
                # Most coloured lines end their last colour with a reset: then the next line
                # starts plain, whatever came before.
                if raw.startswith(_RESETS, last_sgr):
                    attr = 0
                else:
                    cut = max(raw.rfind("\x1b[0m"), raw.rfind("\x1b[m"))
                    if cut >= 0:
                        attr = 0
                    for params in _SGR.findall(raw, max(cut, 0)):
                        attr = sgr_step(attr, params)
        if not new:
            return 0
        if len(new) == len(lines):
            consumed = len(region)
        else:
            consumed = -1
            for _ in range(len(new)):
                consumed = region.find("\n", consumed + 1)
            consumed += 1
        self.attr = attr
        keep = self.rows - 1
        sequence: list[str | Line] = [*self.lines[:-1], *new]
        if len(sequence) > keep:
            overflow = len(sequence) - keep
            self.scrollback.extend(sequence[:overflow])
            self.lines_added += overflow
            del sequence[:overflow]
        screen = [line if isinstance(line, Line) else Line.lazy(line, 0) for line in sequence]
        screen.append(Line(cols, self._erase_attr()))
        self.lines = screen
        self.scrolled = True
        return consumed

    # -- drawing -------------------------------------------------------------------------------

    def _row(self, y: int) -> Line:
        line = self.lines[y]
        if line.chars is None:
            line.materialise(self.cols)
        line.cache = None
        self.dirty.add(y)
        return line

    def _draw(self, text: str) -> None:
        if (self.shift_out and self.graphics_g1) or (not self.shift_out and self.graphics_g0):
            text = text.translate(_DEC_GRAPHICS)
        if not text.isascii():
            self._draw_wide(text)
            return
        cols = self.cols
        attr = self.attr
        while text:
            if self.wrap_pending:
                self._wrap()
            line = self._row(self.y)
            chars, attrs = line.chars, line.attrs
            assert chars is not None and attrs is not None
            x = self.x
            part = text[: cols - x]
            size = len(part)
            if self.insert_mode:
                chars[x:x] = part
                attrs[x:x] = [attr] * size
                del chars[cols:], attrs[cols:]
            else:
                chars[x : x + size] = part
                attrs[x : x + size] = [attr] * size
            text = text[size:]
            if x + size >= cols:
                self.x = cols - 1
                if self.autowrap:
                    self.wrap_pending = True
                else:
                    text = ""
            else:
                self.x = x + size

    def _draw_wide(self, text: str) -> None:
        cols = self.cols
        attr = self.attr
        for char in text:
            width = get_character_cell_size(char)
            if width == 0:
                # A combining mark joins the previous cell.
                line = self._row(self.y)
                assert line.chars is not None
                px = self.x if self.wrap_pending else self.x - 1
                if px >= 0:
                    line.chars[px] += char
                continue
            if self.wrap_pending or self.x + width > cols:
                if self.autowrap:
                    self._wrap()
                else:
                    self.x = cols - width
            line = self._row(self.y)
            chars, attrs = line.chars, line.attrs
            assert chars is not None and attrs is not None
            x = self.x
            if self.insert_mode:
                chars[x:x] = [char] + [""] * (width - 1)
                attrs[x:x] = [attr] * width
                del chars[cols:], attrs[cols:]
            else:
                chars[x] = char
                attrs[x] = attr
                if width == 2 and x + 1 < cols:
                    chars[x + 1] = ""
                    attrs[x + 1] = attr
            if x + width >= cols:
                self.x = cols - 1
                self.wrap_pending = self.autowrap
            else:
                self.x = x + width

    def _wrap(self) -> None:
        self.wrap_pending = False
        self._row(self.y).wrapped = True
        self.x = 0
        self._linefeed()

    def _erase_attr(self) -> int:
        return self.attr & _BG_MASK

    # -- controls ------------------------------------------------------------------------------

    def _control(self, char: str) -> None:
        if char == "\n" or char == "\x0b" or char == "\x0c":
            self.wrap_pending = False
            self._linefeed()
        elif char == "\r":
            self.x = 0
            self.wrap_pending = False
        elif char == "\x08":
            if self.wrap_pending:
                self.wrap_pending = False
            elif self.x > 0:
                self.x -= 1
        elif char == "\t":
            self.x = next((t for t in sorted(self.tabstops) if t > self.x), self.cols - 1)
            self.x = min(self.x, self.cols - 1)
        elif char == "\x07":
            self.bell = True
        elif char == "\x0e":
            self.shift_out = True
        elif char == "\x0f":
            self.shift_out = False

    def _linefeed(self) -> None:
        if self.y == self.bottom:
            self._scroll_up(1)
        elif self.y < self.rows - 1:
            self.y += 1

    def _reverse_index(self) -> None:
        if self.y == self.top:
            self._scroll_down(1)
        elif self.y > 0:
            self.y -= 1

    def _scroll_up(self, count: int) -> None:
        top, bottom = self.top, self.bottom
        count = min(count, bottom - top + 1)
        removed = self.lines[top : top + count]
        del self.lines[top : top + count]
        fill = self._erase_attr()
        for _ in range(count):
            self.lines.insert(bottom - count + 1, Line(self.cols, fill))
        if top == 0 and not self.alternate:
            self.scrollback.extend(removed)
            self.lines_added += len(removed)
        self.scrolled = True

    def _scroll_down(self, count: int) -> None:
        top, bottom = self.top, self.bottom
        count = min(count, bottom - top + 1)
        del self.lines[bottom - count + 1 : bottom + 1]
        fill = self._erase_attr()
        for _ in range(count):
            self.lines.insert(top, Line(self.cols, fill))
        self.scrolled = True

    # -- escape sequences ----------------------------------------------------------------------

    def _esc(self, inter: str, final: str) -> None:
        if inter == "(":
            self.graphics_g0 = final == "0"
        elif inter == ")":
            self.graphics_g1 = final == "0"
        elif inter == "#" and final == "8":
            for y in range(self.rows):
                line = self._row(y)
                line.chars = ["E"] * self.cols
                line.attrs = [0] * self.cols
        elif inter:
            return
        elif final == "7":
            self._save_cursor()
        elif final == "8":
            self._restore_cursor()
        elif final == "D":
            self._linefeed()
        elif final == "E":
            self.x = 0
            self._linefeed()
        elif final == "M":
            self._reverse_index()
        elif final == "H":
            self.tabstops.add(self.x)
        elif final == "c":
            self.reset()
        elif final == "=":
            self.app_keypad = True
        elif final == ">":
            self.app_keypad = False

    def _osc(self, body: str) -> None:
        code, _, value = body.partition(";")
        if code in ("0", "2"):
            self.title = value

    def _csi(self, priv: str, params: str, inter: str, final: str) -> None:
        if inter:
            if inter == "!" and final == "p":
                self.soft_reset()
            return
        args = [int(p) if p.isdigit() else 0 for p in params.replace(":", ";").split(";")]
        first = args[0]
        n = first or 1
        if priv == "?":
            if final in "hl":
                for mode in args:
                    self._dec_mode(mode, final == "h")
            return
        if priv:
            if priv == ">" and final == "c":
                self.responses.append("\x1b[>0;0;0c")
            return
        if final == "m":
            self.attr = sgr_step(self.attr, params)
            return
        self.wrap_pending = False if final not in "nc" else self.wrap_pending
        counted = _COUNTED.get(final)
        if counted is not None:
            counted(self, n)
        elif final in "Hf":
            row = n - 1
            col = (args[1] if len(args) > 1 and args[1] else 1) - 1
            self._goto(row, col)
        elif final == "A":
            self.y = max(self.top if self.y >= self.top else 0, self.y - n)
        elif final in "Be":
            self.y = min(self.bottom if self.y <= self.bottom else self.rows - 1, self.y + n)
        elif final in "Ca":
            self.x = min(self.cols - 1, self.x + n)
        elif final == "D":
            self.x = max(0, self.x - n)
        elif final == "E":
            self.y = min(self.bottom, self.y + n)
            self.x = 0
        elif final == "F":
            self.y = max(self.top, self.y - n)
            self.x = 0
        elif final in "G`":
            self.x = min(self.cols - 1, n - 1)
        elif final == "d":
            self._goto(n - 1, self.x)
        elif final == "J":
            self._erase_display(first)
        elif final == "K":
            self._erase_line(first)
        elif final == "X":
            self._fill(self.y, self.x, min(self.cols, self.x + n))
        elif final == "r":
            top = (first or 1) - 1
            bottom = (args[1] if len(args) > 1 and args[1] else self.rows) - 1
            if 0 <= top < bottom < self.rows:
                self.top, self.bottom = top, bottom
                self._goto(0, 0)
        elif final == "s":
            self._save_cursor()
        elif final == "u":
            self._restore_cursor()
        elif final == "h" or final == "l":
            if 4 in args:
                self.insert_mode = final == "h"
        elif final == "g":
            if first == 3:
                self.tabstops.clear()
            else:
                self.tabstops.discard(self.x)
        elif final == "n":
            if first == 6:
                row = self.y - (self.top if self.origin_mode else 0)
                self.responses.append(f"\x1b[{row + 1};{self.x + 1}R")
            elif first == 5:
                self.responses.append("\x1b[0n")
        elif final == "c" and first == 0:
            self.responses.append("\x1b[?62;22c")

    def _dec_mode(self, mode: int, on: bool) -> None:
        if mode == 1:
            self.app_cursor_keys = on
        elif mode == 6:
            self.origin_mode = on
            self._goto(0, 0)
        elif mode == 7:
            self.autowrap = on
        elif mode == 25:
            self.cursor_visible = on
        elif mode in (47, 1047, 1049):
            if mode == 1049 and on:
                self._saved_main_cursor = self._cursor_state()
            self._set_alternate(on)
            if mode == 1049 and not on:
                self._apply_cursor_state(self._saved_main_cursor)
        elif mode == 1048:
            if on:
                self._save_cursor()
            else:
                self._restore_cursor()
        elif mode == 2004:
            self.bracketed_paste = on
        elif mode in (1000, 1002, 1003):
            self.mouse_tracking = on

    def _set_alternate(self, on: bool) -> None:
        if on == self.alternate:
            return
        if on:
            self._main_lines = self.lines
            self.lines = [Line(self.cols) for _ in range(self.rows)]
        else:
            assert self._main_lines is not None
            self.lines = self._main_lines
            self._main_lines = None
        self.alternate = on
        self.scrolled = True

    def _cursor_state(self) -> tuple[int, int, int, bool, bool]:
        return (self.x, self.y, self.attr, self.origin_mode, self.graphics_g0)

    def _apply_cursor_state(self, state: tuple[int, int, int, bool, bool]) -> None:
        x, y, self.attr, self.origin_mode, self.graphics_g0 = state
        self.x = min(x, self.cols - 1)
        self.y = min(y, self.rows - 1)
        self.wrap_pending = False

    def _save_cursor(self) -> None:
        self._saved = self._cursor_state()

    def _restore_cursor(self) -> None:
        self._apply_cursor_state(self._saved)

    def _goto(self, row: int, col: int) -> None:
        if self.origin_mode:
            row = min(self.bottom, self.top + row)
        self.y = max(0, min(self.rows - 1, row))
        self.x = max(0, min(self.cols - 1, col))
        self.wrap_pending = False

    def _fill(self, y: int, start: int, stop: int) -> None:
        line = self._row(y)
        assert line.chars is not None and line.attrs is not None
        size = stop - start
        if size > 0:
            line.chars[start:stop] = " " * size
            line.attrs[start:stop] = [self._erase_attr()] * size

    def _erase_line(self, mode: int) -> None:
        if mode == 0:
            self._fill(self.y, self.x, self.cols)
        elif mode == 1:
            self._fill(self.y, 0, self.x + 1)
        elif mode == 2:
            self._fill(self.y, 0, self.cols)

    def _erase_display(self, mode: int) -> None:
        if mode == 0:
            self._erase_line(0)
            for y in range(self.y + 1, self.rows):
                self.lines[y] = Line(self.cols, self._erase_attr())
        elif mode == 1:
            self._erase_line(1)
            for y in range(self.y):
                self.lines[y] = Line(self.cols, self._erase_attr())
        elif mode == 2:
            self.lines = [Line(self.cols, self._erase_attr()) for _ in range(self.rows)]
        elif mode == 3:
            self.scrollback.clear()
        self.scrolled = True

    def _insert_chars(self, n: int) -> None:
        line = self._row(self.y)
        assert line.chars is not None and line.attrs is not None
        x = self.x
        line.chars[x:x] = " " * n
        line.attrs[x:x] = [self._erase_attr()] * n
        del line.chars[self.cols :], line.attrs[self.cols :]

    def _delete_chars(self, n: int) -> None:
        line = self._row(self.y)
        assert line.chars is not None and line.attrs is not None
        x = self.x
        n = min(n, self.cols - x)
        del line.chars[x : x + n], line.attrs[x : x + n]
        line.chars.extend(" " * n)
        line.attrs.extend([self._erase_attr()] * n)

    def _insert_lines(self, n: int) -> None:
        if not self.top <= self.y <= self.bottom:
            return
        n = min(n, self.bottom - self.y + 1)
        del self.lines[self.bottom - n + 1 : self.bottom + 1]
        for _ in range(n):
            self.lines.insert(self.y, Line(self.cols, self._erase_attr()))
        self.x = 0
        self.scrolled = True

    def _delete_lines(self, n: int) -> None:
        if not self.top <= self.y <= self.bottom:
            return
        n = min(n, self.bottom - self.y + 1)
        del self.lines[self.y : self.y + n]
        for _ in range(n):
            self.lines.insert(self.bottom - n + 1, Line(self.cols, self._erase_attr()))
        self.x = 0
        self.scrolled = True

    def _repeat(self, n: int) -> None:
        line = self.lines[self.y]
        if line.chars is None:
            return
        x = self.x if self.wrap_pending else self.x - 1
        if x >= 0 and line.chars[x]:
            self._draw(line.chars[x] * min(n, 65535))

    # -- whole-screen operations ---------------------------------------------------------------

    def reset(self) -> None:
        """RIS: everything back to the power-on state except the scrollback and counters."""
        scrollback, chars_fed, lines_added = self.scrollback, self.chars_fed, self.lines_added
        self.__init__(  # type: ignore[misc]
            self.cols, self.rows, scrollback.maxlen or DEFAULT_SCROLLBACK, fast_path=self.fast_path
        )
        self.scrollback = scrollback
        self.chars_fed, self.lines_added = chars_fed, lines_added
        self.scrolled = True

    def soft_reset(self) -> None:
        self.attr = 0
        self.top, self.bottom = 0, self.rows - 1
        self.autowrap = True
        self.origin_mode = False
        self.insert_mode = False
        self.cursor_visible = True
        self.app_cursor_keys = False
        self.graphics_g0 = self.graphics_g1 = self.shift_out = False

    def resize(self, cols: int, rows: int) -> None:
        """Change the size. Lines are cut or padded, not reflowed; when the screen gets shorter,
        blank lines below the cursor go first, then lines above it move to the scrollback."""
        cols, rows = max(1, cols), max(1, rows)
        if cols == self.cols and rows == self.rows:
            return
        self.y -= self._resize_lines(self.lines, cols, rows, self.y, not self.alternate)
        if self._main_lines is not None:
            x, y, *rest = self._saved_main_cursor
            y -= self._resize_lines(self._main_lines, cols, rows, y, True)
            self._saved_main_cursor = (min(x, cols - 1), max(0, min(y, rows - 1)), *rest)  # type: ignore[assignment]
        self.cols, self.rows = cols, rows
        self.top, self.bottom = 0, rows - 1
        self.x = min(self.x, cols - 1)
        self.y = max(0, min(self.y, rows - 1))
        self.wrap_pending = False
        self.scrolled = True

    def _resize_lines(
        self, lines: list[Line], cols: int, rows: int, cursor_y: int, keep: bool
    ) -> int:
        """Resize one screen buffer in place; returns how many lines left from the top."""
        for line in lines:
            line.cache = None
            if line.chars is None:
                continue
            assert line.attrs is not None
            if cols < len(line.chars):
                del line.chars[cols:], line.attrs[cols:]
            else:
                line.chars.extend(" " * (cols - len(line.chars)))
                line.attrs.extend([0] * (cols - len(line.attrs)))
        excess = len(lines) - rows
        while excess > 0 and len(lines) - 1 > cursor_y and not lines[-1].text():
            lines.pop()
            excess -= 1
        removed = 0
        if excess > 0:
            pushed = lines[:excess]
            del lines[:excess]
            removed = excess
            if keep:
                self.scrollback.extend(pushed)
                self.lines_added += len(pushed)
        while len(lines) < rows:
            lines.append(Line(cols))
        return removed

    # -- reading the state ---------------------------------------------------------------------

    def take_dirty(self) -> tuple[bool, set[int]]:
        """(whether lines moved, rows changed) since the last call; resets both."""
        scrolled, dirty = self.scrolled, self.dirty
        self.scrolled = False
        self.dirty = set()
        return scrolled, dirty

    def take_responses(self) -> str:
        replies = "".join(self.responses)
        self.responses.clear()
        return replies

    @property
    def history_size(self) -> int:
        """Lines above the screen that a viewer can scroll to (none on the alternate screen)."""
        return 0 if self.alternate else len(self.scrollback)

    def line_at(self, index: int) -> Line:
        """Line `index` of scrollback + screen, from the oldest scrollback line."""
        history = self.history_size
        if index < history:
            line = self.scrollback[index]
            return line if isinstance(line, Line) else Line.lazy(line, 0)
        return self.lines[index - history]

    def display(self) -> list[str]:
        """The screen as text, one string per row (trailing spaces removed)."""
        return [line.text() for line in self.lines]

    def history_text(self) -> Iterator[str]:
        """The scrollback as text, oldest first."""
        for line in self.scrollback:
            yield line.text() if isinstance(line, Line) else _SGR.sub("", line).rstrip()

    def cell(self, row: int, col: int) -> tuple[str, int]:
        """(character, attribute) of a screen cell."""
        line = self.lines[row]
        line.materialise(self.cols)
        assert line.chars is not None and line.attrs is not None
        return line.chars[col], line.attrs[col]


# CSI sequences that act `n` times (their count, 1 by default) at the cursor.
_COUNTED: dict[str, Callable[[TerminalScreen, int], None]] = {
    "@": TerminalScreen._insert_chars,
    "P": TerminalScreen._delete_chars,
    "L": TerminalScreen._insert_lines,
    "M": TerminalScreen._delete_lines,
    "S": TerminalScreen._scroll_up,
    "T": TerminalScreen._scroll_down,
    "b": TerminalScreen._repeat,
}
