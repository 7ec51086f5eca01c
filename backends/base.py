"""The backend protocol: where a session's commands run and its files live.

A backend knows nothing of sessions, events or trajectories. It offers a persistent shell
(`exec`), file operations confined to its workspace, an interactive PTY for the terminal pane,
and `describe()` for the trajectory header. Paths given to a backend are POSIX paths relative to
the workspace root; the backend refuses any path that resolves outside it.
"""

from __future__ import annotations

import abc
import stat as stat_mod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backends.errors import BackendError as BackendError

if TYPE_CHECKING:
    from backends.output import OutputCapture

OutputCallback = Callable[[bytes], None]


class PathEscapeError(BackendError):
    """A path resolves outside the workspace."""


class FileMissingError(BackendError):
    """A path does not exist in the workspace."""


class BackendUnavailableError(BackendError):
    """The backend cannot start (no daemon, no image, no permission...)."""


class BackendTimeoutError(BackendError):
    """The backend did not answer in time (a process in a container that did not start within
    its limit: an engine stuck or far over its load). The machinery failed, not the request: the
    same request may work later, and batch runs try it again."""


@dataclass(frozen=True)
class ExecResult:
    """What one command in the persistent shell did."""

    exit_code: int | None
    """The command's exit status; None when it was killed (timeout, interrupt, output cap) or
    the shell died."""
    output: bytes
    """The whole output, or its head and tail with a line saying how much is left out between
    them (`output_elided` > 0; the whole is in `output_spool` when the capture had a spool)."""
    duration: float
    timed_out: bool = False
    interrupted: bool = False
    shell_restarted: bool = False
    """The shell died during this command (e.g. `exit`) and a new one was started."""
    oom_killed: bool = False
    cleared: bool = False
    """The session's runaway processes were cleared while the command ran (a fork bomb left
    in the background hit the pids limit): the command's own processes were spared, but it may
    have waited for forks, and a child it detached (setsid, nohup) may have been killed."""
    cwd: str = ""
    """The shell's absolute working directory after the command."""
    output_size: int = 0
    """Bytes the command printed (up to the cap), not only those in `output`."""
    output_lines: int = 0
    output_sha256: str = ""
    output_elided: int = 0
    output_capped: bool = False
    """The output reached the capture's cap: it was cut there and the command stopped."""
    output_spool: str | None = None
    """A file with the whole output (owned by the caller) when it outgrew `output`."""


@dataclass(frozen=True)
class ExecOptions:
    """How `Backend.exec` runs one command (its keyword arguments, as one value)."""

    timeout: float | None = None
    on_output: OutputCallback | None = None
    env: dict[str, str] | None = None
    capture: OutputCapture | None = None


@dataclass(frozen=True)
class FileStat:
    path: str
    kind: str  # "file" | "dir" | "symlink" | "other"
    size: int
    mtime: float
    mode: int


def kind_of_mode(mode: int) -> str:
    """`FileStat.kind` / `DirEntry.kind` of an `st_mode`."""
    if stat_mod.S_ISLNK(mode):
        return "symlink"
    if stat_mod.S_ISDIR(mode):
        return "dir"
    if stat_mod.S_ISREG(mode):
        return "file"
    return "other"


@dataclass(frozen=True)
class DirEntry:
    name: str
    kind: str  # "file" | "dir" | "symlink" | "other"
    size: int = 0


@dataclass
class BackendDescription:
    kind: str
    workspace: str
    image: str | None = None
    image_id: str | None = None
    container: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "workspace": self.workspace,
            "image": self.image,
            "image_id": self.image_id,
            "container": self.container,
            "limits": dict(self.limits),
            **self.extra,
        }


class Pty(abc.ABC):
    """An interactive terminal in the backend (the terminal pane's shell)."""

    @abc.abstractmethod
    async def read(self) -> bytes:
        """The next chunk of output; b"" once the terminal has closed."""

    @abc.abstractmethod
    async def write(self, data: bytes) -> None: ...

    @abc.abstractmethod
    async def resize(self, cols: int, rows: int) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def closed(self) -> bool: ...


class Backend(abc.ABC):
    """A place where a workspace lives and commands run."""

    kind: str = "abstract"

    @abc.abstractmethod
    async def start(self) -> None:
        """Prepare the workspace and start the persistent shell."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop the shell and release everything the backend created (idempotent)."""

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
        env: dict[str, str] | None = None,
        capture: OutputCapture | None = None,
    ) -> ExecResult:
        """Run `command` in the persistent shell; cwd and exported variables survive.

        `capture` takes the output in bounded memory (see backends/output.py); without one the
        whole output is kept in memory, uncut (for the engine's own short commands)."""
        return await self.run_command(command, ExecOptions(timeout, on_output, env, capture))

    @abc.abstractmethod
    async def run_command(self, command: str, options: ExecOptions) -> ExecResult:
        """What `exec` does, each backend its own way; wrappers override this, not `exec`."""

    @abc.abstractmethod
    async def interrupt(self) -> None:
        """Kill the running command's processes; the shell stays usable."""

    @abc.abstractmethod
    async def read_file(self, path: str) -> bytes: ...

    @abc.abstractmethod
    async def write_file(self, path: str, data: bytes) -> None:
        """Write a file, creating parent directories."""

    @abc.abstractmethod
    async def delete(self, path: str) -> None:
        """Delete a file or a directory tree."""

    @abc.abstractmethod
    async def rename(self, src: str, dst: str) -> None: ...

    @abc.abstractmethod
    async def stat(self, path: str) -> FileStat: ...

    @abc.abstractmethod
    async def list_dir(self, path: str) -> list[DirEntry]: ...

    @abc.abstractmethod
    async def open_pty(self, cols: int = 80, rows: int = 24) -> Pty:
        """An interactive shell on a terminal, starting in the workspace."""

    @abc.abstractmethod
    def describe(self) -> BackendDescription: ...

    @property
    @abc.abstractmethod
    def workspace_path(self) -> str:
        """The workspace's absolute path as the backend's own shell sees it."""

    @property
    @abc.abstractmethod
    def private_dir(self) -> str:
        """A directory outside the workspace, as the shell sees it, for the engine's bookkeeping
        (checkpoint objects, test reports). It goes away with the backend."""

    async def grep_dir(
        self, path: str, grep_args: list[str], limit: int
    ) -> tuple[str, bytes] | None:
        """Run `grep` with `grep_args` on `.` from inside the directory `path`, entered through
        the same confined descriptors as the file operations (so a directory swapped for a
        symlink while the search starts cannot take it outside): the directory's own path
        relative to the workspace (symlinks resolved) and at most `limit` lines of grep's
        output; None when `path` is not a directory. Backends without such descriptors
        raise NotImplementedError and the caller greps in the backend's shell instead."""
        raise NotImplementedError

    @property
    def prepared(self) -> str:
        """What the preparation a warm pool ran in this backend before handing it out printed
        (empty when none did): the engine that gave the pool its preparation reads here, at the
        start, the work done ahead instead of redoing it."""
        return ""

    async def exists(self, path: str) -> bool:
        try:
            await self.stat(path)
        except FileMissingError:
            return False
        return True

    async def __aenter__(self) -> Backend:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


BackendFactory = Callable[..., Awaitable[Backend]]
