"""Fixtures for the engine tests: the local backend, started on the sample project; a reader
that drains a session's terminal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from backends.local import LocalBackend
from simulator.terminal_record import RecordedPty


@pytest.fixture
async def backend(sample_repo: Path, tmp_path: Path) -> AsyncIterator[LocalBackend]:
    b = LocalBackend(sample_repo, scratch_root=tmp_path / "scratch")
    await b.start()
    yield b
    await b.stop()


class TerminalDrain:
    """Reads a session's terminal in a task of its own until the stream ends (the shell
    exited), keeping every byte in `received`."""

    def __init__(self, terminal: RecordedPty) -> None:
        self.terminal = terminal
        self.received = b""
        self._more = asyncio.Event()
        self.task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while not self.terminal.closed:
                chunk = await self.terminal.read()
                if not chunk:
                    return
                self.received += chunk
                self._more.set()
        finally:
            self._more.set()

    async def until(self, seen: Callable[[bytes], bool], within: float) -> None:
        """Wait until `seen(received)` holds; `within` bounds a hang, it is not a pace."""
        async with asyncio.timeout(within):
            while not seen(self.received):
                assert not self.task.done(), "the terminal closed first"
                self._more.clear()
                await self._more.wait()

    async def closed(self, within: float) -> None:
        """Wait for the stream to end; `within` bounds a hang, it is not a pace."""
        async with asyncio.timeout(within):
            await self.task
