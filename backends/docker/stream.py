"""Attached execs: one socket to the daemon per long-lived process, read with asyncio.

`ExecStream` opens an exec and takes over the socket the daemon hijacked; `Demuxer` reads
Docker's multiplexed framing (8-byte headers: stream, 0, 0, 0, big-endian size) when the exec has
no TTY. SDK calls that block on HTTP run in their own thread pool (`blocking`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import re
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from backends.base import BackendError, BackendTimeoutError, BackendUnavailableError

READ_CHUNK = 65536
_T = TypeVar("_T")

# Docker SDK calls block on HTTP; they get their own pool so that many sessions opening at
# once (32 on a 2-core machine) are not queued behind asyncio's small default executor.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="reposim-docker")


def blocking(func: Callable[..., _T], /, *args: Any, **kwargs: Any) -> asyncio.Future[_T]:
    """Run a blocking SDK call in the docker thread pool."""
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(_POOL, functools.partial(func, *args, **kwargs))


class ExecStream:
    """One attached exec: an asyncio reader/writer over the socket the daemon hijacked."""

    def __init__(
        self, exec_id: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.exec_id = exec_id
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(
        cls,
        api: Any,
        container: str,
        cmd: list[str],
        *,
        tty: bool = False,
        user: str,
        workdir: str | None = None,
        environment: Mapping[str, str] | None = None,
    ) -> ExecStream:
        def start() -> tuple[str, Any]:
            exec_id = api.exec_create(
                container,
                cmd,
                stdin=True,
                stdout=True,
                stderr=True,
                tty=tty,
                user=user,
                workdir=workdir,
                environment=dict(environment or {}),
            )["Id"]
            return exec_id, api.exec_start(exec_id, socket=True, tty=tty)

        try:
            exec_id, raw = await blocking(start)
        except Exception as exc:
            raise exec_error(container, exc) from None
        sock = getattr(raw, "_sock", raw)
        if not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket):
            with contextlib.suppress(Exception):
                raw.close()
            raise BackendUnavailableError(
                "The docker backend needs the engine on a unix socket or plain tcp:// "
                "(DOCKER_HOST with TLS or ssh:// is not supported yet)."
            )
        reader, writer = await asyncio.open_connection(sock=sock, limit=READ_CHUNK * 4)
        if raw is not sock:
            # docker-py hands out a SocketIO (a makefile() of the socket): while it is open,
            # the transport's sock.close() only marks the socket closed and the descriptor
            # stays open until garbage collection ("unclosed socket" warnings, issue 25).
            # The transport owns the socket now; drop the SocketIO's reference.
            with contextlib.suppress(Exception):
                raw.close()
        return cls(exec_id, reader, writer)

    async def write(self, data: bytes) -> None:
        try:
            self.writer.write(data)
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            pass  # the process died; the reader sees end of stream

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), 2)


def exec_error(container: str, exc: Exception) -> BackendError:
    """One sentence for an exec the daemon refused (the container gone or stopped...)."""
    status = getattr(exc, "status_code", None)
    if status == 404:
        return BackendError(
            f"The session's container {container[:12]} is gone (removed outside RepoSim); "
            "start a new session."
        )
    if status == 409:
        return BackendError(
            f"The session's container {container[:12]} is not running (stopped outside "
            "RepoSim); start a new session."
        )
    return BackendError(f"Could not start a process in the container: {exc}")


class Demuxer:
    """Reads Docker's multiplexed stream (8-byte headers: stream, 0, 0, 0, big-endian size)."""

    def __init__(self, reader: asyncio.StreamReader, *, stdout_only: bool = False) -> None:
        self._reader = reader
        self._stdout_only = stdout_only

    async def recv(self) -> bytes:
        """The next payload; b"" at end of stream."""
        while True:
            try:
                header = await self._reader.readexactly(8)
                stream, size = struct.unpack(">BxxxL", header)
                if size == 0:
                    continue
                data = await self._reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                return b""
            if self._stdout_only and stream != 1:
                continue
            return data


async def read_marker(
    recv: Callable[[], Awaitable[bytes]], pattern: re.Pattern[bytes], limit: float = 60.0
) -> tuple[bytes, bytes]:
    """Read until `pattern` shows up: its first group, and what followed the match.

    60 s: a process that takes longer is stuck; at a load of 20 on 2 cores a healthy start was
    seen to take over 30 s."""
    buf = b""

    async def loop() -> tuple[bytes, bytes]:
        nonlocal buf
        while True:
            match = pattern.search(buf)
            if match:
                return match.group(1), buf[match.end() :]
            chunk = await recv()
            if not chunk:
                raise BackendError(
                    "A process in the container exited at once: " + buf.decode(errors="replace")
                )
            buf += chunk

    try:
        return await asyncio.wait_for(loop(), limit)
    except TimeoutError:
        raise BackendTimeoutError("A process in the container did not start in time.") from None
