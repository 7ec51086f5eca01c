"""File operations in the container, confined to the workspace: two interchangeable services.

`PythonFiles` talks to file_service.py (shipped into the container and run by its python3);
`ShellFiles` is the fallback for images without python3: the functions of file_functions.sh in a
second persistent shell. Both answer `call(op, data, path=..., dst=...)` with (status, body).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Protocol

from backends.base import BackendError, ExecOptions
from backends.docker.file_service import FAILED
from backends.docker.programs import program_text
from backends.docker.stream import Demuxer, ExecStream
from backends.shell import PersistentShell, quote

_FIND_KINDS = {"d": "dir", "f": "file", "l": "symlink", "N": "symlink", "L": "symlink"}


class FileService(Protocol):
    async def call(self, op: str, data: bytes = b"", **args: str) -> tuple[int, bytes]: ...

    async def close(self) -> None: ...


class PythonFiles:
    """File operations served by the resident file_service.py in the container."""

    def __init__(self, stream: ExecStream) -> None:
        self.pid = 0
        """The service's pid in the container (for the reaper to guard)."""
        self._stream = stream
        self._demux = Demuxer(stream.reader, stdout_only=True)
        self._buffer = bytearray()
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls, api: Any, container: str, user: str, python: str, workspace: str
    ) -> PythonFiles:
        source = program_text("file_service.py")
        stream = await ExecStream.open(
            api, container, [python, "-I", "-c", source, workspace], user=user
        )
        files = cls(stream)
        ready = await files._read_line()
        if not (ready.startswith(b"\x1eREADY:") and ready.endswith(b"\x1e")):
            raise BackendError(f"The container's file service did not start: {ready!r}")
        files.pid = int(ready[7:-1])
        return files

    async def _fill(self) -> None:
        chunk = await self._demux.recv()
        if not chunk:
            raise BackendError("The container's file service has stopped.")
        self._buffer += chunk

    async def _read_line(self) -> bytes:
        while (newline := self._buffer.find(b"\n")) < 0:
            await asyncio.wait_for(self._fill(), 60)
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        return line

    async def call(self, op: str, data: bytes = b"", **args: str) -> tuple[int, bytes]:
        async with self._lock:
            request = json.dumps({"op": op, "size": len(data), **args}).encode() + b"\n"
            await self._stream.write(request + data)
            header = json.loads(await self._read_line())
            size = int(header["size"])
            while len(self._buffer) < size:
                await asyncio.wait_for(self._fill(), 60)
            body = bytes(self._buffer[:size])
            del self._buffer[:size]
            return int(header["code"]), body

    async def close(self) -> None:
        await self._stream.close()


class ShellFiles:
    """File operations through a second persistent shell (for images without python3)."""

    def __init__(self, shell: PersistentShell, workspace: str) -> None:
        self._shell = shell
        self._workspace = workspace
        self._ready = False

    async def call(self, op: str, data: bytes = b"", **args: str) -> tuple[int, bytes]:
        if not self._ready:
            functions = program_text("file_functions.sh")
            setup = await self._shell.run(f"W={quote(self._workspace)}\n{functions}")
            if setup.exit_code != 0:
                raise BackendError(f"The container's file service failed: {setup.output!r}")
            self._ready = True
        words = [f"__rs_{op}", args["path"]]
        if "dst" in args:
            words.append(args["dst"])
        if op == "write":
            words.append(base64.b64encode(data).decode())
        result = await self._shell.run(" ".join(quote(w) for w in words), ExecOptions(timeout=120))
        if result.shell_restarted:
            self._ready = False
            if result.exit_code is None:
                raise BackendError("The container's file shell has stopped.")
        code = FAILED if result.exit_code is None else result.exit_code
        body = result.output
        if code == 0 and op == "stat":
            mode_hex, size, mtime = body.decode().split()
            body = json.dumps([int(mode_hex, 16), int(size), float(mtime)]).encode()
        elif code == 0 and op == "list":
            entries = []
            for record in body.split(b"\0"):
                if record:
                    kind, size, name = record.decode(errors="surrogateescape").split(" ", 2)
                    entries.append([name, _FIND_KINDS.get(kind, "other"), int(size)])
            body = json.dumps(entries).encode()
        return code, body

    async def close(self) -> None:
        await self._shell.close()
