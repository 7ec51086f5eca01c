"""Batch tasks on Ray: a local instance started for the run, or a cluster by address.

Ray distributes; isolation stays ours. Each Ray task runs `run_isolated`, which starts the task
in its own process group on that node with the batch's time limit, exactly as the local
executor does, so a task that hangs or leaks processes is killed the same way everywhere, and a
Ray worker that dies mid-task (a lost node, a kill) is retried by Ray (`max_retries`).

A local instance shares the driver's fate: Ray's own processes die with the driver's parent
thread (prctl), but the agents the raylet starts (dashboard, runtime env) only look for their
parent once they have started, which on a loaded 2-core machine took 68-78 s after the driver
was SIGKILLed (issue 25). So every process of a local instance carries a mark in its environment,
and a watchdog process, holding a pipe from the driver, kills whatever carries it as soon as the
driver is gone, SIGKILL or not.

Concurrency per node is a custom resource, `reposim_slot`: each task takes one. A local instance
offers `jobs` of them; each node of a cluster offers what it was started with
(`ray start ... --resources '{"reposim_slot": N}'`), so no node runs more Docker sessions at once
than its engine and cores can take.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from simulator.batch.store import TaskRecord, TaskStatus
from simulator.batch.workers import Task, TaskFunction, retryable, run_isolated

SLOT = "reposim_slot"


class RayUnavailable(Exception):
    """Ray cannot run this batch (no cluster at the address, no slots); one clear sentence."""


def _remote_body(
    fn: TaskFunction, task: Task, attempt: int, timeout: float | None
) -> dict[str, Any]:
    return run_isolated(fn, task, attempt, timeout).to_dict()


def run_on_ray(
    pending: list[Task],
    fn: TaskFunction,
    *,
    jobs: int,
    timeout: float | None,
    retries: int,
    address: str | None,
    finish: Callable[[TaskRecord, int], None],
    report: Callable[[int], None],
) -> None:
    # Under `uv run`, Ray would package the project directory as a runtime environment and push
    # it to the workers; the workers here run the same interpreter and checkout instead (a
    # cluster's nodes have reposim installed: README, batch on a Ray cluster).
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray
    import ray.exceptions

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(ray, jobs, address)
    try:
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        slots = int(resources.get(SLOT, 0))
        if slots < 1:
            raise RayUnavailable(
                f"the Ray cluster offers no {SLOT!r} resource; start each node with "
                f"`ray start --address=HEAD:6379 --resources '{{\"{SLOT}\": N}}'` "
                "(N: concurrent sessions that node can hold)."
            )
        remote = ray.remote(num_cpus=0, resources={SLOT: 1}, max_retries=retries)(_remote_body)
        in_flight: dict[Any, tuple[Task, int]] = {}
        queue = [(task, 1) for task in reversed(pending)]

        def submit() -> None:
            while queue and len(in_flight) < max(slots * 2, 1):
                task, attempt = queue.pop()
                in_flight[remote.remote(fn, task, attempt, timeout)] = (task, attempt)

        submit()
        while in_flight:
            report(min(len(in_flight), slots))
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            for ref in ready:
                task, attempt = in_flight.pop(ref)
                try:
                    record = TaskRecord.from_dict(ray.get(ref))
                except ray.exceptions.RayError as exc:
                    record = TaskRecord(
                        key=task.key,
                        status=TaskStatus.CRASHED,
                        seconds=0.0,
                        category="killed",
                        evidence=f"the Ray worker died: {type(exc).__name__}",
                        attempt=attempt + retries,
                        worker="ray",
                    )
                    finish(record, len(in_flight))
                    continue
                if retryable(record) and attempt <= retries:
                    queue.append((task, attempt + 1))
                else:
                    finish(record, len(in_flight))
            submit()
    finally:
        if started_here:
            with contextlib.suppress(Exception):
                ray.shutdown()
            release_local_ray()


def init_ray(ray: Any, jobs: int, address: str | None) -> None:
    """Start a local Ray instance with `jobs` slots, or connect to the cluster at `address`."""
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    where = f"at {address}" if address else "on this machine"
    # A local instance's raylet must register within Ray's fixed 30 s, which a heavily loaded
    # 2-core machine can miss: one more try before giving up.
    for attempt in (1, 2):
        try:
            if address:
                ray.init(address=address, **quiet)
            else:
                _share_fate()
                ray.init(num_cpus=jobs, resources={SLOT: jobs}, **quiet)
            return
        except Exception as exc:  # Ray raises bare Exception for a node that did not start
            with contextlib.suppress(Exception):
                ray.shutdown()
            if address or attempt == 2:
                release_local_ray()
                raise RayUnavailable(f"could not start or reach Ray {where}: {exc}") from None


MARK_VAR = "REPOSIM_RAY_MARK"
"""In the environment of every process of a local Ray instance this driver started."""
_watchdog: subprocess.Popen[bytes] | None = None


def _share_fate() -> None:
    """Mark the local instance about to start and start its watchdog (once per driver)."""
    global _watchdog
    if _watchdog is not None and _watchdog.poll() is None:
        return
    mark = secrets.token_hex(8)
    env = {k: v for k, v in os.environ.items() if k != MARK_VAR}
    _watchdog = subprocess.Popen(
        # The driver's group is spared: Ray's processes share it with the user's job.
        [sys.executable, "-m", "backends.proctree", MARK_VAR, mark, str(os.getpgrp())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # a Ctrl-C to the driver's group must not end it first
    )
    os.environ[MARK_VAR] = mark  # Ray passes the driver's environment to what it starts


def release_local_ray() -> None:
    """After `ray.shutdown()`: end what the local instance left (agents still starting up)."""
    global _watchdog
    watchdog, _watchdog = _watchdog, None
    os.environ.pop(MARK_VAR, None)
    if watchdog is None:
        return
    assert watchdog.stdin is not None
    watchdog.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        watchdog.wait(30)
