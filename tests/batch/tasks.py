"""Task functions the batch tests run in worker processes (module-level, so they pickle)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from simulator.batch import InfrastructureError, Task, TaskFailure


def behave(task: Task) -> dict[str, Any]:
    """Do what the payload says: succeed, fail with a category, hang, crash or flake."""
    action = task.payload.get("action", "ok")
    marker = task.payload.get("marker")
    if marker:  # one line per attempt, so tests can count how often a task really ran
        with Path(marker).open("a") as handle:
            handle.write(f"{task.key}\n")
    if action == "ok":
        return {"value": task.payload.get("value"), "pid": os.getpid()}
    if action == "sleep":
        time.sleep(float(task.payload["seconds"]))
        return {"slept": task.payload["seconds"]}
    if action == "fail":
        raise TaskFailure("no tests collected", category="no-tests", evidence="collected 0 items")
    if action == "hang":
        time.sleep(3600)
    if action == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if action == "raise":
        raise RuntimeError("unexpected")
    if action == "flaky-infra":
        attempts = Path(marker).read_text().count(f"{task.key}\n") if marker else 1
        if attempts < 2:
            raise InfrastructureError("Docker did not answer")
        return {"attempts": attempts}
    raise AssertionError(action)
