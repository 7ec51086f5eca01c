"""Run one task function over many tasks: isolated workers, time limits, resume, progress.

Every batch command (setup over a list, harness over a repository, perf mining...) is a list of
`Task`s and a module-level function `fn(task) -> dict` that does one of them, usually by opening
its own Session. `run_batch` runs them with `jobs` at a time, each in its own worker process so a
task that crashes, hangs or exhausts memory is killed and recorded without taking the batch down,
appends one `TaskRecord` per finished task to a `ResultStore`, and skips on a rerun every task
that already has a final record.

A task reports a failure it understands by raising `TaskFailure(message, category=...)`; the
category (from the workflow's taxonomy) and its evidence line land in the record. Only
`InfrastructureError` and a dead worker are retried: a task that failed on its own merits fails
the same way again.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from simulator.batch.store import ResultStore, TaskRecord, TaskStatus
from simulator.batch.workers import (
    InfrastructureError,
    Task,
    TaskFailure,
    TaskFunction,
    run_local,
)


@dataclass(frozen=True)
class BatchProgress:
    total: int
    done: int  # finished in this run, whatever their status
    skipped: int  # already final in the store when the run started
    running: int
    by_status: dict[str, int]
    elapsed: float
    last: TaskRecord | None

    @property
    def eta(self) -> float | None:
        if not self.done:
            return None
        remaining = self.total - self.skipped - self.done
        return self.elapsed / self.done * remaining

    def line(self) -> str:
        """One line for a terminal: counts, the statuses so far, time left."""
        finished = self.skipped + self.done
        parts = [f"[{finished}/{self.total}]"]
        parts += [f"{status} {count}" for status, count in sorted(self.by_status.items())]
        if self.running:
            parts.append(f"running {self.running}")
        eta = self.eta
        if eta is not None and finished < self.total:
            parts.append(f"ETA {_duration(eta)}")
        return "  ".join(parts)


@dataclass(frozen=True)
class BatchSummary:
    total: int
    skipped: int
    records: list[TaskRecord]  # the last record of every task in the store
    elapsed: float

    @property
    def by_status(self) -> Counter[str]:
        return Counter(str(record.status) for record in self.records)

    @property
    def by_category(self) -> Counter[str]:
        return Counter(record.category for record in self.records if record.category)

    def seconds(self) -> list[float]:
        return [record.seconds for record in self.records]

    def table(self) -> str:
        """A plain-text summary: statuses, failure categories, time per task."""
        lines = [
            f"{len(self.records)} of {self.total} tasks have a record ({self.skipped} were "
            f"already done); {self.elapsed:.1f} s in this run."
        ]
        lines.append(
            "status:   " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_status.items()))
        )
        if self.by_category:
            lines.append(
                "category: " + ", ".join(f"{k} {v}" for k, v in self.by_category.most_common())
            )
        seconds = self.seconds()
        if seconds:
            lines.append(
                f"seconds per task: median {statistics.median(seconds):.2f}, "
                f"p90 {_quantile(seconds, 0.9):.2f}, max {max(seconds):.2f}"
            )
        return "\n".join(lines)


def default_jobs() -> int:
    """Concurrent tasks on this machine: one per core, at least one."""
    return max(1, os.cpu_count() or 1)


class Executor(StrEnum):
    PROCESS = "process"  # worker processes on this machine (the default: starts in no time)
    RAY = "ray"  # Ray tasks, each still isolated in its own process: a local instance or a cluster


def run_batch(
    tasks: Iterable[Task],
    fn: TaskFunction,
    *,
    store: ResultStore,
    jobs: int | None = None,
    timeout: float | None = None,
    retries: int = 1,
    retry: frozenset[TaskStatus] = frozenset(),
    on_progress: Callable[[BatchProgress], None] | None = None,
    executor: Executor | str = Executor.PROCESS,
    ray_address: str | None = None,
) -> BatchSummary:
    """Run every task not already final in `store`; returns the summary of the whole store.

    `retry` names final statuses to run again (e.g. FAILED after a fix). `retries` is how many
    more times a task whose worker died or that raised InfrastructureError is tried.
    `executor` RAY (implied by `ray_address`) runs the tasks as Ray tasks, on a local instance
    started for the run or on the cluster at `ray_address`; `jobs` is then the local instance's
    concurrent tasks (a cluster's is the sum of its nodes' `reposim_slot` resources).
    Ctrl-C kills the running workers and re-raises; their tasks have no record and run again on
    the next call.
    """
    task_list = list(tasks)
    keys = [task.key for task in task_list]
    if len(set(keys)) != len(keys):
        duplicate = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"task key {duplicate!r} appears more than once in the batch.")
    done = store.done(retry=retry)
    pending = [task for task in task_list if task.key not in done]
    skipped = len(task_list) - len(pending)
    jobs = max(1, jobs or default_jobs())
    t0 = time.monotonic()
    by_status: Counter[str] = Counter()
    finished = 0
    last: TaskRecord | None = None

    def report(running: int) -> None:
        if on_progress is not None:
            on_progress(
                BatchProgress(
                    total=len(task_list),
                    done=finished,
                    skipped=skipped,
                    running=running,
                    by_status=dict(by_status),
                    elapsed=time.monotonic() - t0,
                    last=last,
                )
            )

    def finish(record: TaskRecord, running: int) -> None:
        nonlocal finished, last
        store.append(record)
        finished += 1
        by_status[str(record.status)] += 1
        last = record
        report(running)

    report(0)
    if pending:
        if ray_address or Executor(executor) is Executor.RAY:
            from simulator.batch.ray_executor import run_on_ray

            run_on_ray(
                pending,
                fn,
                jobs=jobs,
                timeout=timeout,
                retries=retries,
                address=ray_address,
                finish=finish,
                report=report,
            )
        else:
            run_local(
                pending,
                fn,
                jobs=jobs,
                timeout=timeout,
                retries=retries,
                finish=finish,
                report=report,
            )
    latest = store.latest()
    records = [latest[key] for key in keys if key in latest]
    return BatchSummary(len(task_list), skipped, records, time.monotonic() - t0)


def _quantile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


# Tasks and their failures are defined with the workers that run them; callers keep importing
# them from here.
__all__ = [
    "BatchProgress",
    "BatchSummary",
    "Executor",
    "InfrastructureError",
    "Task",
    "TaskFailure",
    "TaskFunction",
    "default_jobs",
    "run_batch",
]
