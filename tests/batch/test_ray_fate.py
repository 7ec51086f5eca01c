"""A local Ray instance dies with its driver: nothing it started outlives a SIGKILLed batch
driver (issue 25). Before, Ray's agents (dashboard, runtime env), orphaned while still starting
up, lingered 68-78 s on this machine under load. Real Ray, real processes, no fixed sleep."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from backends.proctree import marked_pids
from simulator.batch.ray_executor import MARK_VAR

DRIVER = """
import os, sys, time
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
import ray
from simulator.batch import ray_executor as rx
rx._share_fate()
print("MARK", os.environ[rx.MARK_VAR], flush=True)
try:
    rx.init_ray(ray, 1, None)
except rx.RayUnavailable as exc:  # a raylet that missed Ray's 30 s on a loaded machine
    print("NOT STARTED", exc, flush=True)
    sys.exit(3)
@ray.remote(num_cpus=0)
def long_task():
    time.sleep(600)
ref = long_task.remote()
ray.wait([ref], timeout=5)  # the task is scheduled: a worker runs it
print("READY", flush=True)
time.sleep(600)
"""


def _wait_until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return bool(condition())  # type: ignore[operator]


def _driver_run(log: Path) -> str:
    """Start a driver, SIGKILL it once its task runs; then everything Ray started must go.
    Returns READY, or why Ray did not start (its cleanup is checked all the same)."""
    env = {**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    env.pop(MARK_VAR, None)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
        env=env,
        start_new_session=True,
    )
    assert driver.stdout is not None
    try:
        first = driver.stdout.readline().split()
        assert first[:1] == ["MARK"], (first, log.read_text()[-2000:])
        mark = first[1]
        # READY, or NOT STARTED when Ray failed to start
        status = driver.stdout.readline().strip() or log.read_text()[-2000:]
        if status == "READY":
            assert len(marked_pids(MARK_VAR, mark)) >= 3  # gcs, raylet, a worker, agents...
            driver.send_signal(signal.SIGKILL)
        driver.wait(120)
        left = lambda: not marked_pids(MARK_VAR, mark)  # noqa: E731
        # Well within the 68-78 s the agents took before (a watchdog takes a second or so).
        assert _wait_until(left, 30), (status, sorted(marked_pids(MARK_VAR, mark)))
        return status
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def test_nothing_of_a_local_ray_instance_outlives_a_sigkilled_driver(tmp_path: Path) -> None:
    # Ray gives its raylet a fixed 30 s to register, which a 2-core machine at load 30+ can
    # miss: up to three drivers, each one's leftovers checked, until one has Ray running.
    statuses = []
    for _ in range(3):
        statuses.append(_driver_run(tmp_path / f"driver{len(statuses)}.log"))
        if statuses[-1] == "READY":
            return
    raise AssertionError(f"Ray did not start in three tries (each cleanup checked): {statuses}")


DRIVER_IN_A_JOB = """
import os, subprocess, sys, time
from simulator.batch import ray_executor as rx
rx._share_fate()
child = subprocess.Popen(["sleep", "600"])  # as Ray's own processes: marked, in the job's group
print(child.pid, rx._watchdog.pid, os.environ["SIBLING"], flush=True)
time.sleep(600)
"""


def test_the_watchdog_kills_the_marked_processes_but_not_the_job_they_share_a_group_with() -> None:
    # A shell job: `reposim batch ... | tee log` or `timeout 900 uv run ...`. Ray starts its
    # processes in the driver's process group, which the job's other commands share; the
    # watchdog used to kill that whole group, taking the user's `tee` or `timeout` with it.
    env = {**os.environ, "DRIVER": DRIVER_IN_A_JOB}
    env.pop(MARK_VAR, None)
    # One job (a process group): the job's other command, then the driver.
    job = 'sleep 600 & SIBLING=$! exec "$0" -c "$DRIVER"'
    driver = subprocess.Popen(
        ["sh", "-c", job, sys.executable],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    sibling = 0
    try:
        assert driver.stdout is not None
        marked, watchdog, sibling = (int(pid) for pid in driver.stdout.readline().split())
        assert os.getpgid(sibling) == os.getpgid(marked) == driver.pid
        driver.kill()
        driver.wait()
        gone = lambda: not _alive(marked) and not _alive(watchdog)  # noqa: E731
        assert _wait_until(gone, 60), "the watchdog did not kill the driver's marked process"
        assert _alive(sibling), "the watchdog killed the job's other command"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        if sibling:
            with contextlib.suppress(ProcessLookupError):
                os.kill(sibling, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
