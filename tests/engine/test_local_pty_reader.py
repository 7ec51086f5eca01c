"""The local terminal's output is drained from the PTY off the event loop, in large batches.

A PTY hands its reader at most 4 KB per read and holds only a small buffer: when the reader is
the event loop and the loop is busy (parsing a flood, painting), the program writing stalls.
These tests block the loop on purpose — waiting synchronously, with a deadline, for the program
to finish — and check that its output was taken meanwhile and is then handed over whole.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.local import LocalBackend

SIZE = 1_000_000


@pytest.fixture
async def backend(sample_repo: Path, tmp_path: Path) -> AsyncIterator[LocalBackend]:
    b = LocalBackend(sample_repo, scratch_root=tmp_path / "scratch")
    await b.start()
    yield b
    await b.stop()


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
