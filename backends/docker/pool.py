"""A warm pool of docker sessions: started ahead, handed out at once, reset between users.

A `WarmPool` holds containers for one repository and one `DockerOptions` (image and limits),
each a `WarmBackend` started as any session's is (workspace copied in, reaper, command shell and
file service ready). `lease()` gives a `Backend` whose `start()` takes a ready container (or
waits for the next one) and whose `stop()` hands it back; the pool refills itself in the
background up to `size` ready containers, and drains after `idle` seconds without demand.

Users come first: a container just handed out has the engine and the CPU until it has answered
its user's first call (at most `grace` seconds). The pool's background work (starting containers
to refill, resetting those handed back: engine calls, runc, our own CPU) waits until then, so a
burst of users (32 sessions at once) runs its first commands before that work competes with
them. Someone who finds the pool empty never waits for this: the work is then theirs.

A container handed back is reset, not trusted: its terminals, shell and file service are closed;
the reaper clears what the session left, then `pool_reset.sh`, as the session's uid, kills every
process of that uid and wipes the workspace, /tmp, /var/tmp, /run/lock and /dev/shm; the
workspace is copied in again from the archive the pool made once; and the engine's list of the
container's changes (its writable layer against the image) must then hold exactly what it held
when the container was warm. Files the session added elsewhere are deleted and looked at again;
a file of the image it changed or deleted, a process that would not die, anything in /dev/shm:
the container is removed and a fresh one takes its place. The next user starts a new shell, so
nothing of the last one's environment survives either.

Pooled containers are created by `DockerBackend` like every session's, with the same labels,
so `reposim gc` sees them as the sessions of this process they are.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from backends.base import (
    Backend,
    BackendDescription,
    BackendError,
    DirEntry,
    ExecOptions,
    ExecResult,
    FileStat,
    Pty,
)
from backends.docker import container as ctr
from backends.docker.backend import DockerBackend
from backends.docker.channel import RELAY_DIR_PREFIX, WORKSPACE
from backends.docker.options import DockerOptions
from backends.docker.programs import program_text
from backends.docker.stream import blocking
from backends.shell import PersistentShell

log = logging.getLogger(__name__)

DEFAULT_SIZE = 4
DEFAULT_IDLE = 300.0
DEFAULT_GRACE = 1.0
"""At most this many seconds after a hand-out the pool's background work waits for the user's
first call to be answered (a first command that runs long does not hold the refill up longer)."""
# Containers the pool starts at once (the engine serialises much of a start anyway).
START_CONCURRENCY = 8
# Directories the reset empties: compared by what they hold, not by their ctime.
_EMPTIED = frozenset({"/tmp", "/var/tmp", "/run/lock", "/var/lock"})
Look = dict[str, str]
_T = TypeVar("_T")


class WarmBackend(DockerBackend):
    """A docker session the pool starts ahead and resets between its users."""

    def __init__(self, source: Path, options: DockerOptions, prepare: str | None = None) -> None:
        super().__init__(source, options)
        self._prepare = prepare
        self._traceable: list[str] = []
        self._warm_look: Look = {}
        self._home = ""
        self._home_mode = "755"
        self.prepared_output = ""
        """What the preparation printed, for the next user (cleared when it is handed out)."""
        self.uses = 0
        """How many users this container has had."""
        self.not_reused: str | None = None
        """Why its last reset could not prove it clean, if it could not."""

    async def warm(self, scan: Callable[[WarmBackend], Awaitable[list[str]]]) -> None:
        """Start, then note what a clean container looks like: every path a session could
        leave a trace in (`scan`, the pool's list for its image), and its home."""
        await self.start()
        assert self._warmup is not None
        await self._warmup  # the file service: a pooled session is ready for its first read
        out = await self._run_as_user(
            [
                "bash",
                "-c",
                program_text("identity.sh") + 'printf "%s\\n" "$HOME"; stat -c %a "$HOME"',
            ]
        )
        lines = out.splitlines()
        if len(lines) >= 2:
            self._home, self._home_mode = lines[-2], lines[-1]
        self._traceable = await scan(self)
        self._warm_look = await self._look()
        await self._prepared()

    async def scan(self) -> list[str]:
        """Every path outside the workspace this session's uid owns or may write."""
        out = await self._reset_program("scan", WORKSPACE)
        # The output relay's FIFOs (channel.py) are the session's to write, and go with its
        # shell: each shell has new ones.
        return sorted(
            line
            for line in out.splitlines()
            if line.startswith("/") and not line.startswith(RELAY_DIR_PREFIX)
        )

    async def _reset_program(self, *args: str) -> str:
        return await self._run_as_user(
            ["bash", "-c", program_text("pool_reset.sh"), "pool-reset", *args]
        )

    async def _look(self) -> Look:
        """The traceable paths as they are now (kind, mode, owner, size, ctime, path); the
        directories the reset empties and the archive puts back are compared without their
        ctime, by what they hold."""
        out = await self._reset_program("look", *self._traceable) if self._traceable else ""
        exempt = _EMPTIED | {self._home, ctr.PRIVATE_DIR}
        look: dict[str, str] = {}
        for line in out.splitlines():
            fields = line.split(" ", 6)
            if len(fields) != 7:
                continue
            path = fields[6]
            if path in exempt:
                fields[5] = "-"
            look[path] = " ".join(fields[:6])
        return look

    async def _run_as_user(self, command: list[str]) -> str:
        api, container = self._api, self._require_container()

        def run() -> str:
            exec_id = api.exec_create(container, command, user=self._user_spec(), workdir="/")
            return bytes(api.exec_start(exec_id["Id"])).decode(errors="replace")

        return await blocking(run)

    async def _prepared(self) -> None:
        """Run the pool's preparation (the engine's work a session would do first)."""
        self.prepared_output = ""
        if self._prepare:
            result = await self.exec(self._prepare)
            if result.exit_code != 0:
                detail = result.output.decode(errors="replace").strip()
                raise BackendError(f"The pool could not prepare a container: {detail}")
            self.prepared_output = result.output.decode(errors="replace")

    async def recycle(self, archive: Path) -> bool:
        """Reset the container for its next user; False when it cannot be proven clean (why:
        `not_reused`)."""
        self.not_reused = None
        await self._close_session_services()
        reaper = await self._live_reaper()
        await reaper.clear()
        report = await self._reset_program(
            "reset", WORKSPACE, self._home or "/nonexistent", self._home_mode
        )
        if "LEFT 0\n" not in report or "SHM 0\n" not in report:
            self.not_reused = f"the reset left something: {report.strip()}"
            log.info("pooled container %s not reused: %s", self._container, self.not_reused)
            return False
        # The workspace copied in, the next user's shell and file service started, side by side
        # (the shell needs nothing but the workspace's directory, which the reset leaves); then
        # the proof. The proof looks only once the shell is up: the shell makes its private
        # directory in /tmp as it starts, which the warm container's look held (CI: a look
        # taken while the shell was starting found /tmp without it, and the container was
        # discarded as changed).
        shell = PersistentShell(self._open_shell_channel, WORKSPACE, term=self.options.term)
        self._shell = shell
        await asyncio.gather(self._copy_in(archive), shell.start(), self._files_service())
        if not await self._restored():
            return False
        await self._prepared()
        self._clears_seen = reaper.clears
        await reaper.oom_since_last_look()
        self._disk_tripped = self._disk_cleared = False
        if self._disk is not None:  # the loop disk's image as the next user finds it
            self._disk_baseline = self._disk.allocated()
        if not self._storage_opt:
            self._disk_watch = asyncio.ensure_future(self._watch_disk())
        return True

    async def _copy_in(self, archive: Path) -> None:
        """Copy the workspace in again, from the archive the pool made once."""
        with archive.open("rb") as data:
            await self._put_archive(data)

    async def _restored(self) -> bool:
        """Every traceable path must be as it was when warm."""
        look = await self._look()
        added = sorted(p for p in look if p not in self._warm_look)
        if added:  # the session wrote outside the places the reset empties (its home...)
            await self._run_as_user(["rm", "-rf", "--", *added])
            look = await self._look()
        if look != self._warm_look:
            changed = sorted(set(look.items()) ^ set(self._warm_look.items()))
            self.not_reused = f"paths outside the workspace changed: {changed[:5]}"
            log.info("pooled container %s not reused: %s", self._container, self.not_reused)
            return False
        return True


@dataclasses.dataclass(frozen=True)
class PoolSettings:
    """How many containers a pool keeps ready, and how long it keeps them with no demand."""

    size: int = DEFAULT_SIZE
    idle: float = DEFAULT_IDLE
    grace: float = DEFAULT_GRACE
    """How long a container just handed out holds the pool's background work back, at most."""

    def __post_init__(self) -> None:
        if self.size < 0:
            raise BackendError("The pool size must be 0 or more containers.")
        if not self.idle > 0:
            raise BackendError("The pool's idle limit must be a positive number of seconds.")
        if not self.grace >= 0:
            raise BackendError("The pool's grace must be 0 or more seconds.")


class WarmPool:
    """Ready containers for one repository and one set of docker options; see the module."""

    def __init__(
        self,
        source: Path | str,
        options: DockerOptions,
        settings: PoolSettings | None = None,
        *,
        prepare: str | None = None,
    ) -> None:
        self.source = Path(source).resolve()
        self.prepare = prepare
        """A command each container runs in its shell once warm and after every reset (the
        changes it makes are not part of the comparison that proves a container clean)."""
        self.options = dataclasses.replace(options, session_id=None)
        self.settings = settings or PoolSettings()
        self._ready: collections.deque[WarmBackend] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[WarmBackend]] = collections.deque()
        self._starting = 0
        self._resetting = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._start_slots: asyncio.Semaphore | None = None
        self._archive: Path | None = None
        self._archive_lock: asyncio.Lock | None = None
        self._scan_lock: asyncio.Lock | None = None
        self._traceable: list[str] | None = None
        self._archive_dir: tempfile.TemporaryDirectory[str] | None = None
        self._last_demand = time.monotonic()
        self._idle_task: asyncio.Task[None] | None = None
        self._closed = False
        self._unanswered: dict[object, float] = {}
        """Hand-outs whose user's first call has not been answered yet, and until when they
        hold the background work back."""
        self._answered: asyncio.Event | None = None
        self.held_back = 0
        """Background jobs (starts, resets) waiting now for the containers handed out."""
        self.started = 0
        """Containers this pool has started."""
        self.reused = 0
        """Containers handed back, proven clean and made ready again."""
        self.discarded = 0
        """Containers handed back that could not be proven clean, and were removed."""
        self.discard_reasons: list[str] = []
        """Why each of those was not reused (what the reset left, what changed, its error)."""
        self.reset_seconds: list[float] = []
        """How long each reset took (in the background, between two users)."""

    @property
    def ready(self) -> int:
        return len(self._ready)

    def lease(self) -> PooledBackend:
        """A backend that takes a container from the pool when it starts."""
        return PooledBackend(self)

    async def fill(self) -> None:
        """Start containers up to the pool's size and wait until they are ready."""
        self._refill()
        while pending := [task for task in self._tasks if not task.done()]:
            await asyncio.wait(pending)

    async def take(self) -> WarmBackend:
        if self._closed:
            raise BackendError("The container pool is closed.")
        self._last_demand = time.monotonic()
        self._watch_idle()
        while self._ready:
            backend = self._ready.popleft()
            self._refill()
            if backend.container_id is not None:
                backend.uses += 1
                return backend
        waiter: asyncio.Future[WarmBackend] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake_background()  # what is held back is this user's now
        self._refill()
        try:
            backend = await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._offer(waiter.result())  # given to us just as we were cancelled
            raise
        backend.uses += 1
        return backend

    def give_back(self, backend: WarmBackend) -> None:
        """Reset the container in the background and make it ready again if it is clean."""
        if self._closed:
            self._spawn(backend.stop())
            return
        self._resetting += 1
        self._spawn(self._reset(backend))

    async def close(self) -> None:
        """Remove every container of the pool, and each one handed out when it comes back.

        Starts, resets and removals under way are waited for (a start cancelled while the
        engine creates its container could leave the container behind); starts still queued
        do not begin."""
        self._closed = True
        self._wake_background()
        if self._idle_task is not None:
            self._idle_task.cancel()
            with contextlib.suppress(BaseException):
                await self._idle_task
        while pending := [task for task in self._tasks if not task.done()]:
            await asyncio.wait(pending)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(BackendError("The container pool was closed."))
        await self._drain()
        if self._archive_dir is not None:
            self._archive_dir.cleanup()
            self._archive_dir = self._archive = None

    def handed_out(self) -> object:
        """Note a container handed out: the background work waits for `answered(token)`, or
        for the grace to pass."""
        token = object()
        self._unanswered[token] = time.monotonic() + self.settings.grace
        return token

    def answered(self, token: object) -> None:
        """The user of a container handed out has had the answer to their first call."""
        if self._unanswered.pop(token, None) is not None:
            self._wake_background()

    # -- inside --

    def _wake_background(self) -> None:
        if self._answered is not None:
            self._answered.set()
            self._answered = None

    async def _after_hand_outs(self) -> None:
        """Wait while a container handed out has not answered its user's first call (each at
        most the grace after its hand-out), unless someone waits for a container."""
        self.held_back += 1
        try:
            while not self._closed and not any(not w.done() for w in self._waiters):
                now = time.monotonic()
                for token, until in list(self._unanswered.items()):
                    if until <= now:
                        del self._unanswered[token]
                if not self._unanswered:
                    return
                if self._answered is None:
                    self._answered = asyncio.Event()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._answered.wait(), min(self._unanswered.values()) - now
                    )
        finally:
            self.held_back -= 1

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _refill(self) -> None:
        if self._closed:
            return
        pending = [w for w in self._waiters if not w.done()]
        self._waiters = collections.deque(pending)
        wanted = self.settings.size + len(pending)
        missing = wanted - len(self._ready) - self._starting - self._resetting
        for _ in range(max(0, missing)):
            self._starting += 1
            self._spawn(self._start_one())

    async def _start_one(self) -> None:
        if self._start_slots is None:
            self._start_slots = asyncio.Semaphore(START_CONCURRENCY)
        backend = WarmBackend(self.source, self.options, self.prepare)
        try:
            await self._after_hand_outs()
            async with self._start_slots:
                if self._closed:
                    self._starting -= 1
                    return
                await self._ensure_archive()
                await backend.warm(self._scan)
        except BaseException as exc:
            self._starting -= 1
            with contextlib.suppress(BaseException):
                await backend.stop()
            # The first one waiting hears why (a missing image, an unreachable engine).
            while self._waiters and not isinstance(exc, asyncio.CancelledError):
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_exception(exc)
                    break
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        self._starting -= 1
        self.started += 1
        self._offer(backend)

    async def _scan(self, backend: WarmBackend) -> list[str]:
        """The image's traceable paths, from the first container (the same in every one)."""
        if self._scan_lock is None:
            self._scan_lock = asyncio.Lock()
        async with self._scan_lock:
            if self._traceable is None:
                self._traceable = await backend.scan()
            return self._traceable

    async def _ensure_archive(self) -> Path:
        if self._archive_lock is None:
            self._archive_lock = asyncio.Lock()
        async with self._archive_lock:
            return await self._make_archive()

    async def _make_archive(self) -> Path:
        if self._archive is None:
            self._archive_dir = tempfile.TemporaryDirectory(prefix="reposim-pool-")
            path = Path(self._archive_dir.name) / "workspace.tar"

            def write() -> None:
                with (
                    ctr.workspace_archive(self.source, self.options) as spool,
                    path.open("wb") as out,
                ):
                    while chunk := spool.read(1 << 20):
                        out.write(chunk)

            await blocking(write)
            self._archive = path
        return self._archive

    def _offer(self, backend: WarmBackend, *, reused: bool = False) -> None:
        if self._closed:
            self._spawn(backend.stop())
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(backend)
                return
        # A container back from a user goes first (it was paid for); beyond the pool's size
        # the last one ready goes away.
        if reused:
            self._ready.appendleft(backend)
        else:
            self._ready.append(backend)
        while len(self._ready) > self.settings.size:
            self._spawn(self._ready.pop().stop())

    async def _reset(self, backend: WarmBackend) -> None:
        try:
            await self._after_hand_outs()
            started = time.monotonic()
            clean = await backend.recycle(await self._ensure_archive())
            self.reset_seconds.append(time.monotonic() - started)
        except asyncio.CancelledError:  # the pool is closing
            self._resetting -= 1
            await backend.stop()
            raise
        except Exception as exc:
            log.info("pooled container %s not reused: %s", backend.container_id, exc)
            backend.not_reused = f"the reset failed: {exc}"
            clean = False
        self._resetting -= 1
        if clean and not self._closed:
            self.reused += 1
            self._offer(backend, reused=True)
            return
        self.discarded += 1
        self.discard_reasons.append(backend.not_reused or "the pool was closing")
        self._refill()  # a fresh one in its place, started while this one is removed
        await backend.stop()

    def _watch_idle(self) -> None:
        if self._idle_task is None or self._idle_task.done():
            self._idle_task = asyncio.ensure_future(self._idle_watch())

    async def _idle_watch(self) -> None:
        idle = self.settings.idle
        while not self._closed:
            left = self._last_demand + idle - time.monotonic()
            if left <= 0 and not self._waiters:
                await self._drain()
                return
            await asyncio.sleep(max(left, 0.05))

    async def _drain(self) -> None:
        ready = list(self._ready)
        self._ready.clear()
        await asyncio.gather(*(b.stop() for b in ready), return_exceptions=True)


class PooledBackend(ctr.InContainer, Backend):
    """A session's backend that runs in a container of a `WarmPool`."""

    kind = "docker"

    def __init__(self, pool: WarmPool) -> None:
        self.pool = pool
        self._inner: WarmBackend | None = None
        self._prepared = ""
        self._hand_out: object | None = None  # until the first call is answered

    @property
    def inner(self) -> WarmBackend:
        if self._inner is None:
            raise BackendError("The docker backend has not been started.")
        return self._inner

    @property
    def container_id(self) -> str | None:
        return self._inner.container_id if self._inner is not None else None

    async def start(self) -> None:
        if self._inner is not None:
            raise BackendError("This docker backend is already started.")
        self._inner = await self.pool.take()
        self._hand_out = self.pool.handed_out()
        # The preparation's output is good for this user only, and only until it runs anything.
        self._prepared, self._inner.prepared_output = self._inner.prepared_output, ""

    @property
    def prepared(self) -> str:
        return self._prepared

    def _answered(self) -> None:
        if self._hand_out is not None:
            self.pool.answered(self._hand_out)
            self._hand_out = None

    async def _answer(self, call: Awaitable[_T]) -> _T:
        """The inner backend's answer to `call`; the first one lets the pool's work go on."""
        try:
            return await call
        finally:
            self._answered()

    async def stop(self) -> None:
        self._prepared = ""
        self._answered()
        if self._inner is not None:
            inner, self._inner = self._inner, None
            self.pool.give_back(inner)

    async def run_command(self, command: str, options: ExecOptions) -> ExecResult:
        return await self._answer(self.inner.run_command(command, options))

    async def interrupt(self) -> None:
        await self._answer(self.inner.interrupt())

    async def read_file(self, path: str) -> bytes:
        return await self._answer(self.inner.read_file(path))

    async def write_file(self, path: str, data: bytes) -> None:
        await self._answer(self.inner.write_file(path, data))

    async def delete(self, path: str) -> None:
        await self._answer(self.inner.delete(path))

    async def rename(self, src: str, dst: str) -> None:
        await self._answer(self.inner.rename(src, dst))

    async def stat(self, path: str) -> FileStat:
        return await self._answer(self.inner.stat(path))

    async def list_dir(self, path: str) -> list[DirEntry]:
        return await self._answer(self.inner.list_dir(path))

    async def exists(self, path: str) -> bool:
        return await self._answer(self.inner.exists(path))

    async def open_pty(self, cols: int = 80, rows: int = 24) -> Pty:
        return await self._answer(self.inner.open_pty(cols, rows))

    async def clear_processes(self) -> None:
        await self._answer(self.inner.clear_processes())

    def describe(self) -> BackendDescription:
        if self._inner is None:
            return BackendDescription(
                kind=self.kind,
                workspace=WORKSPACE,
                image=self.pool.options.image,
                limits=self.pool.options.limits.as_dict(),
            )
        return self._inner.describe()
