"""Tasks and the isolated worker processes that run them, one each, with a time limit.

Used by both executors: `run_local` runs a batch's tasks `jobs` at a time on this machine, and a
Ray task runs `run_isolated` on its node (simulator/batch/ray_executor.py); `run_batch`
(simulator/batch/runner.py) chooses between them. Each task runs in its own process group, so a
task that crashes, hangs or leaks processes is killed and recorded the same way everywhere.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from backends.base import BackendTimeoutError, BackendUnavailableError
from simulator.batch.cleanup import collect_leftovers
from simulator.batch.store import TaskRecord, TaskStatus

# A worker that ended this way could not close its sessions: what they left is collected.
KILLED = frozenset({TaskStatus.TIMEOUT, TaskStatus.CRASHED})


@dataclass(frozen=True)
class Task:
    key: str  # unique in the batch and stable across reruns (e.g. "repo@commit" or a target id)
    payload: dict[str, Any] = field(default_factory=dict)


class TaskFailure(Exception):
    """A task failed for a reason it understands: a category and the line that shows it."""

    def __init__(
        self,
        message: str,
        *,
        category: str,
        evidence: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.category = category
        self.evidence = evidence
        self.result = result or {}


class InfrastructureError(Exception):
    """The machinery failed, not the task (Docker unreachable, a lost node): worth a retry."""


TaskFunction = Callable[[Task], dict[str, Any]]


def retryable(record: TaskRecord) -> bool:
    """Whether a record is worth another attempt: the machinery failed, not the task."""
    return record.status is TaskStatus.CRASHED or record.category == "infrastructure"


def run_local(
    pending: list[Task],
    fn: TaskFunction,
    *,
    jobs: int,
    timeout: float | None,
    retries: int,
    finish: Callable[[TaskRecord, int], None],
    report: Callable[[int], None],
) -> None:
    context = _context(fn)
    queue: list[tuple[Task, int]] = [(task, 1) for task in pending]
    queue.reverse()  # pop() takes them in the order given
    running: dict[int, _Worker] = {}
    try:
        while queue or running:
            while queue and len(running) < jobs:
                task, attempt = queue.pop()
                worker = _Worker.start(context, fn, task, attempt, timeout)
                running[worker.sentinel] = worker
            report(len(running))
            for worker in _wait(running.values()):
                record = worker.poll()
                if record is None:
                    continue
                del running[worker.sentinel]
                if record.status in KILLED:
                    # Now, not at the end of the run: a long batch would keep every killed task's
                    # containers and disks until it ended (or for ever, if it is stopped).
                    collect_leftovers()
                if retryable(record) and worker.attempt <= retries:
                    queue.append((worker.task, worker.attempt + 1))
                    continue
                finish(record, len(running))
    finally:
        for worker in running.values():  # Ctrl-C or an error: the running workers are killed
            worker.kill()
        if running:
            collect_leftovers()


def run_isolated(fn: TaskFunction, task: Task, attempt: int, timeout: float | None) -> TaskRecord:
    """One task in its own process, waited for here: what a Ray task does on its node.

    The process comes from a forkserver this Ray worker starts once, with the task's module
    and Ray's worker main script preloaded (imported as multiprocessing imports a main script,
    under its `__main__` guard: it only imports Ray), so each task's process starts without
    importing either (2 s a task when the main script was left to each one). Not a fork of the
    Ray worker itself: it runs gRPC and core-worker threads, and a child forked while one of
    them holds a lock can wait on that lock for ever (grpc/grpc#31885, ray-project/ray#31263);
    CI saw a task that never started in 240 s.
    """
    worker = _Worker.start(_context(fn), fn, task, attempt, timeout)
    try:
        while True:
            for ready in _wait([worker]):
                record = ready.poll()
                if record is not None:
                    if record.status in KILLED:
                        collect_leftovers()
                    return record
    finally:
        worker.kill()


# Imported once by the forkserver so that no task's process imports them again: this module
# (each worker runs _child_main), ctypes (_die_with_parent) and what opening a local session
# imports on first use (most tasks open one).
_PRELOAD = (
    __name__,
    "ctypes",
    "concurrent.futures.thread",
    "simulator.session",
    "simulator.backend_factory",
    "simulator.user_config",
    "simulator.venvcache",
    "backends.local",
)


def _context(fn: TaskFunction) -> Any:
    """A forkserver that has already imported the task function's module (and what every task
    uses), so each task's process starts in milliseconds instead of importing the engine again.

    It starts here, given the driver's sys.path and main script (forkserver_setup.py says why
    Python 3.11 does not pass them); without them a task module that only the main script
    makes importable was silently not preloaded and each task imported the engine anew. One
    forkserver serves a process: if something started it before, its preload stays."""
    from multiprocessing import forkserver, spawn

    from simulator.batch import forkserver_setup

    context = multiprocessing.get_context("forkserver")
    # A task function may name heavy modules its tasks all import (`fn.preload`).
    extra = [str(name) for name in getattr(fn, "preload", ())]
    context.set_forkserver_preload([forkserver_setup.__name__, *_PRELOAD, fn.__module__, *extra])
    data = spawn.get_preparation_data("batch")
    setup = {"sys_path": data.get("sys_path"), "main": data.get("init_main_from_path")}
    os.environ[forkserver_setup.ENV_VAR] = json.dumps(setup)
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(forkserver_setup.ENV_VAR, None)
    return context


def _wait(workers: Iterable[_Worker]) -> list[_Worker]:
    """Block until a worker has answered, died or reached its deadline; those workers."""
    workers = list(workers)
    multiprocessing.connection.wait(
        [w.sentinel for w in workers] + [w.conn for w in workers],
        timeout=_next_deadline(workers),
    )
    return workers


class _Worker:
    """One task in its own process (and process group, so its children die with it)."""

    def __init__(
        self,
        process: BaseProcess,
        conn: multiprocessing.connection.Connection,
        task: Task,
        attempt: int,
        timeout: float | None,
    ) -> None:
        self.process = process
        self.conn = conn
        self.task = task
        self.attempt = attempt
        self.started = time.monotonic()
        self.deadline = self.started + timeout if timeout else None
        self.sentinel: int = process.sentinel

    @classmethod
    def start(
        cls,
        context: Any,
        fn: TaskFunction,
        task: Task,
        attempt: int,
        timeout: float | None,
    ) -> _Worker:
        parent, child = context.Pipe(duplex=False)
        process = context.Process(target=_child_main, args=(fn, task, child), daemon=False)
        process.start()
        child.close()
        return cls(process, parent, task, attempt, timeout)

    def _record(self, status: TaskStatus, **fields: Any) -> TaskRecord:
        return TaskRecord(
            key=self.task.key,
            status=status,
            seconds=round(time.monotonic() - self.started, 3),
            attempt=self.attempt,
            worker=f"pid {self.process.pid}",
            **fields,
        )

    def poll(self) -> TaskRecord | None:
        """Its record when it has answered, died or run out of time; None while it runs."""
        if self.conn.poll() or not self.process.is_alive():
            return self.collect()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return self.kill_for_timeout()
        return None

    def collect(self) -> TaskRecord | None:
        """The worker's answer, or a crash record when it died without one."""
        message: tuple[str, dict[str, Any]] | None = None
        closed = False
        if self.conn.poll():
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                closed = True  # it is exiting without an answer
        if message is None and not closed and self.process.is_alive():
            return None  # woke on something else; not finished yet
        self.process.join(timeout=5)
        self.kill()  # its process group: anything it left running
        if message is None:
            code = self.process.exitcode
            if code is not None and code < 0:
                name = signal.Signals(-code).name
                evidence = f"the worker was killed by {name}"
                if -code == signal.SIGKILL:
                    evidence += " (the kernel's out-of-memory killer, or a kill from outside)"
                category = "killed"
            else:
                evidence = f"the worker exited with status {code} without a result"
                category = "crash"
            return self._record(TaskStatus.CRASHED, category=category, evidence=evidence)
        kind, data = message
        trajectory = data.pop("trajectory", None) if isinstance(data, dict) else None
        if kind == "ok":
            return self._record(TaskStatus.OK, result=data, trajectory=trajectory)
        return self._record(
            TaskStatus(kind),
            result=data.get("result") or {},
            category=data.get("category"),
            evidence=data.get("evidence"),
            trajectory=trajectory,
        )

    def kill_for_timeout(self) -> TaskRecord:
        self.kill()
        limit = (self.deadline or self.started) - self.started
        return self._record(
            TaskStatus.TIMEOUT,
            category="timeout",
            evidence=f"still running after {limit:.0f} s; killed",
        )

    def kill(self) -> None:
        pid = self.process.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.process.join(timeout=5)
        with contextlib.suppress(OSError):
            self.conn.close()


def _child_main(fn: TaskFunction, task: Task, conn: multiprocessing.connection.Connection) -> None:
    os.setpgrp()  # its own group: a timeout kills the task's subprocesses with it
    _die_with_parent()
    try:
        result = fn(task)
        conn.send(("ok", dict(result)))
    except TaskFailure as exc:
        conn.send(
            (
                "failed",
                {
                    "category": exc.category,
                    "evidence": exc.evidence or str(exc),
                    "result": exc.result,
                },
            )
        )
    except (InfrastructureError, BackendUnavailableError, BackendTimeoutError) as exc:
        # The machinery failed, not the task: a backend that cannot start or did not answer in
        # time (CI saw a container process miss its 60 s start at load 10) is tried again.
        conn.send(("error", {"category": "infrastructure", "evidence": str(exc)}))
    except MemoryError:
        conn.send(("crashed", {"category": "oom", "evidence": "MemoryError in the task"}))
    except BaseException as exc:  # any error of one task is recorded, not raised
        last = traceback.format_exception(exc)[-1].strip()
        conn.send(("error", {"category": "error", "evidence": last}))
    finally:
        conn.close()


def _die_with_parent() -> None:
    """Linux: a worker is killed when the process that started it dies (a SIGKILLed driver
    takes the forkserver down with it), so no task runs on unrecorded after its driver."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def _next_deadline(workers: Iterable[_Worker]) -> float | None:
    deadlines = [w.deadline for w in workers if w.deadline is not None]
    if not deadlines:
        return 1.0
    return max(0.0, min(deadlines) - time.monotonic()) + 0.01
