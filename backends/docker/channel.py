"""The command shell's channel: a bash in the container over one attached exec.

A `PersistentShell` (backends/shell.py) speaks to it, so a command costs one write and one
read, not one `docker exec`. stdout and stderr arrive multiplexed and are merged; signals to the
shell's children go through the reaper, which the commands cannot kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from backends.base import BackendError
from backends.docker.programs import program_text
from backends.docker.reaper import Reaper
from backends.docker.stream import Demuxer, ExecStream, read_marker
from backends.shell import ShellChannel

WORKSPACE = "/workspace"
# identity.sh and ensure_user.sh use the same name and home.
FALLBACK_USER = "reposim"
FALLBACK_HOME = "/home/reposim"
PID_MARKER = re.compile(rb"\x1ePID:(\d+)\x1e\n")


class DockerShellChannel(ShellChannel):
    """A bash in the container over one attached exec (stdout and stderr demultiplexed)."""

    def __init__(
        self, stream: ExecStream, pid: int, reaper: Callable[[], Awaitable[Reaper | None]]
    ) -> None:
        self._stream = stream
        self._demux = Demuxer(stream.reader)
        self.pid = pid
        self._reaper = reaper
        self._pending = b""

    @classmethod
    async def open(
        cls,
        api: Any,
        container: str,
        user: str,
        env: Mapping[str, str],
        reaper: Callable[[], Awaitable[Reaper | None]],
    ) -> DockerShellChannel:
        stream = await ExecStream.open(
            api,
            container,
            ["bash", "--noprofile", "--norc"],
            user=user,
            workdir=WORKSPACE,
            environment=env,
        )
        channel = cls(stream, 0, reaper)
        await stream.write((program_text("identity.sh") + program_text("shell_start.sh")).encode())
        try:
            pid, channel._pending = await read_marker(channel._demux.recv, PID_MARKER)
        except BackendError:
            await stream.close()
            raise BackendError("The shell in the container did not start.") from None
        channel.pid = int(pid)
        return channel

    async def send(self, data: bytes) -> None:
        await self._stream.write(data)

    async def recv(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        return await self._demux.recv()

    async def discard_pending(self, quiet: float = 0.25) -> None:
        """Drop what background processes wrote between commands, until `quiet` s of silence.

        Used after the reaper cleared a runaway session: what the killed processes wrote
        ("fork: retry...") must not show up as the next command's output."""
        self._pending = b""
        with contextlib.suppress(TimeoutError):
            while await asyncio.wait_for(self._demux.recv(), quiet):
                pass

    async def _to_reaper(self, sig: int, *, tree: bool) -> None:
        # Twice at most: a reaper found dead on the first try is started again for the second.
        for _ in range(2):
            reaper = await self._reaper()
            if reaper is None:
                return
            try:
                await reaper.kill(sig, self.pid, tree=tree)
                return
            except (BackendError, TimeoutError):
                continue

    async def signal_children(self, sig: int) -> None:
        await self._to_reaper(sig, tree=False)

    async def close(self) -> None:
        await self._to_reaper(signal.SIGKILL, tree=True)
        await self._stream.close()

    async def oom_killed_since(self, since: float) -> bool:
        reaper = await self._reaper()
        if reaper is None:
            return False
        try:
            return await reaper.oom_since_last_look()
        except (BackendError, TimeoutError):
            return False
