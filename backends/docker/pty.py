"""The terminal pane's shell: an interactive bash on a TTY exec inside the container."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Mapping
from typing import Any

from backends.base import BackendError, Pty
from backends.docker.channel import PID_MARKER, WORKSPACE
from backends.docker.programs import program_text
from backends.docker.reaper import Reaper
from backends.docker.stream import READ_CHUNK, ExecStream, blocking


class DockerPty(Pty):
    """An interactive bash on a terminal inside the container (exec with tty=True)."""

    def __init__(
        self, api: Any, stream: ExecStream, pid: int, reaper: Callable[[], Reaper | None]
    ) -> None:
        self._api = api
        self._stream = stream
        self._pid = pid
        self._reaper = reaper
        self._closed = False
        self._pending = b""

    @classmethod
    async def spawn(
        cls,
        api: Any,
        container: str,
        user: str,
        env: Mapping[str, str],
        reaper: Callable[[], Reaper | None],
        cols: int,
        rows: int,
    ) -> DockerPty:
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        script = program_text("identity.sh") + program_text("pty_start.sh")
        stream = await ExecStream.open(
            api, container, ["bash", "-c", script], tty=True, user=user, workdir=WORKSPACE,
            environment=env,
        )  # fmt: skip
        await stream.write(b"go\n")
        buf = b""
        while not (match := PID_MARKER.search(buf.replace(b"\r\n", b"\n"))):
            chunk = await asyncio.wait_for(stream.reader.read(READ_CHUNK), 30)
            if not chunk:
                raise BackendError("The terminal in the container closed at once.")
            buf += chunk
        pty = cls(api, stream, int(match.group(1)), reaper)
        marker_end = buf.find(b"\x1e", buf.find(b"\x1ePID:") + 1) + 1
        pty._pending = buf[marker_end:].lstrip(b"\r\n")
        await pty.resize(cols, rows)
        return pty

    async def read(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        if self._closed:
            return b""
        try:
            data = await self._stream.reader.read(READ_CHUNK)
        except ConnectionError:
            data = b""
        if not data:
            self._closed = True
        return data

    async def write(self, data: bytes) -> None:
        if not self._closed:
            await self._stream.write(data)

    async def resize(self, cols: int, rows: int) -> None:
        if self._closed:
            return
        with contextlib.suppress(Exception):
            await blocking(self._api.exec_resize, self._stream.exec_id, height=rows, width=cols)

    async def stop_foreground(self) -> None:
        """Stop what the terminal is running, as Ctrl+C would (a loop in the shell itself ends
        too), then kill what ignored it; the shell stays. Says why in the terminal's output."""
        # Queued before the Ctrl+C, so it follows the shell's reaction to it (the `^C` and a new
        # prompt wake a waiting reader). It is output, never typed into the shell.
        self._pending += b"\r\nreposim: the session wrote more than its disk limit.\r\n"
        await self.write(b"\x03")
        await asyncio.sleep(0.2)
        reaper = self._reaper()
        if reaper is not None:
            with contextlib.suppress(BackendError, TimeoutError):
                await reaper.kill(signal.SIGKILL, self._pid)

    async def close(self) -> None:
        if self._closed and self._stream.writer.is_closing():
            return
        self._closed = True
        reaper = self._reaper()
        if reaper is not None:
            with contextlib.suppress(BackendError, TimeoutError):
                await reaper.kill(signal.SIGHUP, self._pid, tree=True)
                await reaper.kill(signal.SIGKILL, self._pid, tree=True)
        await self._stream.close()

    @property
    def closed(self) -> bool:
        return self._closed
