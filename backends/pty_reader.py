"""Drain a PTY master off the event loop and hand its output to the loop in batches.

A Linux PTY gives its reader at most 4 KB per read (the line discipline's buffer) and keeps only
a few KB queued, so a reader on the event loop pays a loop wake-up per 4 KB and, whenever the
loop is busy (parsing a flood, painting), stalls the program writing. Here a thread waits on the
descriptor (`poll` and `read` release the GIL), appends what it reads to a buffer, and wakes the
loop once per batch rather than once per read. The buffer is bounded: past `limit` bytes the
thread stops reading, so the kernel's flow control still holds back a writer nobody reads.

A thread alone still takes the GIL back after every 4 KB read, and while the loop holds it (a
parse, a repaint) that wait lasts up to the interpreter's switch interval (5 ms): the PTY's few
KB fill and the program stalls. So a PTY is drained by a relay process (`_RELAY`, a few lines of
Python with no GIL to share) into a pipe of up to `RELAY_PIPE` bytes, which the thread reads in
large reads. The bytes pass unchanged. The relay ends at the PTY's end, when the reader stops,
and when this process dies (the wake-up pipe it watches hangs up); without one (it could not be
started) the thread reads the PTY itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import subprocess
import sys
import threading

READ_CHUNK = 65536
BATCH = 256 * 1024
"""The most bytes one `read()` returns: the loop parses a batch before it answers a key."""
LIMIT = 1024 * 1024
"""Bytes held unread before the thread stops reading."""
RELAY_PIPE = 1024 * 1024
"""The relay's pipe, in bytes (Linux's default most for an unprivileged process; a smaller pipe,
if refused, only means more reads)."""

_RELAY = """
import os, select, sys
source, stop = 0, int(sys.argv[1])
poller = select.poll()
poller.register(source, select.POLLIN)
poller.register(stop, select.POLLIN)
while not any(fd == stop for fd, _ in poller.poll()):
    while True:
        try:
            data = os.read(source, 65536)
        except BlockingIOError:
            break
        except OSError:
            raise SystemExit
        if not data:
            raise SystemExit
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]
"""
"""The relay: copies the PTY (its stdin, non-blocking) to its stdout (the pipe), until the PTY
ends (EIO once every slave is closed) or the stop descriptor is readable or hung up."""


class PtyReader:
    """Reads `fd` (non-blocking) in a thread; `await read()` returns everything read so far."""

    def __init__(self, fd: int, *, batch: int = BATCH, limit: int = LIMIT) -> None:
        self._batch = batch
        self._limit = limit
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()
        self._eof = False
        self._stopping = False
        self._stopped = asyncio.Event()  # set once the first stop() has joined the thread
        self._notified = False  # a wake-up is on its way to the loop
        self._waiter: asyncio.Future[None] | None = None
        self._cond = threading.Condition()
        self._wake_r, self._wake_w = os.pipe()
        self._relay: subprocess.Popen[bytes] | None = None
        self._fd = self._start_relay(fd) if os.isatty(fd) else fd
        """What the thread reads: the relay's pipe, or `fd` itself."""
        self._thread = threading.Thread(target=self._pump, name=f"pty-reader-{fd}", daemon=True)
        self._thread.start()

    def _start_relay(self, fd: int) -> int:
        """The read end of a relay's pipe fed from `fd`; `fd` itself if no relay starts."""
        out_r, out_w = os.pipe()
        try:
            with contextlib.suppress(OSError):
                fcntl.fcntl(out_w, fcntl.F_SETPIPE_SZ, RELAY_PIPE)
            self._relay = subprocess.Popen(
                [sys.executable, "-S", "-I", "-c", _RELAY, str(self._wake_r)],
                stdin=fd,
                stdout=out_w,
                stderr=subprocess.DEVNULL,
                pass_fds=(self._wake_r,),
                start_new_session=True,  # a Ctrl+C meant for the UI's process group is not its
            )
        except OSError:
            os.close(out_r)
            return fd
        finally:
            os.close(out_w)
        os.set_blocking(out_r, False)
        return out_r

    # -- the thread ----------------------------------------------------------------------------

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while self._wait_for_room():
                if any(fd == self._wake_r for fd, _ in poller.poll()):
                    return
                data = self._read_available()
                if data is None:
                    continue
                with self._cond:
                    if data:
                        self._buffer += data
                    else:
                        self._eof = True
                    notify = not self._notified
                    self._notified = True
                if notify:
                    self._loop.call_soon_threadsafe(self._wake)
                if not data:
                    return
        except RuntimeError:  # the loop closed under us: nobody is reading any more
            return

    def _wait_for_room(self) -> bool:
        with self._cond:
            while len(self._buffer) >= self._limit and not self._stopping:
                self._cond.wait()
            return not self._stopping

    def _read_available(self) -> bytes | None:
        """What the descriptor holds now (several reads), b"" at its end, None if nothing."""
        parts: list[bytes] = []
        size = 0
        while size < self._batch:
            try:
                chunk = os.read(self._fd, READ_CHUNK)
            except BlockingIOError:
                break
            except OSError:  # EIO: every slave descriptor is closed
                chunk = b""
            if not chunk:
                if not parts:
                    return b""
                break  # the end is seen again on the next round, after this data
            parts.append(chunk)
            size += len(chunk)
        return b"".join(parts) if parts else None

    # -- the loop ------------------------------------------------------------------------------

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read(self) -> bytes:
        """The output read so far (at most one batch), waiting for some; b"" at the end."""
        while True:
            with self._cond:
                if self._buffer:
                    data = bytes(self._buffer[: self._batch])
                    del self._buffer[: self._batch]
                    # Data left over is taken by the next read(): no wake-up is needed for it.
                    self._notified = bool(self._buffer)
                    self._cond.notify()
                    return data
                if self._eof or self._stopping:
                    return b""
                self._notified = False
                waiter = self._waiter = self._loop.create_future()
            await waiter

    async def stop(self) -> None:
        """Stop the thread (a waiting `read()` returns b""); the descriptor is left open. Every
        caller returns only once the thread is gone: each then closes the descriptor, which
        must not happen while the thread may still read it."""
        with self._cond:
            if self._stopping:
                first = False
            else:
                first = self._stopping = True
                self._cond.notify()
        if not first:
            await self._stopped.wait()
            return
        try:
            os.write(self._wake_w, b"x")  # seen by the thread and the relay
            self._wake()
            await asyncio.to_thread(self._thread.join)
            if self._relay is not None:
                os.close(self._fd)  # a relay blocked on a full pipe now ends too
                await asyncio.to_thread(_end, self._relay)
            os.close(self._wake_r)
            os.close(self._wake_w)
        finally:
            self._stopped.set()

    @property
    def ended(self) -> bool:
        """The descriptor reached its end and everything read has been taken."""
        with self._cond:
            return (self._eof or self._stopping) and not self._buffer


def _end(relay: subprocess.Popen[bytes]) -> None:
    """Wait for a relay told to stop; one that has not ended within seconds is killed."""
    try:
        relay.wait(5)
    except subprocess.TimeoutExpired:
        relay.kill()
        relay.wait()
