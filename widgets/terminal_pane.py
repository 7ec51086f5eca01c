"""The terminal panel: an interactive shell in the session's backend, through a recorded PTY.

Output is decoded incrementally and fed to `TerminalScreen` in the chunks the PTY delivers (never
per character); repaints are coalesced to at most one per frame and only the rows that changed
are refreshed unless lines moved. Lines render through the Line API (`render_line`) with a Strip
cached per line, so a flood costs a parse, not a repaint per line. Input and output are recorded
in the trajectory by the session's `RecordedPty`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from simulator.session import BackendError, RecordedPty, Session, SessionError
from widgets.keybindings import default_bindings
from widgets.terminal_screen import (
    DEFAULT_SCROLLBACK,
    Line,
    TerminalScreen,
    line_segments,
    style_for,
)

_CURSOR_KEYS = {"up": "A", "down": "B", "right": "C", "left": "D", "home": "H", "end": "F"}
_KEYS = {
    "enter": "\r",
    "alt+enter": "\x1b\r",  # keymap.py reads ESC CR as alt+enter: pass it on whole
    "tab": "\t",
    "shift+tab": "\x1b[Z",
    "backspace": "\x7f",
    "ctrl+h": "\x08",
    "escape": "\x1b",
    "delete": "\x1b[3~",
    "insert": "\x1b[2~",
    "pageup": "\x1b[5~",
    "pagedown": "\x1b[6~",
    "f1": "\x1bOP",
    "f2": "\x1bOQ",
    "f3": "\x1bOR",
    "f4": "\x1bOS",
    "f5": "\x1b[15~",
    "f6": "\x1b[17~",
    "f7": "\x1b[18~",
    "f8": "\x1b[19~",
    "f9": "\x1b[20~",
    "f10": "\x1b[21~",
    "f11": "\x1b[23~",
    "f12": "\x1b[24~",
    "ctrl+space": "\x00",
    "ctrl+@": "\x00",
    "ctrl+backslash": "\x1c",
    "ctrl+right_square_bracket": "\x1d",
    "ctrl+circumflex_accent": "\x1e",
    "ctrl+underscore": "\x1f",
}
_MODIFIER_CODES = {
    "shift": 2,
    "alt": 3,
    "shift+alt": 4,
    "ctrl": 5,
    "shift+ctrl": 6,
    "ctrl+shift": 6,
}
# Keys the pane keeps for itself (scrolling the history) instead of sending them to the shell.
_SCROLL_KEYS = {"shift+pageup", "shift+pagedown", "shift+home", "shift+end"}
_EXITED = "\r\n\x1b[2m[the shell has exited; press Enter to start a new one]\x1b[0m"
# The most bytes taken from the PTY in one batch before they are parsed.
_BATCH = 256 * 1024
# Repaints: at most one per frame, and fewer while output floods in: a flood repaints all the
# rows each time, and Textual's styling of a row costs more than parsing the row did.
_FRAME = 1 / 60
_FLOOD_FRAME = 1 / 10
_FLOOD_BYTES = 64 * 1024
"""Output this big since the last repaint, or covered by it, makes the next one a flood's."""


def key_to_bytes(key: str, character: str | None, app_cursor_keys: bool = False) -> bytes | None:
    """The bytes an xterm sends for a Textual key, or None for keys it does not send."""
    if key in _CURSOR_KEYS:
        return (("\x1bO" if app_cursor_keys else "\x1b[") + _CURSOR_KEYS[key]).encode()
    if key in _KEYS:
        return _KEYS[key].encode()
    modifiers, _, base = key.rpartition("+")
    if base in _CURSOR_KEYS and modifiers in _MODIFIER_CODES:
        return f"\x1b[1;{_MODIFIER_CODES[modifiers]}{_CURSOR_KEYS[base]}".encode()
    if modifiers == "ctrl" and len(base) == 1 and base.isalpha():
        return bytes([ord(base.lower()) - 96])
    if modifiers == "alt" and character:
        return b"\x1b" + character.encode("utf-8")
    if character and (character.isprintable() or character == " "):
        return character.encode("utf-8")
    return None


class _RenderPass(NamedTuple):
    """What every row of one render pass shares."""

    base: Style
    width: int
    height: int
    offset: int


class TerminalPane(ScrollView, can_focus=True):
    """A VT100/xterm terminal on the session's PTY, with scrollback, resize, paste and copy."""

    DEFAULT_CSS = """
    TerminalPane {
        height: 1fr;
        background: $background;
        color: $foreground;
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
        overflow-y: scroll;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("terminal"))

    @dataclass
    class Exited(Message):
        """The shell ended (its PTY closed)."""

        pane: TerminalPane

    def __init__(
        self,
        session: Session,
        *,
        scrollback: int = DEFAULT_SCROLLBACK,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.session = session
        self.pty: RecordedPty | None = None
        self.term = TerminalScreen(80, 24, scrollback)
        self.bytes_read = 0  # every byte read from the PTY; all of them are parsed
        self.exited = False
        self._scrollback = scrollback
        self._reader: asyncio.Task[None] | None = None
        self._raw_cache: OrderedDict[tuple[str, int], Strip] = OrderedDict()
        # Rich styles of the attributes drawn, on top of the pane's own style (`_style`).
        self._base_style = Style()
        self._styles: dict[int, Style] = {}
        self._style_generation = 0  # a line's cached strip is valid for one generation
        self._pass: _RenderPass | None = None
        self._update_pending = False
        self._last_update = 0.0
        self._bytes_since_update = 0
        self._bytes_last_update = 0  # the output the last repaint covered
        self._cursor_row = 0
        self._follow = True
        self._selection: tuple[tuple[int, int], tuple[int, int]] | None = None
        self._selecting = False
        self._starting = False
        self._started = False  # the first shell was started (once the pane had its size)

    # -- lifecycle -----------------------------------------------------------------------------

    def on_mount(self) -> None:
        # Once laid out: a shell started before got 10 columns (the pane had no size yet) and
        # printed its first prompt wrapped at that width. Mounted after the first frame (the
        # app's late panes), one refresh is not always enough, so a resize starts it too.
        self.call_after_refresh(self._first_start)

    async def _first_start(self) -> None:
        width, height = self.scrollable_content_region.size
        if self._started or width <= 0 or height <= 0:
            return
        self._started = True
        await self._start()

    def _size_for_pty(self) -> tuple[int, int]:
        width, height = self.scrollable_content_region.size
        return max(width, 10), max(height, 2)

    async def _start(self) -> None:
        if self._starting:
            return
        self._starting = True
        try:
            cols, rows = self._size_for_pty()
            self.term = TerminalScreen(cols, rows, self._scrollback)
            self._raw_cache.clear()
            self.exited = False
            try:
                self.pty = await self.session.open_terminal(cols, rows)
            except (SessionError, BackendError) as error:
                self.exited = True
                self.term.feed(f"\x1b[31mThe terminal could not start: {error}\x1b[0m\r\n")
                self._apply_updates()
                return
            self._reader = asyncio.create_task(self._read_loop(self.pty))
        finally:
            self._starting = False

    async def restart(self) -> None:
        """Close the shell and start a fresh one (the scrollback is cleared)."""
        await self._stop()
        await self._start()
        self.refresh()

    async def _stop(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        pty, self.pty = self.pty, None
        if pty is not None:
            await pty.close()

    async def on_unmount(self) -> None:
        await self._stop()

    async def _read_loop(self, pty: RecordedPty) -> None:
        term = self.term
        pending: asyncio.Future[tuple[bytes, str]] | None = None
        while True:
            # A PTY hands over about 4 KB per read. Whatever else is already waiting is taken
            # in the same batch: bigger batches keep more lines on the emulator's fast path.
            # The text comes decoded by the recorder (which decodes it for the trajectory).
            first, text = await (pending if pending is not None else pty.read_text())
            pending = None
            texts = [text]
            size = last = len(first)
            while last and size < _BATCH:
                pending = asyncio.ensure_future(pty.read_text())
                await asyncio.sleep(0)
                if not pending.done():
                    break
                data, text = pending.result()
                texts.append(text)
                last = len(data)
                size += last
                pending = None
            self.bytes_read += size
            term.feed("".join(texts))
            if term.responses:
                await pty.write(term.take_responses().encode())
            self._schedule_update(size)
            if size >= _BATCH:
                # A full batch may have been read without waiting (output always ready, from
                # the PTY's relay): give way once, or repaints and keys wait for the flood's end.
                await asyncio.sleep(0)
            if not last:
                term.feed(
                    "\r\n\x1b[2m[the shell has exited; press Enter to start a new one]\x1b[0m"
                )
                self.exited = True
                self._schedule_update(0)
                self.post_message(self.Exited(self))
                return

    # -- repaint coalescing --------------------------------------------------------------------

    def _schedule_update(self, size: int) -> None:
        self._bytes_since_update += size
        if self._update_pending:
            return
        self._update_pending = True
        # Under a flood nobody reads a frame in full: fewer frames leave the time to parsing.
        # A flood lasts while each repaint covers that much (batches may each be smaller).
        flooding = max(self._bytes_since_update, self._bytes_last_update) > _FLOOD_BYTES
        frame = _FLOOD_FRAME if flooding else _FRAME
        delay = self._last_update + frame - time.monotonic()
        if delay > 0:
            self.set_timer(delay, self._apply_updates)
        else:
            self.call_later(self._apply_updates)

    def _apply_updates(self) -> None:
        self._update_pending = False
        self._bytes_last_update, self._bytes_since_update = self._bytes_since_update, 0
        self._last_update = time.monotonic()
        term = self.term
        scrolled, dirty = term.take_dirty()
        total = term.history_size + term.rows
        width = self.scrollable_content_region.width
        if self.virtual_size.height != total or self.virtual_size.width != width:
            self.virtual_size = Size(width, total)
        if self._follow:
            target = max(0, total - self.scrollable_content_region.height)
            if self.scroll_offset.y != target:
                self.scroll_to(y=target, animate=False, immediate=True)
                scrolled = True
        if scrolled:
            self._cursor_row = term.y
            self.refresh()
            return
        base = term.history_size
        # The rows where the cursor was and is are repainted too: it may have moved alone.
        for row in dirty | {term.y, self._cursor_row}:
            self.refresh_line(base + row)
        self._cursor_row = term.y

    # -- rendering -----------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        # One pass draws every row: the pane's style, size and offset are read once for all.
        self._pass = self._render_pass()
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def _render_pass(self) -> _RenderPass:
        base = self.rich_style
        if base != self._base_style:
            # A new theme (or style): every strip drawn with the old one is stale.
            self._base_style = base
            self._styles = {}
            self._style_generation += 1
            self._raw_cache.clear()
        region = self.scrollable_content_region
        return _RenderPass(base, region.width, region.height, int(self.scroll_offset.y))

    def _style(self, attr: int) -> Style:
        """An attribute's Rich style on top of the pane's own (what `Strip.apply_style` would
        give), made once per attribute instead of once per segment drawn."""
        style = self._styles.get(attr)
        if style is None:
            style = self._styles[attr] = self._base_style + style_for(attr)
        return style

    def render_line(self, y: int) -> Strip:
        term = self.term
        frame = self._pass or self._render_pass()
        width = frame.width
        index = frame.offset + y
        history = term.history_size
        if index >= history + term.rows:
            return Strip.blank(width, frame.base)
        if index < history:
            stored = term.scrollback[index]
            strip = (
                self._line_strip(stored, width)
                if isinstance(stored, Line)
                else self._raw_strip(stored, width)
            )
        else:
            strip = self._line_strip(term.lines[index - history], width)
        if self._selection is not None:
            strip = self._with_selection(strip, index, width)
        if (
            index == history + term.y
            and term.cursor_visible
            and not self.exited
            and index - frame.offset < frame.height
        ):
            strip = self._with_cursor(strip, min(term.x, width - 1))
        return strip

    def _line_strip(self, line: Line, width: int) -> Strip:
        cached = line.cache
        if isinstance(cached, tuple) and cached[0] == self._style_generation:
            strip: Strip = cached[1]
            if strip.cell_length == width:
                return strip
        strip = Strip(line_segments(line, width, self._style), width)
        line.cache = (self._style_generation, strip)
        return strip

    def _raw_strip(self, raw: str, width: int) -> Strip:
        key = (raw, width)
        strip = self._raw_cache.get(key)
        if strip is None:
            strip = Strip(line_segments(Line.lazy(raw, 0), width, self._style), width)
            self._raw_cache[key] = strip
            if len(self._raw_cache) > 4096:
                self._raw_cache.popitem(last=False)
        return strip

    def _with_cursor(self, strip: Strip, x: int) -> Strip:
        before, cell, after = strip.divide([x, x + 1, strip.cell_length])
        style = Style(reverse=True) if self.has_focus else Style(underline=True)
        segments = list(cell) or [Segment(" ")]
        cell = Strip([Segment(s.text, (s.style or Style()) + style) for s in segments])
        return Strip.join([before, cell, after])

    def _with_selection(self, strip: Strip, index: int, width: int) -> Strip:
        assert self._selection is not None
        (top_row, top_col), (bottom_row, bottom_col) = sorted(self._selection)
        if not top_row <= index <= bottom_row:
            return strip
        start = top_col if index == top_row else 0
        end = bottom_col if index == bottom_row else width
        if end <= start:
            return strip
        before, middle, after = strip.divide([start, end, strip.cell_length])
        return Strip.join([before, middle.apply_style(Style(reverse=True)), after])

    # -- size ----------------------------------------------------------------------------------

    async def on_resize(self, event: events.Resize) -> None:
        if not self._started:
            await self._first_start()
        cols, rows = self._size_for_pty()
        if (cols, rows) == (self.term.cols, self.term.rows):
            return
        self.term.resize(cols, rows)
        self._raw_cache.clear()
        if self.pty is not None:
            with contextlib.suppress(SessionError, BackendError, OSError):
                await self.pty.resize(cols, rows)
        self._apply_updates()

    # -- input ---------------------------------------------------------------------------------

    async def on_key(self, event: events.Key) -> None:
        if event.key in _SCROLL_KEYS:
            return  # handled by the bindings
        if self.exited and event.key == "enter":
            event.stop()
            await self.restart()
            return
        data = key_to_bytes(event.key, event.character, self.term.app_cursor_keys)
        if data is None:
            return
        event.stop()
        event.prevent_default()
        await self.send(data)

    async def send(self, data: bytes) -> None:
        """Type bytes into the shell (jumping back to the bottom of the history)."""
        if self.pty is None or self.exited:
            return
        if not self._follow or self._selection is not None:
            self._follow = True
            self._selection = None
            self._apply_updates()
            self.refresh()
        await self.pty.write(data)

    async def on_paste(self, event: events.Paste) -> None:
        event.stop()
        text = event.text.replace("\r\n", "\r").replace("\n", "\r")
        if self.term.bracketed_paste:
            text = f"\x1b[200~{text}\x1b[201~"
        await self.send(text.encode("utf-8"))

    def action_page_up_history(self) -> None:
        self._follow = False
        self.scroll_to(y=self.scroll_offset.y - self.size.height, animate=False)

    def action_page_down_history(self) -> None:
        self.scroll_to(y=self.scroll_offset.y + self.size.height, animate=False)
        self.call_after_refresh(self._update_follow)

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._follow = False

    def _on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self.call_after_refresh(self._update_follow)

    def _update_follow(self) -> None:
        self._follow = self.scroll_offset.y >= self.max_scroll_y

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new < old:
            self._follow = False
        elif new >= self.max_scroll_y:
            self._follow = True

    # -- selection and copy --------------------------------------------------------------------

    def _cell_at(self, event: events.MouseEvent) -> tuple[int, int]:
        offset = event.get_content_offset(self)
        x, y = (offset.x, offset.y) if offset is not None else (event.x, event.y)
        return self.scroll_offset.y + max(0, y), max(0, x)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if event.button != 1:
            return
        self.focus()
        cell = self._cell_at(event)
        self._selection = (cell, cell)
        self._selecting = True
        self.capture_mouse()
        self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._selecting and self._selection is not None:
            self._selection = (self._selection[0], self._cell_at(event))
            self.refresh()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if not self._selecting:
            return
        self._selecting = False
        self.capture_mouse(False)
        text = self.selected_text()
        if text:
            self.app.copy_to_clipboard(text)
            self.notify(f"Copied {len(text)} characters.", timeout=2)
        else:
            self._selection = None
        self.refresh()

    def select(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        """Select from (line, column) to (line, column) of scrollback + screen; returns the
        text and copies it to the clipboard, as a mouse drag does."""
        self._selection = (start, end)
        text = self.selected_text()
        if text:
            self.app.copy_to_clipboard(text)
        self.refresh()
        return text

    def selected_text(self) -> str:
        if self._selection is None:
            return ""
        (top_row, top_col), (bottom_row, bottom_col) = sorted(self._selection)
        term = self.term
        last = term.history_size + term.rows - 1
        rows: list[str] = []
        for index in range(top_row, min(bottom_row, last) + 1):
            line = term.line_at(index)
            text = "".join(t for t, _ in line.runs())
            start = top_col if index == top_row else 0
            end = bottom_col if index == bottom_row else len(text)
            rows.append(_cells(text, start, end).rstrip())
        return "\n".join(rows)

    # -- for tests and tools -------------------------------------------------------------------

    def screen_text(self) -> list[str]:
        """What the terminal shows, one string per row."""
        return self.term.display()


def _cells(text: str, start: int, end: int) -> str:
    """The characters of `text` between two cell columns (wide characters take two cells)."""
    if text.isascii():
        return text[start:end]
    from rich.cells import get_character_cell_size

    out: list[str] = []
    column = 0
    for char in text:
        width = get_character_cell_size(char)
        if column >= end:
            break
        if column >= start:
            out.append(char)
        column += width
    return "".join(out)
