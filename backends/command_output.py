"""Each command's output on a channel of its own: FIFOs read on this process's event loop.

The persistent shell used to hand every command its own stdout, so a background job that a
command left running (a fork bomb's "fork: retry" lines, a server's log) wrote into whatever
command ran next (issue 25). Here the shell opens, for each command, a FIFO this process made
and reads; the command's frame follows its output there. Once the frame is read the FIFO is
retired: what the command's leftover processes still write to it is read apart and thrown away,
at a trickle (a process that prints without pause must not spin this event loop), and the next
command gets the FIFO made ready beside it, so starting a command costs no round trip.

The shell's own stdout is read too: its end tells that the shell died, and anything it prints
there (nothing, normally) is passed on as output.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

_F_SETPIPE_SZ = 1031
_PIPE_SIZE = 1 << 20
_READ = 1 << 18
_PAUSE_ABOVE = 4 << 20
"""Stop reading while this much output waits to be taken (the reader is behind)."""
LEFTOVER_PACE = 0.05
"""A retired FIFO is read at most once per this many seconds (64 KiB each time)."""


class _Fifo:
    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path, 0o600)
        self.read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self._read_closed = False
        # Held open until the FIFO is retired: without a writer a read says end of file, and
        # the shell opens its end only when the command starts.
        self.keep_fd: int | None = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.read_fd, _F_SETPIPE_SZ, _PIPE_SIZE)

    def release_writer(self) -> None:
        if self.keep_fd is not None:
            os.close(self.keep_fd)
            self.keep_fd = None

    def close(self) -> None:
        """Idempotent: a second os.close could close a descriptor that reused the number."""
        self.release_writer()
        if not self._read_closed:
            self._read_closed = True
            with contextlib.suppress(OSError):
                os.close(self.read_fd)


class CommandOutputs:
    """The FIFOs of one shell: the running command's, the next one's, and retired ones."""

    def __init__(self, parent: Path, shell_stdout: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._dir = Path(tempfile.mkdtemp(prefix="out-", dir=parent))
        self._seq = 0
        self._buffer = bytearray()
        self._wake = asyncio.Event()
        self._eof = False
        self._paused = False
        self._closed = False
        self._retired: dict[int, _Fifo] = {}
        self._pending: dict[int, asyncio.TimerHandle] = {}
        self._stdout = shell_stdout
        os.set_blocking(shell_stdout, False)
        self._current = self._make()
        self._next = self._make()
        self._watch()

    def _make(self) -> _Fifo:
        self._seq += 1
        return _Fifo(self._dir / str(self._seq))

    @property
    def directory(self) -> str:
        return str(self._dir)

    @property
    def name(self) -> str:
        """The name (in `directory`) of the FIFO the next command writes to."""
        return self._current.path.name

    def _watch(self) -> None:
        self._loop.add_reader(self._current.read_fd, self._on_current)
        self._loop.add_reader(self._stdout, self._on_stdout)

    def _unwatch(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self._current.read_fd)
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self._stdout)

    def _take(self, data: bytes) -> None:
        self._buffer += data
        self._wake.set()
        if len(self._buffer) > _PAUSE_ABOVE and not self._paused:
            self._paused = True
            self._unwatch()

    def _on_current(self) -> None:
        try:
            data = os.read(self._current.read_fd, _READ)
        except BlockingIOError:
            return
        if data:
            self._take(data)

    def _on_stdout(self) -> None:
        try:
            data = os.read(self._stdout, _READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._take(data)
            return
        # The shell is gone. What it wrote to the command's FIFO before it died (the frame of
        # an `exit N`) is already in the FIFO: take it before saying end of stream.
        self._unwatch()
        while True:
            try:
                data = os.read(self._current.read_fd, _READ)
            except OSError:
                break
            if not data:
                break
            self._buffer += data
        self._eof = True
        self._wake.set()

    async def recv(self) -> bytes:
        """The output read so far; b"" once the shell died and everything was taken."""
        while not self._buffer and not self._eof:
            self._wake.clear()
            await self._wake.wait()
        data = bytes(self._buffer)
        self._buffer.clear()
        if self._paused and not self._eof and not self._closed:
            self._paused = False
            self._watch()
        return data

    def command_done(self) -> None:
        """Retire the running command's FIFO and make the next one current."""
        if self._closed or self._eof:
            return
        old = self._current
        if not self._paused:
            self._loop.remove_reader(old.read_fd)
        self._current, self._next = self._next, self._make()
        if not self._paused:
            self._loop.add_reader(self._current.read_fd, self._on_current)
        self._buffer.clear()  # what followed the frame is the leftovers' output
        old.release_writer()
        with contextlib.suppress(OSError):
            old.path.unlink()
        self._retired[old.read_fd] = old
        self._loop.add_reader(old.read_fd, self._drain_retired, old)

    def _drain_retired(self, fifo: _Fifo) -> None:
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(fifo.read_fd)
        try:
            data = os.read(fifo.read_fd, 1 << 16)
        except BlockingIOError:
            data = b"?"
        except OSError:
            data = b""
        if not data:  # every writer is gone
            self._retired.pop(fifo.read_fd, None)
            fifo.close()
            return
        self._pending[fifo.read_fd] = self._loop.call_later(
            LEFTOVER_PACE, self._resume_retired, fifo
        )

    def _resume_retired(self, fifo: _Fifo) -> None:
        self._pending.pop(fifo.read_fd, None)
        if not self._closed:
            self._loop.add_reader(fifo.read_fd, self._drain_retired, fifo)

    @property
    def retired(self) -> int:
        """Retired FIFOs some leftover process still holds open."""
        return len(self._retired)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._unwatch()
        for handle in self._pending.values():
            handle.cancel()
        for fifo in [*self._retired.values(), self._current, self._next]:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(fifo.read_fd)
            fifo.close()
        self._retired.clear()
        self._eof = True
        self._wake.set()
        shutil.rmtree(self._dir, ignore_errors=True)
