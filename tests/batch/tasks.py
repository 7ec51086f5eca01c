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
    if action == "flaky-backend":  # what a Docker engine far over its load does to a task
        from backends.base import BackendTimeoutError

        attempts = Path(marker).read_text().count(f"{task.key}\n") if marker else 1
        if attempts < 2:
            raise BackendTimeoutError("A process in the container did not start in time.")
        return {"attempts": attempts}
    raise AssertionError(action)


def docker_cat(task: Task) -> dict[str, Any]:
    """Open a Docker session on the payload's repository, read a file, close.

    With "kill_once": on its first attempt the task writes its Ray worker's pid there (after the
    container is up) and waits to be killed; later attempts run normally. (The task's process
    comes from the Ray worker's forkserver, which makes the worker its grandparent.)"""
    import asyncio

    import psutil

    from simulator.backend_factory import BackendOptions, make_backend
    from simulator.session import Session

    payload = task.payload
    marker = payload.get("marker")
    if marker:
        with Path(marker).open("a") as handle:
            handle.write(f"{task.key}\n")
    repo = Path(payload["repo"])
    trajectory = Path(payload["trajectory"])

    async def main() -> dict[str, Any]:
        backend = make_backend("docker", repo, options=BackendOptions(image=payload["image"]))
        async with await Session.open(repo, backend=backend, trajectory_path=trajectory) as s:
            flag = payload.get("kill_once")
            if flag and not Path(flag).exists():
                parent = psutil.Process(os.getppid())
                forkserver = "multiprocessing.forkserver" in " ".join(parent.cmdline())
                ray_worker = parent.ppid() if forkserver else parent.pid
                Path(flag).write_text(f"{ray_worker} {s.id}\n")
                await asyncio.sleep(600)
            result = await s.exec("cat a.txt")
        return {
            "output": result.output.decode().strip(),
            "exit_code": result.exit_code,
            "parent_threads": psutil.Process(os.getppid()).num_threads(),
            "trajectory": str(trajectory),
        }

    return asyncio.run(main())


def local_session_then_hang(task: Task) -> dict[str, Any]:
    """Open a local session, say where its scratch workspace is, then hang until killed."""
    import asyncio

    from simulator.session import Session

    async def main() -> dict[str, Any]:
        session = await Session.open(
            Path(task.payload["repo"]), trajectory_path=Path(task.payload["trajectory"])
        )
        Path(task.payload["marker"]).write_text(session.workspace_path)
        await asyncio.sleep(3600)
        return {}

    return asyncio.run(main())


def hang_or_look(task: Task) -> dict[str, Any]:
    """The "hang" task opens a local session and hangs; any other reports whether the scratch
    workspace the hanging one named still exists when it runs."""
    if task.key == "hang":
        return local_session_then_hang(task)
    marker = Path(task.payload["marker"])
    return {"workspace_exists": Path(marker.read_text()).exists()}
