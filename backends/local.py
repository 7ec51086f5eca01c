"""The `local` backend: the embedded default. Not a sandbox.

It works on a scratch copy of the repository (history, uncommitted changes and untracked files
included), so the user's checkout is never modified unless `in_place` is asked for. Commands run
in a persistent bash on this machine with the user's own rights.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import struct
import subprocess
import tempfile
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from backends import proctree
from backends.base import (
    BackendDescription,
    BackendError,
    DirEntry,
    FileStat,
    Pty,
    kind_of_mode,
)
from backends.command_output import CommandOutputs
from backends.confined import ConfinedRoot
from backends.private_state import me, owner_alive
from backends.pty_reader import PtyReader
from backends.session_env import (
    PreparedVenv,
    repository_venv,
    session_environment,
    session_venv,
    with_import_roots,
)
from backends.shell import (
    COMMAND_ID_VAR,
    DEFAULT_TERM,
    PersistentShell,
    ShellBackend,
    ShellChannel,
    check_term,
)

SESSION_MARK_VAR = "REPOSIM_SESSION_MARK"
"""In the environment of everything a local session runs, so closing it finds them all."""
SHELL_MARK_VAR = "REPOSIM_SHELL_MARK"
"""Which command shell (a session has a new one after `exit`) a process belongs to."""


OWNER_FILE = "reposim-owner.json"
"""Beside a scratch workspace (`<workspace>.reposim-owner.json`) and inside a private dir: the
process that made it, so `reposim gc` can tell what a crashed session left behind."""
PRIVATE_PREFIX = "reposim-private-"


def _write_owner(path: Path, mark: str) -> None:
    owner = me()
    owner["started"] = owner.pop("pid_start")  # the name owner files have always used
    path.write_text(json.dumps({**owner, "mark": mark}))


def _owner_alive(path: Path) -> tuple[bool, int | None, str | None]:
    """(whether the process named in an owner file still runs, its pid, its session's mark)."""
    try:
        owner = json.loads(path.read_text())
        pid, started = int(owner["pid"]), float(owner["started"])
        mark = owner.get("mark")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True, None, None  # unreadable: not ours to judge, leave it
    alive = owner_alive({**owner, "pid_start": started})  # not a reused pid
    return alive, pid, mark if isinstance(mark, str) else None


@dataclass(frozen=True)
class Leftover:
    """A scratch workspace or private dir found by `collect_local_garbage`."""

    kind: str  # "workspace" | "private dir"
    path: Path
    owner_pid: int | None
    orphaned: bool
    removed: bool


def collect_local_garbage(
    scratch_root: Path, *, temp_dir: Path | None = None, dry_run: bool = False
) -> list[Leftover]:
    """Remove the scratch workspaces (under `scratch_root`) and private dirs (in the temp dir)
    whose owner process is gone, after killing what that session still had running; what has
    no owner file, or a live owner, is left alone."""
    found: list[Leftover] = []
    candidates: list[tuple[str, Path, Path]] = []
    if scratch_root.is_dir():
        for owner in scratch_root.glob(f"*.{OWNER_FILE}"):
            workspace = owner.with_name(owner.name.removesuffix(f".{OWNER_FILE}"))
            candidates.append(("workspace", workspace, owner))
    temp = temp_dir or Path(tempfile.gettempdir())
    for private in temp.glob(f"{PRIVATE_PREFIX}*"):
        if (private / OWNER_FILE).is_file():
            candidates.append(("private dir", private, private / OWNER_FILE))
    for kind, path, owner in candidates:
        alive, pid, mark = _owner_alive(owner)
        removed = False
        if not alive and not dry_run:
            if mark:
                proctree.kill_session(None, SESSION_MARK_VAR, mark)
            shutil.rmtree(path, ignore_errors=True)
            owner.unlink(missing_ok=True)
            removed = not path.exists()
        found.append(Leftover(kind, path, pid, not alive, removed))
    return found


def copy_workspace(source: Path, dest: Path) -> None:
    """Copy a repository with everything in it (a git repo keeps history and dirty state)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if shutil.which("cp"):
        # `cp -a` keeps modes, times and symlinks and is several times faster than copytree.
        proc = subprocess.run(
            ["cp", "-a", "--reflink=auto", f"{source}/.", str(dest)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise BackendError(
                f"Could not copy {source} to a scratch workspace: {proc.stderr.strip()}"
            )
    else:  # pragma: no cover - every supported system has cp
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)


class _LocalShellChannel(ShellChannel):
    """bash on pipes. The process is a plain `subprocess.Popen` that this channel alone reaps
    (`close`): with asyncio's subprocess transport, asyncio's child watcher (a thread blocked in
    waitpid) and the transport's close (`Popen.poll`) both reap, and whichever runs second logs
    "Unknown child process pid ..." and reports 255; on a loaded machine the watcher thread is
    often the late one."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        outputs: CommandOutputs,
        writer: asyncio.StreamWriter,
        mark: str,
    ) -> None:
        self._proc = proc
        self._outputs = outputs
        self._writer = writer
        self._mark = mark
        self._sent_at = time.time()

    @classmethod
    async def spawn(cls, cwd: Path, env: dict[str, str], private: Path) -> _LocalShellChannel:
        """`private`: a directory of the session's own, for its commands' FIFOs."""
        mark = secrets.token_hex(8)
        env = {**env, SHELL_MARK_VAR: mark}
        proc = subprocess.Popen(  # noqa: ASYNC220 - reaped by close(), not by asyncio
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        loop = asyncio.get_running_loop()
        try:
            outputs = CommandOutputs(private, proc.stdout.fileno())
            write_transport, write_protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, proc.stdin
            )
        except BaseException:
            proc.kill()
            await asyncio.to_thread(proc.wait)
            raise
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        return cls(proc, outputs, writer, mark)

    async def send(self, data: bytes) -> None:
        self._sent_at = time.time()  # a command's script is sent once, as it starts
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            pass  # the shell died; the reader sees EOF and the shell is restarted

    async def recv(self) -> bytes:
        return await self._outputs.recv()

    def output_dir(self) -> str:
        return self._outputs.directory

    def output_name(self) -> str:
        return self._outputs.name

    async def command_done(self) -> None:
        self._outputs.command_done()

    async def signal_children(self, sig: int) -> None:
        pids = proctree.descendants(self._proc.pid)
        await asyncio.to_thread(self._signal, pids, sig)

    async def signal_command(self, sig: int, command_id: str) -> None:
        """The command's processes only, detached ones (nohup, setsid) included; background
        jobs of earlier commands are left alone."""
        pids = await asyncio.to_thread(
            proctree.command_processes, self._proc.pid, COMMAND_ID_VAR, command_id, self._sent_at
        )
        await asyncio.to_thread(self._signal, pids, sig)

    def _signal(self, pids: set[int], sig: int) -> None:
        pids.discard(self._proc.pid)
        # The shell leads its own group; never signal it.
        hit = proctree.signal_all(pids, sig, spare_groups={self._proc.pid})
        if sig == signal.SIGKILL:
            # Gone before the shell reads its next command, so bash reports their deaths then
            # (into its /dev/null stderr), not in the middle of a later command.
            proctree.wait_gone(hit, 1.0)

    async def close(self) -> None:
        # Everything under the shell first: once the shell is dead its children are orphans
        # that a walk of its tree no longer finds.
        # A detached child (setsid, a daemon) is no longer in the tree but may hold the
        # shell's output pipe, so the session's mark finds those too.
        await asyncio.to_thread(proctree.kill_session, self._proc.pid, SESSION_MARK_VAR, self._mark)
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self._proc.wait, 5)  # the one reaper of the shell
        # Close the pipes now: left to the garbage collector they are closed after the event
        # loop, which prints "Event loop is closed" tracebacks on the way out.
        self._writer.close()
        self._outputs.close()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


class LocalPty(Pty):
    """An interactive bash on a pseudo-terminal of this machine."""

    def __init__(self, pid: int, master: int) -> None:
        self._pid = pid
        self._master = master
        self._closed = False
        os.set_blocking(master, False)
        # Read in a thread and handed over in batches (see backends.pty_reader).
        self._reader = PtyReader(master)

    @classmethod
    async def spawn(cls, cwd: Path, env: dict[str, str], cols: int, rows: int) -> LocalPty:
        master, slave = os.openpty()
        _set_size(slave, cols, rows)
        env = {
            **env,
            "TERM": "xterm-256color",
            "COLUMNS": str(cols),
            "LINES": str(rows),
            # --norc leaves bash's bare "bash-5.2#" prompt; show where the user is instead.
            "PS1": r"\[\e[1;34m\]\w\[\e[0m\] \$ ",
        }
        proc = subprocess.Popen(  # noqa: ASYNC220 - the PTY child needs the raw fds
            ["bash", "--noprofile", "--norc", "-i"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        pty = cls(proc.pid, master)
        pty._proc = proc
        return pty

    _proc: subprocess.Popen[bytes]

    async def read(self) -> bytes:
        data = await self._reader.read()
        if not data:
            self._closed = True
        return data

    async def write(self, data: bytes) -> None:
        if self._closed:
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._master, view)
            except BlockingIOError:
                await asyncio.sleep(0.005)
                continue
            except OSError:
                return
            view = view[written:]

    async def resize(self, cols: int, rows: int) -> None:
        if not self._closed:
            _set_size(self._master, cols, rows)

    async def close(self) -> None:
        self._closed = True
        await self._reader.stop()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._pid, signal.SIGHUP)
        # Once only: the pane and the backend's stop both close a PTY, and a second os.close
        # would close whatever descriptor reused the number meanwhile (another thread's file).
        master, self._master = self._master, -1
        if master >= 0:
            with contextlib.suppress(OSError):
                os.close(master)
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._proc.wait, 2)

    @property
    def closed(self) -> bool:
        return self._closed


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LocalBackend(ShellBackend):
    """A workspace on this machine: a scratch copy of the repository, or the repository itself."""

    kind = "local"

    def __init__(
        self,
        source: Path | str,
        *,
        scratch_root: Path,
        in_place: bool = False,
        keep_workspace: bool = False,
        term: str = DEFAULT_TERM,
        prepared_venv: PreparedVenv | None = None,
    ) -> None:
        """`scratch_root`: the folder the scratch copy of `source` goes in (the engine's
        choice, simulator.paths.workspaces_dir(); unused with `in_place`). `term`: TERM for
        commands (the terminal pane's is always xterm-256color, what its emulator speaks).
        `prepared_venv`: the venv setup made for the repository, used when it has none."""
        self.term = check_term(term)
        self.source = Path(source).resolve()
        self.in_place = in_place
        self.keep_workspace = keep_workspace
        self._scratch_root = scratch_root
        self._workspace: Path | None = None
        self._private: Path | None = None
        self._files: ConfinedRoot | None = None
        self._shell: PersistentShell | None = None
        self._ptys: list[LocalPty] = []
        self.mark = secrets.token_hex(8)
        self.prepared_venv = prepared_venv
        # The user's environment, not RepoSim's.
        self._env = session_environment(self.source, prepared=prepared_venv)
        self.venv = session_venv(self.source, prepared_venv)
        self._env[SESSION_MARK_VAR] = self.mark

    @property
    def workspace(self) -> Path:
        if self._workspace is None:
            raise BackendError("The local backend has not been started.")
        return self._workspace

    async def start(self) -> None:
        if not self.source.exists():
            raise BackendError(f"{self.source} does not exist.")
        if not self.source.is_dir():
            raise BackendError(f"{self.source} is not a directory.")
        if self.in_place:
            self._workspace = self.source
        else:
            self._scratch_root.mkdir(parents=True, exist_ok=True)
            dest = Path(tempfile.mkdtemp(prefix=f"{self.source.name}-", dir=self._scratch_root))
            # The owner file goes first: a crash during the copy is found too.
            _write_owner(self._owner_file(dest), self.mark)
            try:
                await asyncio.to_thread(copy_workspace, self.source, dest)
            except BaseException:
                await asyncio.to_thread(shutil.rmtree, dest, True)
                self._owner_file(dest).unlink(missing_ok=True)
                raise
            self._workspace = dest
        workspace = self._workspace
        if self.venv is not None and self.venv != repository_venv(self.source):
            assert self.prepared_venv is not None
            with_import_roots(self._env, workspace, self.prepared_venv.import_roots)
        self._files = ConfinedRoot(str(workspace))
        self._private = private = Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))
        _write_owner(self._private / OWNER_FILE, self.mark)
        self._shell = PersistentShell(
            lambda: _LocalShellChannel.spawn(workspace, self._env, private),
            str(workspace),
            term=self.term,
        )
        await self._shell.start()

    async def stop(self) -> None:
        for pty in self._ptys:
            await pty.close()
        self._ptys.clear()
        if self._shell is not None:
            await self._shell.close()
            self._shell = None
        # What the session started and that outlived its shell: nohup and setsid children,
        # daemons, the terminal pane's jobs.
        await asyncio.to_thread(proctree.kill_session, None, SESSION_MARK_VAR, self.mark)
        if self._files is not None:
            self._files.close()
            self._files = None
        if self._workspace is not None and not self.in_place:
            if not self.keep_workspace:
                await asyncio.to_thread(shutil.rmtree, self._workspace, True)
            self._owner_file(self._workspace).unlink(missing_ok=True)  # kept on purpose, or gone
        if self._private is not None:
            await asyncio.to_thread(shutil.rmtree, self._private, True)
        self._workspace = None
        self._private = None

    @staticmethod
    def _owner_file(workspace: Path) -> Path:
        return workspace.with_name(f"{workspace.name}.{OWNER_FILE}")

    @property
    def files(self) -> ConfinedRoot:
        """The workspace's file operations, confined without races (backends/confined.py)."""
        if self._files is None:
            raise BackendError("The local backend has not been started.")
        return self._files

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self.files.read, path)

    async def write_file(self, path: str, data: bytes) -> None:
        await asyncio.to_thread(self.files.write, path, data)

    async def delete(self, path: str) -> None:
        await asyncio.to_thread(self.files.delete, path)

    async def rename(self, src: str, dst: str) -> None:
        await asyncio.to_thread(self.files.rename, src, dst)

    async def stat(self, path: str) -> FileStat:
        st = await asyncio.to_thread(self.files.lstat, path)
        return FileStat(path, kind_of_mode(st.st_mode), st.st_size, st.st_mtime, st.st_mode)

    async def list_dir(self, path: str) -> list[DirEntry]:
        def scan() -> list[DirEntry]:
            entries = []
            for name, st, is_dir in self.files.scandir(path):
                kind = kind_of_mode(st.st_mode)
                if kind == "symlink" and is_dir is not None:
                    kind = "dir" if is_dir else "file"
                entries.append(DirEntry(name, kind, st.st_size))
            return sorted(entries, key=lambda e: (e.kind != "dir", e.name.lower()))

        return await asyncio.to_thread(scan)

    async def grep_dir(
        self, path: str, grep_args: list[str], limit: int
    ) -> tuple[str, bytes] | None:
        fd = await asyncio.to_thread(self.files.open_dir, path)
        if fd is None:
            return None
        try:
            where = os.path.relpath(Path(f"/proc/self/fd/{fd}").readlink(), self.files.root)
            # The working directory is the descriptor's own directory: the kernel follows the
            # /proc magic link to it, never the path again.
            proc = await asyncio.create_subprocess_exec(
                "grep", *grep_args, "--", ".",
                cwd=f"/proc/{os.getpid()}/fd/{fd}",
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        finally:
            os.close(fd)
        assert proc.stdout is not None
        lines: list[bytes] = []
        try:
            while len(lines) < limit and (line := await proc.stdout.readline()):
                lines.append(line)
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            await proc.wait()
        return ("" if where == "." else where), b"".join(lines)

    async def open_pty(self, cols: int = 80, rows: int = 24) -> Pty:
        pty = await LocalPty.spawn(self.workspace, self._env, cols, rows)
        self._ptys.append(pty)
        return pty

    @property
    def workspace_path(self) -> str:
        return str(self.workspace)

    @property
    def private_dir(self) -> str:
        if self._private is None:
            raise BackendError("The local backend has not been started.")
        return str(self._private)

    def _venv_info(self) -> dict[str, str]:
        """The venv commands run in and where it comes from, or why setup's was not used."""
        info: dict[str, str] = {}
        if self.venv is not None:
            own = self.venv == repository_venv(self.source)
            info = {"venv": str(self.venv), "venv_from": "repository" if own else "setup"}
        elif self.prepared_venv is not None and self.prepared_venv.stale:
            info = {"venv_stale": self.prepared_venv.stale}
        return info

    def describe(self) -> BackendDescription:
        return BackendDescription(
            kind=self.kind,
            workspace=str(self._workspace or ""),
            extra={"source": str(self.source), "in_place": self.in_place, **self._venv_info()},
        )
