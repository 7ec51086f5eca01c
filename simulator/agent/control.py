"""Take-over of a running agent session from another process (the fleet view's attach).

A session that runs in a batch worker serves its controls on a Unix socket: pause the agent,
run a command in its terminal, read and write a file, tell the agent something, let it go on.
What the person does goes through the session as any action does, so it lands in the same
trajectory (actor `human`) and the agent is told about it when it resumes.

Where the socket is: a small file beside the trajectory, `<trajectory stem>.control`, names it
(the fleet view finds it there). The socket itself lives in a private directory (0700, owned
by this user: `$XDG_RUNTIME_DIR/reposim-control`, else `/tmp/reposim-control-<uid>`), is 0600,
and answers only peers of the same user (SO_PEERCRED). The file goes when the session ends.

The protocol is one JSON object per line each way: a request `{"op": ..., ...}`, an answer
`{"ok": true, ...}` or `{"ok": false, "error": "<one sentence>"}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import socket
import struct
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agent.loop import Mode
from simulator.events import Actor

if TYPE_CHECKING:
    from simulator.agent.loop import Agent
    from simulator.session import Session

OUTPUT_LIMIT = 64 * 1024
"""A command's output sent back to the person, at most (its tail); the whole is recorded."""
PAUSE_WAIT = 60.0
"""How long a take-over waits for the agent to finish its current step before acting."""


class ControlError(Exception):
    """A take-over request could not be carried out; the message is one sentence."""


def control_file(trajectory: Path) -> Path:
    """The file beside a trajectory naming its session's control socket."""
    return trajectory.with_suffix(".control")


def _socket_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir() and len(runtime) < 60:
        base = Path(runtime) / "reposim-control"
    else:
        base = Path(tempfile.gettempdir()) / f"reposim-control-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    info = base.lstat()
    if base.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ControlError(
            f"{base} is not a private directory of this user (owner {info.st_uid}, mode "
            f"{info.st_mode & 0o777:o}), so take-over is off for this session."
        )
    return base


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    sock = writer.get_extra_info("socket")
    if sock is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


class ControlServer:
    """Serves one session's controls (see the module's docstring) while it runs."""

    def __init__(self, session: Session, agent: Agent, trajectory: Path) -> None:
        self.session = session
        self.agent = agent
        self.file = control_file(trajectory)
        self.socket_path: Path | None = None
        self._server: asyncio.AbstractServer | None = None
        self._ops: dict[str, Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "status": self._status,
            "pause": self._pause,
            "resume": self._resume,
            "exec": self._exec,
            "read": self._read,
            "write": self._write,
            "tell": self._tell,
        }

    async def start(self) -> None:
        path = _socket_dir() / f"{secrets.token_hex(8)}.sock"
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(path))
        finally:
            os.umask(old)
        self.socket_path = path
        record = {"socket": str(path), "pid": os.getpid(), "session": self.session.id}
        partial = self.file.with_name(f".{self.file.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(record) + "\n")
        partial.replace(self.file)

    async def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.file.unlink()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
        if self.socket_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if _peer_uid(writer) != os.getuid():
                await self._send(writer, {"ok": False, "error": "Not this user's session."})
                return
            while line := await reader.readline():
                try:
                    request = json.loads(line)
                    if not isinstance(request, dict):
                        raise ValueError
                except ValueError:
                    await self._send(
                        writer, {"ok": False, "error": "A request is one JSON object."}
                    )
                    continue
                op = self._ops.get(str(request.get("op")))
                if op is None:
                    answer = {
                        "ok": False,
                        "error": f"Unknown request {request.get('op')!r}; "
                        f"known: {', '.join(self._ops)}.",
                    }
                else:
                    try:
                        answer = {"ok": True, **await op(request)}
                    except ControlError as exc:
                        answer = {"ok": False, "error": str(exc)}
                    except Exception as exc:  # the session's own error, told to the person
                        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
                await self._send(writer, answer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        writer.write(json.dumps(answer).encode() + b"\n")
        await writer.drain()

    # -- the requests ------------------------------------------------------------------------

    async def _status(self, request: dict[str, Any]) -> dict[str, Any]:
        status = self.agent.status()
        return {"mode": status["mode"], "state": status["state"], "steps": status.get("steps")}

    async def _pause(self, request: dict[str, Any]) -> dict[str, Any]:
        self.agent.set_mode(Mode.HUMAN)
        await self._until_paused()
        return await self._status(request)

    async def _resume(self, request: dict[str, Any]) -> dict[str, Any]:
        self.agent.set_mode(Mode.AUTO)
        return await self._status(request)

    async def _until_paused(self) -> None:
        """Wait until the agent has finished its step and waits for the person (or is done)."""
        if self.agent.mode is not Mode.HUMAN:
            raise ControlError("The agent is running: pause it first.")
        settled = asyncio.Event()

        def check(agent: Agent) -> None:
            if agent.state in ("paused", "idle"):
                settled.set()

        check(self.agent)
        self.agent.listeners.append(check)
        try:
            await asyncio.wait_for(settled.wait(), PAUSE_WAIT)
        except TimeoutError:
            raise ControlError(
                f"The agent did not finish its step within {PAUSE_WAIT:.0f} s; try again."
            ) from None
        finally:
            self.agent.listeners.remove(check)

    async def _exec(self, request: dict[str, Any]) -> dict[str, Any]:
        command = request.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ControlError("Give a command to run.")
        await self._until_paused()
        timeout = request.get("timeout")
        result = await self.session.exec(
            command,
            actor=Actor.HUMAN,
            timeout=float(timeout) if isinstance(timeout, int | float) else None,
        )
        output = result.output[-OUTPUT_LIMIT:].decode("utf-8", "replace")
        return {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "output": output,
            "truncated": len(result.output) > OUTPUT_LIMIT,
        }

    async def _read(self, request: dict[str, Any]) -> dict[str, Any]:
        path = request.get("path")
        if not isinstance(path, str) or not path:
            raise ControlError("Give a file to read.")
        await self._until_paused()
        return {"path": path, "text": await self.session.read(path, actor=Actor.HUMAN)}

    async def _write(self, request: dict[str, Any]) -> dict[str, Any]:
        path, text = request.get("path"), request.get("text")
        if not isinstance(path, str) or not path or not isinstance(text, str):
            raise ControlError("Give a file and its new text.")
        await self._until_paused()
        event = await self.session.write(path, text, actor=Actor.HUMAN)
        return {"path": path, "seq": event.seq}

    async def _tell(self, request: dict[str, Any]) -> dict[str, Any]:
        text = request.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ControlError("Give a message for the agent.")
        self.agent.tell(text)
        return {}


@dataclass
class ControlClient:
    """The person's side: one blocking request at a time (the UI calls it from a thread)."""

    socket_path: Path
    timeout: float = PAUSE_WAIT + 30

    @classmethod
    def for_trajectory(cls, trajectory: Path) -> ControlClient | None:
        """The client for a session still running, or None (finished, or not reachable)."""
        try:
            record = json.loads(control_file(trajectory).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or not isinstance(record.get("socket"), str):
            return None
        path = Path(record["socket"])
        return cls(path) if path.exists() else None

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request; its answer's fields. Raises ControlError with the session's
        sentence when it says no, or when the session cannot be reached."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(self.timeout)
            try:
                sock.connect(str(self.socket_path))
                sock.sendall(json.dumps({"op": op, **fields}).encode() + b"\n")
                data = b""
                while not data.endswith(b"\n"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except TimeoutError:
                raise ControlError(f"The session did not answer {op!r} in time.") from None
            except OSError as exc:
                raise ControlError(
                    f"The session cannot be reached ({exc.strerror or exc}); it may have ended."
                ) from None
        try:
            answer = json.loads(data)
        except ValueError:
            raise ControlError("The session ended before it answered.") from None
        if not answer.get("ok"):
            raise ControlError(str(answer.get("error") or "The session said no."))
        answer.pop("ok", None)
        return dict(answer)
