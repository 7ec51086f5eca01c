"""The command shell's channel: a bash in the container over one attached exec.

A `PersistentShell` (backends/shell.py) speaks to it, so a command costs one write and one
read, not one `docker exec`. stdout and stderr arrive multiplexed and are merged; signals to the
shell's children go through the reaper, which the commands cannot kill.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import secrets
import signal
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from backends.base import BackendError
from backends.docker.programs import program_text
from backends.docker.reaper import ROOT, Reaper
from backends.docker.stream import Demuxer, ExecStream, read_marker
from backends.shell import ShellChannel

WORKSPACE = "/workspace"
# identity.sh and ensure_user.sh use the same name and home.
FALLBACK_USER = "reposim"
FALLBACK_HOME = "/home/reposim"
PID_MARKER = re.compile(rb"\x1ePID:(\d+)\x1e\n")
RELAY_DIR_PREFIX = "/run/reposim-out-"
_RELAY_READY = re.compile(rb"\x1e(RELAY)\x1e\n")
_INBOX_FULL = 4 << 20
"""Stop reading the relay while this much output waits to be taken."""
_IDS_AHEAD = 64
"""Command ids the relay is given at once (more when half are used)."""


class DockerShellChannel(ShellChannel):
    """A bash in the container over one attached exec (stdout and stderr demultiplexed).

    Beside it, when the image has python3, the output relay (relay.py, root's): each command
    writes its output and frame to a FIFO of its own that the relay copies to its stream, so
    what a command's leftover processes print never reaches a later command. Without python3
    the commands share the shell's stdout, as before."""

    def __init__(
        self,
        stream: ExecStream,
        pid: int,
        reaper: Callable[[], Awaitable[Reaper | None]],
        relay: ExecStream | None = None,
    ) -> None:
        self._stream = stream
        self._demux = Demuxer(stream.reader)
        self.pid = pid
        self._reaper = reaper
        self._pending = b""
        self._relay = relay
        self._relay_dir = ""
        self._number = 1
        self._inbox = bytearray()
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._eof = False
        self._ids: collections.deque[str] = collections.deque()
        """Command ids the relay was told and no command took yet (FIFO `_number` onwards)."""
        self._drain_to: bytes | None = None
        """While set: the relay's marker after which nothing more comes (the shell died)."""
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(
        cls,
        api: Any,
        container: str,
        user: str,
        env: Mapping[str, str],
        reaper: Callable[[], Awaitable[Reaper | None]],
    ) -> DockerShellChannel:
        # In /run, root's: out of the paths the session may write, which a warm pool compares
        # before reusing a container (pool.py).
        relay_dir = f"{RELAY_DIR_PREFIX}{secrets.token_hex(8)}"
        opened = await asyncio.gather(
            ExecStream.open(
                api,
                container,
                ["bash", "--noprofile", "--norc"],
                user=user,
                workdir=WORKSPACE,
                environment=env,
            ),
            ExecStream.open(
                api, container, ["python3", "-I", "-c", program_text("relay.py"), relay_dir],
                user=ROOT, workdir="/",
            ),
            return_exceptions=True,
        )  # fmt: skip
        stream, relay = opened
        if isinstance(stream, BaseException):
            if isinstance(relay, ExecStream):
                await relay.close()
            raise stream
        channel = cls(stream, 0, reaper)
        await stream.write((program_text("identity.sh") + program_text("shell_start.sh")).encode())
        try:
            pid, channel._pending = await read_marker(channel._demux.recv, PID_MARKER)
        except BackendError:
            await stream.close()
            if isinstance(relay, ExecStream):
                await relay.close()
            raise BackendError("The shell in the container did not start.") from None
        channel.pid = int(pid)
        if isinstance(relay, ExecStream):
            await channel._attach_relay(relay, relay_dir)
        return channel

    async def _attach_relay(self, relay: ExecStream, directory: str) -> None:
        demux = Demuxer(relay.reader, stdout_only=True)
        try:
            _, rest = await read_marker(demux.recv, _RELAY_READY)
        except BackendError:
            await relay.close()  # no python3 in the image: the shared stdout it is
            return
        self._relay = relay
        self._relay_dir = directory
        self._inbox += self._pending + rest
        self._pending = b""
        self._tasks = [
            asyncio.ensure_future(self._pump_relay(demux)),
            asyncio.ensure_future(self._watch_shell()),
        ]
        await self._tell_ids()

    async def _tell_ids(self) -> None:
        """Give the relay the next commands' ids: it ends each command at the frame that
        carries its id by itself, so a command costs no request to the relay."""
        assert self._relay is not None
        ids = [secrets.token_hex(6) for _ in range(_IDS_AHEAD)]
        self._ids.extend(ids)
        await self._relay.write(("i " + " ".join(ids) + "\n").encode())

    # -- the relay's side: one inbox fed by the relay's stream and the shell's --

    def _take(self, data: bytes) -> None:
        if data:
            self._inbox += data
            self._wake.set()
            if len(self._inbox) > _INBOX_FULL:
                self._room.clear()

    def _end(self) -> None:
        self._eof = True
        self._wake.set()
        self._room.set()

    async def _pump_relay(self, demux: Demuxer) -> None:
        held = b""
        while True:
            await self._room.wait()
            chunk = await demux.recv()
            if not chunk:  # the relay died: the channel is unusable, the shell gets replaced
                self._end()
                return
            held += chunk
            if self._drain_to is not None:
                at = held.find(self._drain_to)
                if at >= 0:
                    self._take(held[:at])
                    self._end()
                    return
                keep = len(self._drain_to)
                self._take(held[:-keep])
                held = held[-keep:]
                continue
            self._take(held)
            held = b""

    async def _watch_shell(self) -> None:
        while chunk := await self._demux.recv():
            self._take(chunk)
        # The shell died: what its command wrote before (the frame of an `exit N`) is in the
        # FIFO; have the relay copy it, then say end of stream.
        assert self._relay is not None
        tag = secrets.token_hex(6)
        self._drain_to = f"\x1eRDR-{tag}\x1e\n".encode()
        await self._relay.write(f"d {tag}\n".encode())

    def output_dir(self) -> str | None:
        return self._relay_dir or None

    def names_running(self) -> bool:
        return True  # the reaper gives way to a command it has not been told of yet

    def output_name(self) -> str:
        return str(self._number)

    async def command_id(self) -> str:
        if self._relay is None:
            return await super().command_id()
        if len(self._ids) <= _IDS_AHEAD // 2:
            await self._tell_ids()
        return self._ids.popleft()

    async def command_done(self) -> None:
        # The relay stopped copying this command's FIFO at its frame and went on to the next.
        self._number += 1

    async def send(self, data: bytes) -> None:
        await self._stream.write(data)

    async def recv(self) -> bytes:
        if self._relay is None:
            if self._pending:
                data, self._pending = self._pending, b""
                return data
            return await self._demux.recv()
        while not self._inbox and not self._eof:
            self._wake.clear()
            await self._wake.wait()
        data = bytes(self._inbox)
        self._inbox.clear()
        self._room.set()
        return data

    async def discard_pending(self, quiet: float = 0.25) -> None:
        """Drop what background processes wrote between commands, until `quiet` s of silence.

        Used after the reaper cleared a runaway session: what the killed processes wrote
        ("fork: retry...") must not show up as the next command's output. With the relay they
        wrote to their own commands' FIFOs, so there is nothing to drop."""
        if self._relay is not None:
            return
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
        for task in self._tasks:
            task.cancel()
        if self._relay is not None:
            await self._relay.close()  # at the end of its input the relay removes its FIFOs
        self._end()

    async def oom_killed_since(self, since: float) -> bool:
        reaper = await self._reaper()
        if reaper is None:
            return False
        try:
            return await reaper.oom_since_last_look()
        except (BackendError, TimeoutError):
            return False
