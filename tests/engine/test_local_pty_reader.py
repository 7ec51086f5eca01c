"""The local terminal's output is drained from the PTY off the event loop, in large batches.

A PTY hands its reader at most 4 KB per read and holds only a small buffer: when the reader is
the event loop and the loop is busy (parsing a flood, painting), the program writing stalls.
These tests block the loop on purpose — waiting synchronously, with a deadline, for the program
to finish — and check that its output was taken meanwhile and is then handed over whole.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import tty
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


async def test_a_pty_is_drained_by_a_relay_that_passes_every_byte_unchanged() -> None:
    """A PTY is read through a relay process (no GIL to share with the loop): what it hands
    over is exactly what was written, every byte value, in order, then the end."""
    master, slave = os.openpty()
    tty.setraw(slave)  # no newline translation: the bytes written are the bytes read
    os.set_blocking(master, False)
    data = bytes(range(256)) * 4096 + b"A\377Z"  # 1 MB of every byte value
    reader = PtyReader(master)
    relay = reader._relay
    try:
        assert relay is not None, "a PTY is read without a relay"
        assert relay.poll() is None
        writer = threading.Thread(target=os.write, args=(slave, data))
        writer.start()
        got = bytearray()
        async with asyncio.timeout(60):
            while len(got) < len(data):
                got += await reader.read()
        await asyncio.to_thread(writer.join, 60)
        os.close(slave)
        slave = -1
        async with asyncio.timeout(60):
            while chunk := await reader.read():
                got += chunk
        assert bytes(got) == data
    finally:
        if slave >= 0:
            os.close(slave)
        await reader.stop()
        os.close(master)
    assert relay.returncode is not None, "the relay outlived stop()"


_OWNER = """
import asyncio, os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from backends.pty_reader import PtyReader

async def main():
    master, slave = os.openpty()
    # The terminal's program outlives this process: the PTY does not end with it.
    program = subprocess.Popen(["sleep", "600"], stdin=slave, start_new_session=True)
    os.set_blocking(master, False)
    reader = PtyReader(master)
    print(reader._relay.pid, program.pid, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_the_relay_ends_when_the_process_that_started_it_is_killed() -> None:
    """No relay is left behind by a reader that never stopped (its process was killed)."""
    root = Path(__file__).resolve().parents[2]
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(root)], stdout=subprocess.PIPE, text=True
    )
    program = -1
    try:
        assert owner.stdout is not None
        relay, program = map(int, owner.stdout.readline().split())
        assert not _gone(relay)
        owner.kill()  # SIGKILL: no cleanup code runs
        owner.wait()
        deadline = time.monotonic() + 60
        while not _gone(relay) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(relay), "the relay outlived its process"
    finally:
        owner.kill()
        owner.wait()
        if program > 0:
            os.kill(program, signal.SIGKILL)
