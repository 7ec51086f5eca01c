"""The terminal panel: an interactive shell in the session's backend, through a recorded PTY."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import re

from textual import events
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Log

from simulator.session import BackendError, RecordedPty, Session, SessionError

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")

_KEYS = {
    "enter": b"\r",
    "tab": b"\t",
    "backspace": b"\x7f",
    "escape": b"\x1b",
    "up": b"\x1b[A",
    "down": b"\x1b[B",
    "right": b"\x1b[C",
    "left": b"\x1b[D",
    "home": b"\x1b[H",
    "end": b"\x1b[F",
    "delete": b"\x1b[3~",
}


class TerminalPane(Widget, can_focus=True):
    """A shell on the session's PTY (first version: text only)."""

    DEFAULT_CSS = """
    TerminalPane { height: 12; }
    TerminalPane > Log { height: 1fr; }
    """

    def __init__(
        self,
        session: Session,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.session = session
        self.pty: RecordedPty | None = None
        self.bytes_read = 0
        self._reader: asyncio.Task[None] | None = None

    def compose(self) -> ComposeResult:
        yield Log(highlight=False, auto_scroll=True)

    async def on_mount(self) -> None:
        await self._start()

    async def _start(self) -> None:
        cols, rows = max(self.size.width, 20), max(self.size.height, 5)
        try:
            self.pty = await self.session.open_terminal(cols, rows)
        except (SessionError, BackendError) as error:
            self.query_one(Log).write_line(f"The terminal could not start: {error}")
            return
        self._reader = asyncio.create_task(self._read_loop(self.pty))

    async def _read_loop(self, pty: RecordedPty) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        log = self.query_one(Log)
        while True:
            data = await pty.read()
            if not data:
                log.write("\n[the shell has exited]\n")
                return
            self.bytes_read += len(data)
            text = _ESCAPES.sub("", decoder.decode(data)).replace("\r\n", "\n").replace("\r", "")
            log.write(text)

    async def restart(self) -> None:
        await self._stop()
        self.query_one(Log).clear()
        await self._start()

    async def _stop(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        if self.pty is not None:
            await self.pty.close()
            self.pty = None

    async def on_unmount(self) -> None:
        await self._stop()

    async def on_key(self, event: events.Key) -> None:
        if self.pty is None:
            return
        data = _KEYS.get(event.key)
        if data is None and event.character:
            data = event.character.encode("utf-8")
        if data is None:
            return
        event.stop()
        event.prevent_default()
        await self.pty.write(data)
