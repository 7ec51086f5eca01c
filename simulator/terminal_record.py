"""Recording the terminal pane: what is typed, as lines, and what is shown, in bursts.

Keys reach the shell as they are typed, but the trajectory gets one `terminal.input` event per
entered line (Enter, or a key that ends the line: Ctrl+C, Ctrl+D, Ctrl+Z) or per pause in typing
(a full-screen program's keys, a line left unfinished), not one per key. Its `data` is the exact
text sent, keys joined in order (bytes that are not UTF-8 kept exact by the trajectory writer's
`raw`), so re-execution types the same bytes; `line` is the command line as it reads on screen.

Output read within `OUTPUT_BATCH` seconds of the first unrecorded chunk becomes one event: a
program's one burst (a prompt written in three calls, a screenful of `cat`) is one step in the
trajectory however the kernel happened to split it. While a line is being typed, its echo waits
with the rest of the output and is recorded after the line, so the trajectory reads: the command,
then what the terminal showed.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from typing import Protocol

from backends.base import Pty
from simulator.events import (
    Actor,
    DataPayload,
    Event,
    Kind,
    Payload,
    TerminalInputPayload,
    TerminalSizePayload,
)


class Recorder(Protocol):
    """Where the terminal's events go: a session's `emit` (simulator.session.Session is one)."""

    @property
    def closed(self) -> bool: ...

    def emit(self, actor: Actor, kind: Kind, data: Payload, cause: int | None = None) -> Event: ...


LINE_ENDS = b"\r\n\x03\x04\x1a"
"""Keys that end what is typed on a line: Enter (CR, or LF from a paste or a script), Ctrl+C,
Ctrl+D and Ctrl+Z."""

_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|[^\[O])?")
_KEY_NAMES = {
    "\x1b[A": "↑",
    "\x1b[B": "↓",
    "\x1b[C": "→",
    "\x1b[D": "←",
    "\x1bOA": "↑",
    "\x1bOB": "↓",
    "\x1bOC": "→",
    "\x1bOD": "←",
    "\x1b[H": "⇱",
    "\x1b[F": "⇲",
    "\x1b": "Esc",
}


def readable_keys(data: str) -> str:
    """Typed text as it reads: printable text as is, Backspace (and Ctrl+U, Ctrl+W) applied to
    what precedes it, Enter as ⏎, other control keys as ^X, arrows as arrows.

    It does not know what the shell did with them (a Tab completed, ↑ recalled history)."""
    out: list[str] = []
    position = 0
    while position < len(data):
        char = data[position]
        if char == "\x1b":
            match = _ESCAPE.match(data, position)
            assert match is not None  # the pattern matches a lone ESC too
            sequence = match.group()
            out.append(_KEY_NAMES.get(sequence, "⎋"))
            position = match.end()
            continue
        position += 1
        if char in "\x7f\x08":
            if out and len(out[-1]) == 1 and out[-1] >= " ":
                out.pop()
        elif char == "\x15":  # Ctrl+U: the line so far
            while out and len(out[-1]) == 1 and out[-1] >= " ":
                out.pop()
        elif char == "\x17":  # Ctrl+W: the word before the cursor
            while out and out[-1] == " ":
                out.pop()
            while out and len(out[-1]) == 1 and out[-1] > " ":
                out.pop()
        elif char in "\r\n":
            out.append("⏎")
        elif char == "\t":
            out.append("⇥")
        elif char < " ":
            out.append(f"^{chr(ord(char) + 64)}")
        else:
            out.append(char)
    return "".join(out)


def command_line(data: str) -> str | None:
    """The command a line typed with Enter runs, as it reads on screen; None when the keys did
    not end with Enter or left nothing on the line."""
    if not data.endswith(("\r", "\n")):
        return None
    line = readable_keys(data[:-1]).replace("⏎", " ").strip()
    return line or None


class RecordedPty:
    """A backend PTY whose traffic is recorded as terminal events (see the module's note)."""

    OUTPUT_BATCH = 0.05
    INPUT_PAUSE = 1.0
    """Seconds without a key after which an unfinished line is recorded as it stands."""
    INPUT_MAX = 4096
    """Bytes typed without a line end after which they are recorded (a long paste)."""

    def __init__(self, session: Recorder, pty: Pty) -> None:
        self.session = session
        self._pty = pty
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: list[str] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._typed = bytearray()
        """Keys sent to the shell and not yet recorded."""
        self._line = b""
        """Keys of the current line already recorded (at a pause): the command line to name."""
        self._pause_handle: asyncio.TimerHandle | None = None

    async def read(self) -> bytes:
        return (await self.read_text())[0]

    async def read_text(self) -> tuple[bytes, str]:
        """The output read (b"" at the end) and its text: the stream decoded as UTF-8, what is
        not UTF-8 as U+FFFD, a character split across reads given whole with the later read.
        A reader that shows the text takes it from here rather than decoding it again."""
        data = await self._pty.read()
        text = self._decoder.decode(data, final=not data)
        if text:
            self._pending.append(text)
            # While a line is being typed its echo waits for the line (see _record_typed).
            if self._flush_handle is None and not self._typed:
                self._schedule_output()
        if not data:
            self.flush()
        return data, text

    def _schedule_output(self) -> None:
        loop = asyncio.get_running_loop()
        self._flush_handle = loop.call_later(self.OUTPUT_BATCH, self._record_output)

    def flush(self) -> None:
        """Record what was typed and the output read so far (typed first: output held back
        while a line was typed came after its first key)."""
        self._record_typed()
        self._record_output()

    def _record_output(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._pending and not self.session.closed:
            self.session.emit(
                Actor.HUMAN, Kind.TERMINAL_OUTPUT, DataPayload("".join(self._pending))
            )
        self._pending.clear()

    async def write(self, data: bytes) -> None:
        if not self._typed:
            self._record_output()  # shown before this key: recorded before it
        self._typed += data
        last_end = max(self._typed.rfind(bytes([b])) for b in LINE_ENDS)
        if last_end >= 0:
            # Each entered line is an event of its own; what follows the last end waits.
            self._record_typed(upto=last_end + 1)
        if len(self._typed) >= self.INPUT_MAX:
            self._record_typed()
        if self._pause_handle is not None:
            self._pause_handle.cancel()
            self._pause_handle = None
        if self._typed:
            loop = asyncio.get_running_loop()
            self._pause_handle = loop.call_later(self.INPUT_PAUSE, self._record_typed)
        await self._pty.write(data)

    def _record_typed(self, upto: int | None = None) -> None:
        """Record the keys typed so far (the first `upto` bytes): an event per entered line,
        then one for what is left."""
        if upto is None:
            if self._pause_handle is not None:
                self._pause_handle.cancel()
                self._pause_handle = None
            upto = len(self._typed)
        typed = bytes(self._typed[:upto])
        del self._typed[:upto]
        start = 0
        while start < len(typed) and not self.session.closed:
            ends = [i for b in LINE_ENDS if (i := typed.find(bytes([b]), start)) >= 0]
            stop = min(ends) + 1 if ends else len(typed)
            chunk = typed[start:stop]
            line = None
            if ends:
                if chunk[-1:] in (b"\r", b"\n"):
                    # The whole line, typed across pauses too.
                    line = command_line(_text(self._line + chunk))
                self._line = b""
            else:
                self._line += chunk
            self.session.emit(
                Actor.HUMAN, Kind.TERMINAL_INPUT, TerminalInputPayload(_text(chunk), line)
            )
            start = stop
        if not self._typed and self._pending and self._flush_handle is None:
            # The echo held back while the line was typed, with the command's first output.
            self._schedule_output()

    async def resize(self, cols: int, rows: int) -> None:
        await self._pty.resize(cols, rows)
        self.flush()  # output drawn at the old size goes before the change
        self.session.emit(Actor.HUMAN, Kind.TERMINAL_SIZE, TerminalSizePayload(cols, rows))

    async def close(self) -> None:
        self.flush()
        await self._pty.close()

    @property
    def closed(self) -> bool:
        return self._pty.closed

    @property
    def output_pending(self) -> bool:
        """Output was read and is not recorded yet (it is, at the latest, OUTPUT_BATCH later)."""
        return bool(self._pending)


def _text(data: bytes) -> str:
    """Typed bytes as text; bytes that are not UTF-8 are kept (surrogateescape), which the
    trajectory writer stores exactly."""
    return data.decode("utf-8", "surrogateescape")
