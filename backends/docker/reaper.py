"""The reaper: one resident root process per container that signals and clears the user's.

Its program is `reaper.sh` beside this module (package data). It runs as the container's root
with CAP_KILL and nothing else, while every command runs as the session's uid without any
capability: a command cannot kill it (nor init), so timeouts, interrupts and OOM reports keep
working whatever a command does, and it clears a session that hit its pids limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from typing import Any

from backends.base import BackendError
from backends.docker.programs import program_text
from backends.docker.stream import Demuxer, ExecStream, read_marker

ROOT = "0:0"
_READY = re.compile(rb"\x1eREADY:([^\x1e]*)\x1e\n")


def _boot_clock() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def reaper_script() -> str:
    return program_text("reaper.sh")


class Reaper:
    """Requests to the resident reaper, each answered by one line with the request's tag.

    A reader task dispatches answers to their requests, and notes the reaper's own notices
    (`! cleared N`: it cleared a session that hit its pids limit)."""

    def __init__(self, stream: ExecStream, demux: Demuxer) -> None:
        self._stream = stream
        self._demux = demux
        self._oom_seen = 0
        self._asked = 0
        self._waiting: dict[str, asyncio.Future[str]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._stopped = False
        self.clears = 0
        """How many times the reaper cleared the session (of its own accord or when asked)."""
        self.deferrals = 0
        """How many times a clear of its own accord gave way to a command whose `- run` notice
        had not reached the reaper yet (it is made again after the notice)."""
        self.settled = asyncio.Event()
        """Set except while the reaper is clearing the session."""
        self.settled.set()
        self.user_name = ""
        """The image's user name for the session's uid; empty when the image has none."""
        self.python = ""
        """The path of python3 in the container, if it has one (for the file service)."""
        self.same_clock = False
        """Whether the container's boot clock (/proc/uptime) is this process's."""

    @classmethod
    async def open(cls, api: Any, container: str, uid: int) -> Reaper:
        asked = _boot_clock()
        stream = await ExecStream.open(
            api,
            container,
            ["bash", "-c", reaper_script(), "reaper", str(uid), program_text("reaper_watch.py")],
            user=ROOT,
        )
        demux = Demuxer(stream.reader)
        ready, rest = await read_marker(demux.recv, _READY)
        answered = _boot_clock()
        reaper = cls(stream, demux)
        name, _, more = ready.decode(errors="replace").partition(":")
        python, _, uptime = more.rpartition(":")
        reaper.user_name = name
        reaper.python = python
        with contextlib.suppress(ValueError):
            # The container's kernel is this machine's (not a VM's): its boot clock is ours.
            reaper.same_clock = asked - 0.5 <= float(uptime) <= answered + 0.5
        reaper._reader = asyncio.ensure_future(reaper._read(bytearray(rest)))
        reaper._oom_seen = await reaper.oom_count()
        return reaper

    async def _read(self, buffer: bytearray) -> None:
        try:
            while True:
                while (newline := buffer.find(b"\n")) >= 0:
                    line = buffer[:newline].decode(errors="replace")
                    del buffer[: newline + 1]
                    tag, _, answer = line.partition(" ")
                    if tag == "!" and answer == "clearing":
                        self.settled.clear()
                    elif tag == "!" and answer == "deferred":
                        self.deferrals += 1
                    elif tag == "!":
                        self.clears += 1
                        self.settled.set()
                    elif (waiting := self._waiting.pop(tag, None)) and not waiting.done():
                        waiting.set_result(answer)
                chunk = await self._demux.recv()
                if not chunk:
                    break
                buffer += chunk
        finally:
            self._stopped = True
            self.settled.set()
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(
                        BackendError("The container's process reaper has stopped.")
                    )
            self._waiting.clear()

    async def _ask(self, line: str, timeout: float = 30) -> str:
        if self._stopped:
            raise BackendError("The container's process reaper has stopped.")
        self._asked += 1
        tag = f"q{self._asked}"
        answer = asyncio.get_running_loop().create_future()
        self._waiting[tag] = answer
        await self._stream.write(f"{tag} {line}\n".encode())
        try:
            return await asyncio.wait_for(answer, timeout)
        finally:
            self._waiting.pop(tag, None)

    @property
    def alive(self) -> bool:
        return not self._stopped

    async def kill(self, sig: int, root: int, *, tree: bool = False) -> None:
        """Signal the process groups of `root`'s session and descendants (`root` too if tree)."""
        await self._ask(f"kill {int(sig)} {int(root)} {'tree' if tree else 'children'}")

    async def clear(self) -> None:
        """Kill every process of the user that no exec started (what runaway commands left)."""
        await self._ask("clear", timeout=60)

    async def guard(self, pid: int) -> None:
        """Keep `pid` (the file service, which runs as the session's uid) running: a command's
        `kill -STOP -1` stops it, and the reaper continues it within a fifth of a second."""
        await self._ask(f"guard {int(pid)}")

    async def running(self, shell: int | None) -> None:
        """Tell the reaper that the command shell `shell` starts a command (None: it ended),
        so that a clear meanwhile spares the command's processes. Not answered: it costs a
        command one write."""
        if self._stopped:
            return
        if shell is None:
            line = "- run -"
        else:
            # In clock ticks (USER_HZ, 100 on Linux), a tick early; read before the command is
            # sent, so none of its processes can have started before.
            since = f"{int(_boot_clock() * 100) - 1}" if self.same_clock else "-"
            line = f"- run {shell} {since}"
        await self._stream.write(f"{line}\n".encode())

    async def oom_count(self) -> int:
        answer = await self._ask("oom")
        try:
            return int(answer)
        except ValueError:
            return 0

    async def oom_since_last_look(self) -> bool:
        """Whether the container's OOM killer struck since we last looked (counted per cgroup)."""
        count = await self.oom_count()
        struck = count > self._oom_seen
        self._oom_seen = count
        return struck

    async def close(self) -> None:
        await self._stream.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
