"""The `docker` backend: one container per session, as fast to use as a local shell.

The container runs `sleep infinity` under docker-init as an unprivileged user (uid 1000) with
every capability dropped, no-new-privileges, memory (no swap), CPU and pids limits, no network
unless asked for, no docker.sock, and published ports on 127.0.0.1 only. It carries RepoSim's
labels (backends/docker_engine.py) so `reposim gc` can find it if this process dies.

Starting: create and start the container, then at once and side by side: copy the workspace
(the repository, `.git` included, owned by the user) with one `put_archive`, start the reaper,
start the command shell. A root exec adds a passwd entry only for images without our uid.

Long-lived attached execs do the work, each one socket to the daemon:
- the command shell: a `PersistentShell` (backends/shell.py) over the exec's multiplexed stream,
  so a command costs one write and one read, not one `docker exec`;
- the reaper: a bash loop made only of builtins that signals a shell's process groups (its whole
  session, so a job's orphans too) and reads the cgroup's OOM counter. Already running and never
  forking, it still works when a fork bomb has used up the pids limit and a new exec would fail;
- the file helper: a resident python3 process that serves file operations confined to the
  workspace (paths resolved with realpath inside the container), so the editor reads and saves
  while a long command runs. Images without python3 get a slower bash fallback.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import contextlib
import functools
import io
import json
import os
import posixpath
import re
import secrets
import signal
import socket
import ssl
import stat as stat_mod
import struct
import tarfile
import tempfile
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from backends.base import (
    BackendDescription,
    BackendError,
    BackendUnavailableError,
    DirEntry,
    FileMissingError,
    FileStat,
    PathEscapeError,
    Pty,
)
from backends.docker_engine import connect, image_missing_error, owner_labels
from backends.shell import PersistentShell, ShellBackend, ShellChannel, quote

DEFAULT_IMAGE = "python:3.11-slim"
WORKSPACE = "/workspace"
PRIVATE_DIR = "/tmp/reposim"
CA_PATH = "/etc/ssl/certs/reposim-ca-bundle.crt"
CA_ENV_VARS = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")
CA_TARGET_VARS = (
    "SSL_CERT_FILE",
    "PIP_CERT",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
_READ_CHUNK = 65536
_UID = 1000
_T = TypeVar("_T")
_SIZE = re.compile(r"^\d+(\.\d+)?[bkmg]?$", re.IGNORECASE)


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "reposim" / "config.toml"


def default_image() -> str:
    """The image when none is given: $REPOSIM_DOCKER_IMAGE, then docker.image in the config."""
    from_env = os.environ.get("REPOSIM_DOCKER_IMAGE")
    if from_env:
        return from_env
    path = config_path()
    if path.is_file():
        try:
            config = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise BackendError(f"{path} is not valid TOML ({exc}).") from None
        image = config.get("docker", {}).get("image")
        if isinstance(image, str) and image:
            return image
    return DEFAULT_IMAGE


def _host_ca_bundle() -> Path | None:
    for var in CA_ENV_VARS:
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def _proxy_env() -> dict[str, str]:
    env = {}
    for var in PROXY_VARS:
        for name in (var, var.lower()):
            if os.environ.get(name):
                env[name] = os.environ[name]
    return env


# Docker SDK calls block on HTTP; they get their own pool so that many sessions opening at
# once (32 on a 2-core machine) are not queued behind asyncio's small default executor.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="reposim-docker")


def _blocking(func: Callable[..., _T], /, *args: Any, **kwargs: Any) -> asyncio.Future[_T]:
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(_POOL, functools.partial(func, *args, **kwargs))


# --- the exec stream ---------------------------------------------------------------------------


class _ExecStream:
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
        user: str = "",
        workdir: str | None = None,
        environment: Mapping[str, str] | None = None,
    ) -> _ExecStream:
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
            exec_id, raw = await _blocking(start)
        except Exception as exc:
            raise _exec_error(container, exc) from None
        sock = getattr(raw, "_sock", raw)
        if not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket):
            with contextlib.suppress(Exception):
                raw.close()
            raise BackendUnavailableError(
                "The docker backend needs the engine on a unix socket or plain tcp:// "
                "(DOCKER_HOST with TLS or ssh:// is not supported yet)."
            )
        reader, writer = await asyncio.open_connection(sock=sock, limit=_READ_CHUNK * 4)
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


def _exec_error(container: str, exc: Exception) -> BackendError:
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


class _Demuxer:
    """Reads Docker's multiplexed stream (8-byte headers: stream, 0, 0, 0, big-endian size)."""

    def __init__(self, reader: asyncio.StreamReader, *, stdout_only: bool = False) -> None:
        self._reader = reader
        self._stdout_only = stdout_only

    async def recv(self) -> bytes:
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


async def _read_marker(recv: Any, pattern: re.Pattern[bytes], limit: float = 30.0) -> bytes:
    """Read until `pattern` shows up; returns what followed it."""
    buf = b""

    async def loop() -> bytes:
        nonlocal buf
        while True:
            match = pattern.search(buf)
            if match:
                return match.group(1)
            chunk = await recv()
            if not chunk:
                raise BackendError(
                    "A process in the container exited at once: " + buf.decode(errors="replace")
                )
            buf += chunk

    try:
        return await asyncio.wait_for(loop(), limit)
    except TimeoutError:
        raise BackendError("A process in the container did not start in time.") from None


# --- the reaper --------------------------------------------------------------------------------

# Only builtins: it must keep working when the pids limit forbids every fork. Commands:
#   ID kill SIG ROOT children   signal the process groups of ROOT's session and descendants
#   ID kill SIG ROOT tree       the same, ROOT included
#   ID oom                      the cgroup's oom_kill counter
# Each answer is one line starting with the request's ID.
_REAPER = r"""
exec 2>/dev/null
oomfile=
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
  [[ -r $f ]] && { oomfile=$f; break; }
done
known=
while IFS=: read -r n _ u _; do [[ $u == "$UID" ]] && { known=$n; break; }; done < /etc/passwd
py=$(type -P python3)
printf '\036READY:%s:%s\036\n' "$known" "$py"
while read -r id cmd sig root mode; do
  if [[ $cmd == oom ]]; then
    n=0
    if [[ -n $oomfile ]]; then
      while read -r k v; do [[ $k == oom_kill ]] && n=$v; done < "$oomfile"
    fi
    printf '%s %s\n' "$id" "$n"
    continue
  fi
  unset parent group sess; declare -A parent=() group=() sess=()
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    read -r st < "$d/stat" || continue
    f=(${st##*) })
    parent[$p]=${f[1]}; group[$p]=${f[2]}; sess[$p]=${f[3]}
  done
  rootsess=${sess[$root]:-x}; rootgroup=${group[$root]:-x}
  declare -A doomed=()
  # Everything in the shell's session (a job's orphans too), then descendants that left it.
  for p in "${!sess[@]}"; do
    [[ ${sess[$p]} == "$rootsess" && $p != "$root" && $p != $$ ]] && doomed[$p]=1
  done
  frontier=("$root")
  while ((${#frontier[@]})); do
    next=()
    for p in "${!parent[@]}"; do
      for f in "${frontier[@]}"; do
        if [[ ${parent[$p]} == "$f" ]]; then doomed[$p]=1; next+=("$p"); fi
      done
    done
    frontier=("${next[@]}")
  done
  unset groups; declare -A groups=()
  for p in "${!doomed[@]}"; do
    g=${group[$p]}
    [[ $g != "$rootgroup" && $g != 1 ]] && groups[$g]=1
  done
  for g in "${!groups[@]}"; do kill -s "$sig" -- "-$g" 2>/dev/null; done
  if [[ $sig == 9 || $mode == tree ]]; then
    for p in "${!doomed[@]}"; do kill -s "$sig" "$p" 2>/dev/null; done
  fi
  [[ $mode == tree ]] && kill -s "$sig" "$root" 2>/dev/null
  printf '%s ok\n' "$id"
done
"""


class _Reaper:
    def __init__(self, stream: _ExecStream) -> None:
        self._stream = stream
        self._lock = asyncio.Lock()
        self._oom_seen = 0
        self._asked = 0
        self._buffer = bytearray()
        self.user_name = ""
        """The image's user name for the session's uid; empty when the image has none."""
        self.python = ""
        """The path of python3 in the container, if it has one (for the file helper)."""

    @classmethod
    async def open(cls, api: Any, container: str, user: str) -> _Reaper:
        stream = await _ExecStream.open(api, container, ["bash", "-c", _REAPER], user=user)
        reaper = cls(stream)
        demux = _Demuxer(stream.reader)
        ready = await _read_marker(demux.recv, re.compile(rb"\x1eREADY:([^\x1e]*)\x1e\n"))
        name, _, python = ready.decode(errors="replace").partition(":")
        reaper.user_name = name
        reaper.python = python
        reaper._demux = demux
        reaper._oom_seen = await reaper.oom_count()
        return reaper

    _demux: _Demuxer

    async def _ask(self, line: str) -> str:
        async with self._lock:
            self._asked += 1
            tag = f"q{self._asked}"
            await self._stream.write(f"{tag} {line}\n".encode())
            while True:
                newline = self._buffer.find(b"\n")
                if newline >= 0:
                    answer = self._buffer[:newline].decode(errors="replace")
                    del self._buffer[: newline + 1]
                    if answer.startswith(tag + " "):
                        return answer[len(tag) + 1 :]
                    continue
                chunk = await asyncio.wait_for(self._demux.recv(), 30)
                if not chunk:
                    raise BackendError("The container's process reaper has stopped.")
                self._buffer += chunk

    async def kill(self, sig: int, root: int, *, tree: bool = False) -> None:
        await self._ask(f"kill {int(sig)} {root} {'tree' if tree else 'children'}")

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


# --- the shell channel -------------------------------------------------------------------------

_PID_MARKER = re.compile(rb"\x1ePID:(\d+)\x1e\n")
_FALLBACK_USER = "reposim"
_FALLBACK_HOME = "/home/reposim"
# USER, LOGNAME and HOME from the image's passwd entry for our uid (builtins only); when the
# image has none, the root fix-up adds `reposim` with the home the workspace archive creates.
_IDENTITY = (
    "while IFS=: read -r __n _ __u _ _ __h _; do "
    '[ "$__u" = "$UID" ] && { USER=$__n; HOME=$__h; break; }; done </etc/passwd; '
    f'export USER="${{USER:-{_FALLBACK_USER}}}"; export LOGNAME="$USER"; '
    f'[ -z "$HOME" ] || [ "$HOME" = / ] && export HOME={_FALLBACK_HOME}; '
    "unset __n __u __h\n"
)


class _DockerShellChannel(ShellChannel):
    """A bash in the container over one attached exec (stdout and stderr demultiplexed)."""

    def __init__(self, stream: _ExecStream, pid: int, reaper: Callable[[], _Reaper | None]) -> None:
        self._stream = stream
        self._demux = _Demuxer(stream.reader)
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
        reaper: Callable[[], _Reaper | None],
    ) -> _DockerShellChannel:
        stream = await _ExecStream.open(
            api,
            container,
            ["bash", "--noprofile", "--norc"],
            user=user,
            workdir=WORKSPACE,
            environment=env,
        )
        channel = cls(stream, 0, reaper)
        await stream.write((_IDENTITY + "printf '\\036PID:%d\\036\\n' $$\n").encode())
        buf = b""
        while not (match := _PID_MARKER.search(buf)):
            chunk = await asyncio.wait_for(channel._demux.recv(), 30)
            if not chunk:
                raise BackendError(
                    "The shell in the container exited at once: " + buf.decode(errors="replace")
                )
            buf += chunk
        channel.pid = int(match.group(1))
        channel._pending = buf[match.end() :]
        return channel

    async def send(self, data: bytes) -> None:
        await self._stream.write(data)

    async def recv(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        return await self._demux.recv()

    async def signal_children(self, sig: int) -> None:
        reaper = self._reaper()
        if reaper is not None:
            with contextlib.suppress(BackendError, TimeoutError):
                await reaper.kill(sig, self.pid)

    async def close(self) -> None:
        reaper = self._reaper()
        if reaper is not None:
            with contextlib.suppress(BackendError, TimeoutError):
                await reaper.kill(signal.SIGKILL, self.pid, tree=True)
        await self._stream.close()

    async def oom_killed_since(self, since: float) -> bool:
        reaper = self._reaper()
        if reaper is None:
            return False
        try:
            return await reaper.oom_since_last_look()
        except (BackendError, TimeoutError):
            return False


# --- the PTY -----------------------------------------------------------------------------------


class DockerPty(Pty):
    """An interactive bash on a terminal inside the container (exec with tty=True)."""

    def __init__(self, api: Any, stream: _ExecStream, pid: int, reaper: _Reaper) -> None:
        self._api = api
        self._stream = stream
        self._pid = pid
        self._reaper = reaper
        self._closed = False
        self._pending = b""

    @classmethod
    async def spawn(
        cls,
        api: Any,
        container: str,
        user: str,
        env: Mapping[str, str],
        reaper: _Reaper,
        cols: int,
        rows: int,
    ) -> DockerPty:
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(cols), "LINES": str(rows)}
        # The shell waits for one line before it announces its pid, so nothing it prints can be
        # lost in the HTTP client's buffer while the daemon hijacks the connection.
        script = (
            "stty -echo; read -r _; stty echo; "
            + _IDENTITY
            + "printf '\\036PID:%d\\036\\n' $$; exec bash -i"
        )
        stream = await _ExecStream.open(
            api, container, ["bash", "-c", script], tty=True, user=user, workdir=WORKSPACE,
            environment=env,
        )  # fmt: skip
        await stream.write(b"go\n")
        buf = b""
        while not (match := _PID_MARKER.search(buf.replace(b"\r\n", b"\n"))):
            chunk = await asyncio.wait_for(stream.reader.read(_READ_CHUNK), 30)
            if not chunk:
                raise BackendError("The terminal in the container closed at once.")
            buf += chunk
        pty = cls(api, stream, int(match.group(1)), reaper)
        marker_end = buf.find(b"\x1e", buf.find(b"\x1ePID:") + 1) + 1
        pty._pending = buf[marker_end:].lstrip(b"\r\n")
        await pty.resize(cols, rows)
        return pty

    async def read(self) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        if self._closed:
            return b""
        try:
            data = await self._stream.reader.read(_READ_CHUNK)
        except ConnectionError:
            data = b""
        if not data:
            self._closed = True
        return data

    async def write(self, data: bytes) -> None:
        if not self._closed:
            await self._stream.write(data)

    async def resize(self, cols: int, rows: int) -> None:
        if self._closed:
            return
        with contextlib.suppress(Exception):
            await _blocking(self._api.exec_resize, self._stream.exec_id, height=rows, width=cols)

    async def close(self) -> None:
        if self._closed and self._stream.writer.is_closing():
            return
        self._closed = True
        with contextlib.suppress(BackendError, TimeoutError):
            await self._reaper.kill(signal.SIGHUP, self._pid, tree=True)
            await self._reaper.kill(signal.SIGKILL, self._pid, tree=True)
        await self._stream.close()

    @property
    def closed(self) -> bool:
        return self._closed


# --- file operations ----------------------------------------------------------------------

# Status codes shared by both file services.
_MISSING, _ESCAPE, _IS_DIR, _NOT_DIR, _EXISTS, _DENIED, _FAILED = 2, 3, 4, 5, 6, 7, 8

# The file helper for images with python3: one resident process, no fork per operation, binary
# payloads framed by length. A request is a JSON line (then `size` raw bytes); an answer is a JSON
# line with `code` and `size` (then `size` raw bytes). Paths arrive absolute and normalised.
_FILE_HELPER = r"""
import json, os, shutil, stat, sys
W = sys.argv[1]
inp, out = sys.stdin.buffer, sys.stdout.buffer
class Escape(Exception):
    pass
def inside(p):
    if p != W and not p.startswith(W + "/"):
        raise Escape
    return p
def full(p):
    return inside(os.path.realpath(p))
def link(p):
    if p == W:
        return W
    return os.path.join(inside(os.path.realpath(os.path.dirname(p))), os.path.basename(p))
def kind(mode):
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
def handle(op, a, data):
    if op == "read":
        p = full(a["path"])
        with open(p, "rb") as f:
            return f.read()
    if op == "write":
        p = full(a["path"])
        if os.path.isdir(p):
            raise IsADirectoryError
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        return b""
    if op == "delete":
        p = link(a["path"])
        if p == W:
            raise IsADirectoryError
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
        return b""
    if op == "rename":
        s, d = link(a["path"]), link(a["dst"])
        if not os.path.lexists(s):
            raise FileNotFoundError
        if os.path.lexists(d):
            raise FileExistsError
        os.makedirs(os.path.dirname(d), exist_ok=True)
        os.rename(s, d)
        return b""
    if op == "stat":
        st = os.lstat(link(a["path"]))
        return json.dumps([st.st_mode, st.st_size, st.st_mtime]).encode()
    if op == "list":
        p = full(a["path"])
        entries = []
        with os.scandir(p) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                k = kind(st.st_mode)
                if stat.S_ISLNK(st.st_mode):
                    try:
                        k = kind(os.stat(e.path).st_mode)
                    except OSError:
                        k = "symlink"
                entries.append([e.name, k, st.st_size])
        return json.dumps(entries).encode()
    raise ValueError(op)
CODES = [(Escape, 3), (FileNotFoundError, 2), (IsADirectoryError, 4),
         (NotADirectoryError, 5), (FileExistsError, 6), (PermissionError, 7)]
out.write(b"\x1eREADY\x1e\n"); out.flush()
while True:
    line = inp.readline()
    if not line:
        break
    req = json.loads(line)
    data = inp.read(req["size"]) if req["size"] else b""
    try:
        body, code = handle(req["op"], req, data), 0
    except Exception as exc:
        code = next((c for t, c in CODES if isinstance(exc, t)), 8)
        body = str(exc).encode()
    out.write(json.dumps({"code": code, "size": len(body)}).encode() + b"\n")
    out.write(body)
    out.flush()
"""


class _PythonFiles:
    """File operations served by the resident python3 helper."""

    def __init__(self, stream: _ExecStream) -> None:
        self._stream = stream
        self._demux = _Demuxer(stream.reader, stdout_only=True)
        self._buffer = bytearray()
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, api: Any, container: str, user: str, python: str) -> _PythonFiles:
        stream = await _ExecStream.open(
            api, container, [python, "-I", "-c", _FILE_HELPER, WORKSPACE], user=user
        )
        files = cls(stream)
        await files._read_exactly_line(b"\x1eREADY\x1e")
        return files

    async def _fill(self) -> None:
        chunk = await self._demux.recv()
        if not chunk:
            raise BackendError("The container's file helper has stopped.")
        self._buffer += chunk

    async def _read_exactly_line(self, expected: bytes | None = None) -> bytes:
        while (newline := self._buffer.find(b"\n")) < 0:
            await asyncio.wait_for(self._fill(), 60)
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        if expected is not None and line != expected:
            raise BackendError(f"The container's file helper did not start: {line!r}")
        return line

    async def call(self, op: str, data: bytes = b"", **args: str) -> tuple[int, bytes]:
        async with self._lock:
            request = json.dumps({"op": op, "size": len(data), **args}).encode() + b"\n"
            await self._stream.write(request + data)
            header = json.loads(await self._read_exactly_line())
            size = int(header["size"])
            while len(self._buffer) < size:
                await asyncio.wait_for(self._fill(), 60)
            body = bytes(self._buffer[:size])
            del self._buffer[:size]
            return int(header["code"]), body

    async def close(self) -> None:
        await self._stream.close()


# The bash fallback for images without python3: functions the file shell defines once, with the
# same status codes. Slower (a few forks per operation; writes go through base64).
_FILE_FUNCTIONS = r"""
__rs_in() { case "$1" in "$W"|"$W"/*) return 0;; *) return 3;; esac; }
__rs_full() { local r; r=$(realpath -m -- "$1") || return 3; __rs_in "$r" || return 3; R=$r; }
__rs_link() {
  [ "$1" = "$W" ] && { R=$W; return 0; }
  local d; d=$(realpath -m -- "$(dirname -- "$1")") || return 3
  __rs_in "$d" || return 3; R=$d/$(basename -- "$1"); return 0
}
__rs_read() {
  __rs_full "$1" || return; [ -d "$R" ] && return 4; [ -e "$R" ] || return 2
  [ -r "$R" ] || return 7; cat -- "$R"
}
__rs_write() {
  __rs_full "$1" || return; [ -d "$R" ] && return 4
  mkdir -p -- "$(dirname -- "$R")" 2>/dev/null || return 7
  { [ -e "$R" ] && [ ! -w "$R" ]; } && return 7
  base64 -d > "$R" <<< "$2" || return 7
}
__rs_delete() {
  __rs_link "$1" || return; [ "$R" = "$W" ] && return 4
  { [ -e "$R" ] || [ -L "$R" ]; } || return 2; rm -rf -- "$R" || return 7
}
__rs_rename() {
  __rs_link "$1" || return; local s=$R; __rs_link "$2" || return
  { [ -e "$s" ] || [ -L "$s" ]; } || return 2; { [ -e "$R" ] || [ -L "$R" ]; } && return 6
  mkdir -p -- "$(dirname -- "$R")" && mv -T -- "$s" "$R" || return 7
}
__rs_stat() {
  __rs_link "$1" || return; { [ -e "$R" ] || [ -L "$R" ]; } || return 2
  stat -c '%f %s %Y' -- "$R"
}
__rs_list() {
  __rs_full "$1" || return; [ -e "$R" ] || return 2; [ -d "$R" ] || return 5
  find "$R" -mindepth 1 -maxdepth 1 -printf '%Y %s %P\0'
}
"""

_FIND_KINDS = {"d": "dir", "f": "file", "l": "symlink", "N": "symlink", "L": "symlink"}


class _ShellFiles:
    """File operations through a second persistent shell (for images without python3)."""

    def __init__(self, shell: PersistentShell) -> None:
        self._shell = shell
        self._ready = False

    async def call(self, op: str, data: bytes = b"", **args: str) -> tuple[int, bytes]:
        if not self._ready:
            setup = await self._shell.run(f"W={quote(WORKSPACE)}\n{_FILE_FUNCTIONS}")
            if setup.exit_code != 0:
                raise BackendError(f"The container's file helper failed: {setup.output!r}")
            self._ready = True
        words = [f"__rs_{op}", args["path"]]
        if "dst" in args:
            words.append(args["dst"])
        if op == "write":
            words.append(base64.b64encode(data).decode())
        result = await self._shell.run(" ".join(quote(w) for w in words), timeout=120)
        if result.shell_restarted:
            self._ready = False
        code = _FAILED if result.exit_code is None else result.exit_code
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


def _kind_of_mode(mode: int) -> str:
    if stat_mod.S_ISLNK(mode):
        return "symlink"
    if stat_mod.S_ISDIR(mode):
        return "dir"
    if stat_mod.S_ISREG(mode):
        return "file"
    return "other"


# --- containers left behind when the interpreter exits --------------------------------------

_live: dict[str, Any] = {}
_live_lock = threading.Lock()


@atexit.register
def _remove_leftovers() -> None:
    """Remove containers whose session never reached stop() (an error, an abandoned loop)."""
    with _live_lock:
        leftovers = list(_live.items())
        _live.clear()
    for container, api in leftovers:
        with contextlib.suppress(Exception):
            api.remove_container(container, force=True, v=True)


def _ignore_result(future: asyncio.Future[Any]) -> None:
    """A background warm-up's failure shows up again, clearly, on first real use."""
    if not future.cancelled():
        future.exception()


# --- the backend -------------------------------------------------------------------------------


@dataclass
class DockerLimits:
    memory: str = "2g"
    cpus: float = 2.0
    pids: int = 512

    def as_dict(self) -> dict[str, Any]:
        return {"memory": self.memory, "cpus": self.cpus, "pids": self.pids}


class DockerBackend(ShellBackend):
    """A workspace inside a fresh container; the host checkout is never changed."""

    kind = "docker"

    def __init__(
        self,
        source: Path | str,
        *,
        image: str | None = None,
        network: bool = False,
        memory: str | None = None,
        cpus: float | None = None,
        pids: int | None = None,
        user: int = _UID,
        ca_bundle: Path | str | None = None,
        proxy: bool = True,
        env: Mapping[str, str] | None = None,
        ports: Mapping[int, int | None] | None = None,
        session_id: str | None = None,
    ) -> None:
        self.source = Path(source).resolve()
        self.image = image or default_image()
        self.network = network
        defaults = DockerLimits()
        self.limits = DockerLimits(
            memory=memory or defaults.memory,
            cpus=cpus if cpus is not None else defaults.cpus,
            pids=pids if pids is not None else defaults.pids,
        )
        if not _SIZE.match(self.limits.memory):
            raise BackendError(
                f"The memory limit {self.limits.memory!r} is not a size like 512m or 2g."
            )
        if self.limits.cpus <= 0 or self.limits.pids <= 0:
            raise BackendError("The cpus and pids limits must be positive numbers.")
        if user == 0:
            raise BackendError("The docker backend never runs sessions as root; pick a uid > 0.")
        self.uid = user
        if ca_bundle is not None and not Path(ca_bundle).is_file():
            raise BackendError(f"The CA bundle {ca_bundle} does not exist.")
        self.ca_bundle = Path(ca_bundle) if ca_bundle else _host_ca_bundle()
        self.proxy = proxy
        self.extra_env = dict(env or {})
        self.ports = dict(ports or {})
        self.session_id = session_id or secrets.token_hex(6)
        self._client: Any = None
        self._api: Any = None
        self._container: str | None = None
        self._image_id: str | None = None
        self._user_name = ""
        self._shell: PersistentShell | None = None
        self._files: _PythonFiles | _ShellFiles | None = None
        self._files_lock = asyncio.Lock()
        self._warmup: asyncio.Future[Any] | None = None
        self._reaper: _Reaper | None = None
        self._ptys: list[DockerPty] = []

    # -- lifecycle --

    @property
    def container_id(self) -> str | None:
        return self._container

    def _env(self) -> dict[str, str]:
        env = {"LANG": "C.UTF-8", "REPOSIM": "1"}
        if self.ca_bundle is not None:
            env.update(dict.fromkeys(CA_TARGET_VARS, CA_PATH))
        if self.network and self.proxy:
            env.update(_proxy_env())
        env.update(self.extra_env)
        return env

    async def start(self) -> None:
        if self._client is not None:
            raise BackendError("This docker backend is already started.")
        if not self.source.is_dir():
            raise BackendError(f"{self.source} is not a directory.")
        self._client = await _blocking(connect)
        self._api = self._client.api
        try:
            await self._create()
            container = self._require_container()
            archive = await _blocking(self._workspace_archive)
            shell = PersistentShell(self._open_shell_channel, WORKSPACE)
            # The workspace copy, the user fix-up, the reaper and the shell are independent: the
            # shell only needs the files before its first command, which start() awaits.
            with archive:
                results = await asyncio.gather(
                    self._put_archive(archive),
                    _Reaper.open(self._api, container, self._user_spec()),
                    shell.start(),
                    return_exceptions=True,
                )
            self._shell = shell
            if isinstance(results[1], _Reaper):
                self._reaper = results[1]
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            assert self._reaper is not None
            self._user_name = self._reaper.user_name
            if not self._user_name:
                await self._ensure_user()
            # Start the file helper in the background: the editor's first read finds it ready.
            self._warmup = asyncio.ensure_future(self._files_service())
            self._warmup.add_done_callback(_ignore_result)
        except BaseException:
            await self.stop()
            raise

    def _user_spec(self) -> str:
        return f"{self.uid}:{self.uid}"

    def _require_container(self) -> str:
        if self._container is None:
            raise BackendError("The docker backend has not been started.")
        return self._container

    async def _create(self) -> None:
        import docker.errors

        api = self._api
        try:
            info = await _blocking(api.inspect_image, self.image)
        except docker.errors.ImageNotFound:
            raise image_missing_error(self.image) from None
        except docker.errors.APIError as exc:
            if exc.status_code == 404:
                raise image_missing_error(self.image) from None
            raise BackendUnavailableError(
                f"Docker refused to inspect the image {self.image}: {exc.explanation or exc}"
            ) from None
        self._image_id = info["Id"]
        ports = {f"{port}/tcp": ("127.0.0.1", host) for port, host in self.ports.items()}
        host_config = api.create_host_config(
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=self.limits.memory,
            memswap_limit=self.limits.memory,
            nano_cpus=int(self.limits.cpus * 1e9),
            pids_limit=self.limits.pids,
            network_mode="bridge" if self.network else "none",
            port_bindings=ports or None,
            init=True,
        )

        def create_and_start() -> str:
            created = api.create_container(
                self.image,
                command=["sleep", "infinity"],
                user=self._user_spec(),
                working_dir=WORKSPACE,
                labels=owner_labels("session", self.session_id),
                host_config=host_config,
                ports=list(self.ports) or None,
                name=f"reposim-{self.session_id}",
                network_disabled=not self.network,
                environment=self._env(),
            )
            container = str(created["Id"])
            with _live_lock:
                _live[container] = api
            self._container = container
            api.start(container)
            return container

        try:
            await _blocking(create_and_start)
        except docker.errors.APIError as exc:
            raise BackendError(
                f"Docker could not start the container: {exc.explanation or exc}"
            ) from None

    async def _put_archive(self, archive: Any) -> None:
        import docker.errors

        try:
            await _blocking(self._api.put_archive, self._container, "/", archive)
        except docker.errors.APIError as exc:
            raise BackendError(
                f"Could not copy the workspace into the container: {exc.explanation or exc}"
            ) from None

    async def _ensure_user(self) -> None:
        """Give our uid a passwd entry when the image has none (tools like git and ssh want one).

        Runs as the container's root, which has no capabilities but owns /etc/passwd."""
        script = (
            f'grep -q "^[^:]*:[^:]*:{self.uid}:" /etc/passwd || echo '
            f'"{_FALLBACK_USER}:x:{self.uid}:{self.uid}:RepoSim:{_FALLBACK_HOME}:/bin/sh"'
            " >> /etc/passwd; "
            f'grep -q "^[^:]*:[^:]*:{self.uid}:" /etc/group || echo '
            f'"{_FALLBACK_USER}:x:{self.uid}:" >> /etc/group; '
            f'grep "^[^:]*:[^:]*:{self.uid}:" /etc/passwd | cut -d: -f1'
        )

        def run() -> str:
            exec_id = self._api.exec_create(self._container, ["sh", "-c", script], user="0")
            return bytes(self._api.exec_start(exec_id["Id"])).decode(errors="replace")

        output = await _blocking(run)
        self._user_name = output.strip().splitlines()[-1] if output.strip() else _FALLBACK_USER

    def _workspace_archive(self) -> Any:
        """One tar with the workspace, the home and private directories and the CA bundle."""
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it
        uid = self.uid

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = uid
            info.uname = info.gname = ""
            return info

        def add_dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = mode
            info.uid = info.gid = uid
            tar.addfile(info)

        with tarfile.open(fileobj=spool, mode="w", format=tarfile.GNU_FORMAT) as tar:
            tar.add(str(self.source), arcname=WORKSPACE.lstrip("/"), filter=owned)
            add_dir(tar, PRIVATE_DIR.lstrip("/"), 0o700)
            add_dir(tar, _FALLBACK_HOME.lstrip("/"), 0o755)
            if self.ca_bundle is not None:
                data = self.ca_bundle.read_bytes()
                info = tarfile.TarInfo(CA_PATH.lstrip("/"))
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
        spool.seek(0)
        return spool

    async def _open_shell_channel(self) -> _DockerShellChannel:
        return await _DockerShellChannel.open(
            self._api,
            self._require_container(),
            self._user_spec(),
            self._env(),
            lambda: self._reaper,
        )

    async def stop(self) -> None:
        if self._warmup is not None and not self._warmup.done():
            self._warmup.cancel()
            with contextlib.suppress(BaseException):
                await self._warmup
        self._warmup = None
        for pty in self._ptys:
            with contextlib.suppress(Exception):
                await pty.close()
        self._ptys.clear()
        for service in (self._shell, self._files):
            if service is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(service.close(), 5)
        self._shell = self._files = None
        if self._reaper is not None:
            await self._reaper.close()
            self._reaper = None
        if self._container is not None:
            container, self._container = self._container, None
            with contextlib.suppress(Exception):
                await _blocking(self._api.remove_container, container, force=True, v=True)
            with _live_lock:
                _live.pop(container, None)
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    # -- commands --

    async def open_pty(self, cols: int = 80, rows: int = 24) -> Pty:
        if self._reaper is None:
            raise BackendError("The docker backend has not been started.")
        pty = await DockerPty.spawn(
            self._api,
            self._require_container(),
            self._user_spec(),
            self._env(),
            self._reaper,
            cols,
            rows,
        )
        self._ptys.append(pty)
        return pty

    # -- files --

    def _absolute(self, path: str) -> str:
        joined = posixpath.normpath(posixpath.join(WORKSPACE, path))
        if joined != WORKSPACE and not joined.startswith(WORKSPACE + "/"):
            raise PathEscapeError(f"{path} is outside the workspace; refusing to touch it.")
        return joined

    async def _files_service(self) -> _PythonFiles | _ShellFiles:
        if self._shell is None or self._reaper is None:
            raise BackendError("The docker backend has not been started.")
        async with self._files_lock:
            if self._files is None:
                if self._reaper.python:
                    self._files = await _PythonFiles.open(
                        self._api, self._require_container(), self._user_spec(), self._reaper.python
                    )
                else:
                    shell = PersistentShell(self._open_shell_channel, WORKSPACE)
                    await shell.start()
                    self._files = _ShellFiles(shell)
            return self._files

    async def _file_op(self, op: str, path: str, data: bytes = b"", **args: str) -> bytes:
        files = await self._files_service()
        try:
            code, body = await files.call(op, data, path=self._absolute(path), **args)
        except BackendError:
            # The helper died (killed by the user, OOM...): start a new one next time.
            self._files = None
            with contextlib.suppress(Exception):
                await files.close()
            raise
        if code == 0:
            return body
        if code == _MISSING:
            raise FileMissingError(f"{path} does not exist in the workspace.")
        if code == _ESCAPE:
            raise PathEscapeError(f"{path} is outside the workspace; refusing to touch it.")
        if code == _IS_DIR:
            raise BackendError(f"{path} is a directory, not a file.")
        if code == _NOT_DIR:
            raise BackendError(f"{path} is not a directory.")
        if code == _EXISTS:
            raise BackendError(f"{args.get('dst', path)} already exists; refusing to overwrite it.")
        if code == _DENIED:
            raise BackendError(f"{path} is not accessible (permission denied).")
        detail = body.decode(errors="replace").strip().splitlines()
        reason = detail[-1] if detail else f"status {code}"
        raise BackendError(f"The file operation on {path} failed: {reason}")

    async def read_file(self, path: str) -> bytes:
        return await self._file_op("read", path)

    async def write_file(self, path: str, data: bytes) -> None:
        await self._file_op("write", path, data)

    async def delete(self, path: str) -> None:
        if self._absolute(path) == WORKSPACE:
            raise BackendError("Refusing to delete the workspace root.")
        await self._file_op("delete", path)

    async def rename(self, src: str, dst: str) -> None:
        await self._file_op("rename", src, dst=self._absolute(dst))

    async def stat(self, path: str) -> FileStat:
        try:
            mode, size, mtime = json.loads(await self._file_op("stat", path))
        except ValueError:
            raise BackendError(f"Could not read the status of {path}.") from None
        return FileStat(path, _kind_of_mode(int(mode)), int(size), float(mtime), int(mode))

    async def list_dir(self, path: str) -> list[DirEntry]:
        entries = [
            DirEntry(str(name), str(kind), int(size))
            for name, kind, size in json.loads(await self._file_op("list", path))
        ]
        return sorted(entries, key=lambda e: (e.kind != "dir", e.name.lower()))

    # -- description --

    @property
    def workspace_path(self) -> str:
        return WORKSPACE

    @property
    def private_dir(self) -> str:
        return PRIVATE_DIR

    def describe(self) -> BackendDescription:
        return BackendDescription(
            kind=self.kind,
            workspace=WORKSPACE,
            image=self.image,
            image_id=self._image_id,
            container=self._container,
            limits=self.limits.as_dict(),
            extra={
                "source": str(self.source),
                "network": self.network,
                "user": f"{self._user_name or '?'} (uid {self.uid})",
                "ca_bundle": str(self.ca_bundle) if self.ca_bundle else None,
                "ports": {str(k): v for k, v in self.ports.items()},
            },
        )
