"""The local terminal's output is drained from the PTY off the event loop, in large batches.

A PTY hands its reader at most 4 KB per read and holds only a small buffer: when the reader is
the event loop and the loop is busy (parsing a flood, painting), the program writing stalls.
These tests block the loop on purpose — waiting synchronously, with a deadline, for the program
to finish — and check that its output was taken meanwhile and is then handed over whole.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

from backends.local import LocalBackend
from backends.pty_reader import PtyReader

SIZE = 1_000_000


def _wait_for_file(path: Path, within: float) -> bool:
    """Block the calling thread (the event loop) until `path` exists or the deadline passes."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.01)
    return path.exists()


async def test_output_is_drained_while_the_event_loop_is_busy(
    backend: LocalBackend, tmp_path: Path
) -> None:
    done = tmp_path / "done"
    pty = await backend.open_pty(120, 30)
    try:
        await pty.write(b"stty -echo; echo READY\n")
        seen = b""
        async with asyncio.timeout(10):
            while b"READY\r\n" not in seen.replace(b"stty -echo; echo READY", b""):
                seen += await pty.read()
        await pty.write(f"head -c {SIZE} /dev/zero | tr '\\0' x; touch {done}\n".encode())
        # The loop does nothing else until the writer has finished: only a reader that is not
        # the loop lets it finish (the kernel's PTY buffer holds a few KB).
        assert _wait_for_file(done, within=30), "the writer stalled while the loop was busy"
        got = 0
        reads = 0
        async with asyncio.timeout(10):
            while got < SIZE:
                chunk = await pty.read()
                assert chunk, "the terminal closed early"
                got += chunk.count(b"x")
                reads += 1
        # Handed to the loop in batches far larger than the PTY's 4 KB reads.
        assert reads <= SIZE // 65536 + 2
    finally:
        await pty.close()
    assert pty.closed


async def test_a_second_stop_returns_only_once_the_thread_is_gone() -> None:
    """The pane and the backend's stop both stop a PTY's reader, then close the descriptor. A
    stop that returns while the thread is still reading lets its caller close the descriptor
    under the thread, which may then read whatever file reuses the number."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    reader = PtyReader(read_end)
    in_read, release = threading.Event(), threading.Event()
    real_read = reader._read_available

    def held_read() -> bytes | None:
        in_read.set()
        release.wait(60)
        return real_read()

    reader._read_available = held_read  # type: ignore[method-assign]
    try:
        os.write(write_end, b"output")
        assert await asyncio.to_thread(in_read.wait, 60), "the reader never read"
        first = asyncio.create_task(reader.stop())
        second = asyncio.create_task(reader.stop())
        done, _ = await asyncio.wait({first, second}, timeout=0.5)
        assert not done, "a stop returned while the reader thread was still reading"
        release.set()
        await asyncio.wait_for(asyncio.gather(first, second), 60)
        assert not reader._thread.is_alive()
    finally:
        release.set()
        os.close(read_end)
        os.close(write_end)
