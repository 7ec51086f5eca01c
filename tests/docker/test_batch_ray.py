"""The batch layer on a real local Ray instance with Docker sessions: a worker killed mid-task
loses nothing, every task ends with exactly one record, a rerun does only what is missing."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.batch import BatchSummary, ResultStore, Task, TaskStatus, run_batch
from tests.batch.tasks import docker_cat
from tests.conftest import RepoFactory
from tests.docker.conftest import TEST_IMAGE


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    from simulator.batch.ray_executor import init_ray, release_local_ray

    init_ray(ray, 2, None)  # a local instance with 2 slots, as run_batch would start
    yield
    ray.shutdown()
    release_local_ray()  # as run_batch does: its watchdog ends what is left, now


def _ray_logs() -> str:
    """The tails of this Ray instance's raylet and worker logs, for a failure message."""
    import ray

    node = ray._private.worker.global_worker.node
    logs = Path(node.get_logs_dir_path())
    tails = []
    for path in sorted(logs.glob("raylet.*")) + sorted(logs.glob("worker-*.err"))[-4:]:
        lines = path.read_text(errors="replace").splitlines()[-15:]
        tails.append(f"== {path.name}\n" + "\n".join(lines))
    return "\n".join(tails)


def _tasks(repos: list[Path], tmp_path: Path, marker: Path) -> list[Task]:
    return [
        Task(
            repo.name,
            {
                "repo": str(repo),
                "image": TEST_IMAGE,
                "trajectory": str(tmp_path / f"{repo.name}.jsonl"),
                "marker": str(marker),
            },
        )
        for repo in repos
    ]


@pytest.mark.slow
def test_a_killed_ray_worker_loses_nothing_and_a_rerun_does_only_what_is_missing(
    docker_client: Any, make_repo: RepoFactory, tmp_path: Path, ray_local: None
) -> None:
    repos = [make_repo({"a.txt": f"content {i}\n"}, name=f"repo{i}") for i in range(5)]
    marker = tmp_path / "attempts.txt"
    kill_flag = tmp_path / "kill.txt"
    tasks = _tasks(repos[:4], tmp_path, marker)
    tasks[1].payload["kill_once"] = str(kill_flag)
    store = ResultStore(tmp_path / "results.jsonl")
    outcome: dict[str, BatchSummary] = {}

    def drive() -> None:
        outcome["summary"] = run_batch(
            tasks, docker_cat, store=store, executor="ray", retries=1, timeout=300
        )

    driver = threading.Thread(target=drive)
    driver.start()
    deadline = time.monotonic() + 240
    while not kill_flag.exists() or not kill_flag.read_text().strip():
        assert driver.is_alive(), f"the batch ended before the task was killed: {outcome}"
        assert time.monotonic() < deadline, (
            "the task never reached its container; attempts: "
            f"{marker.read_text().split() if marker.exists() else []}\n{_ray_logs()}"
        )
        time.sleep(0.1)
    worker_pid, session_id = kill_flag.read_text().split()
    os.kill(int(worker_pid), signal.SIGKILL)
    driver.join(timeout=300)
    assert not driver.is_alive()

    lines = [json.loads(line) for line in store.path.read_text().splitlines()]
    assert sorted(line["key"] for line in lines) == ["repo0", "repo1", "repo2", "repo3"]
    summary = outcome["summary"]
    assert all(record.status is TaskStatus.OK for record in summary.records), (
        [(r.key, r.status, r.category, r.evidence, r.attempt) for r in summary.records],
        marker.read_text().split(),
        _ray_logs(),
    )
    assert {r.key: r.result["output"] for r in summary.records} == {
        f"repo{i}": f"content {i}" for i in range(4)
    }
    # Each task's process comes from a single-threaded forkserver, never a fork of the Ray
    # worker and its gRPC threads (a child can inherit a lock one of them held, and hang).
    assert {r.result["parent_threads"] for r in summary.records} == {1}
    attempts = marker.read_text().split()
    # Ray runs the killed task again once (its own retry, the same attempt number); a batch
    # retry of a machinery failure after that (a container that did not start in time on a busy
    # machine) is a recorded attempt of its own. Every run of repo1 is one of these.
    (again,) = (r for r in summary.records if r.key == "repo1")
    assert attempts.count("repo1") == 1 + again.attempt, (
        "the killed task ran again once, and once more only for each recorded batch attempt",
        again.attempt,
        attempts,
    )
    assert all(Path(r.trajectory or "").exists() for r in summary.records)

    # The killed attempt's container has no owner any more: gc on this node removes it.
    from backends.docker_engine import LABEL_SESSION, collect_garbage

    # The low-level list (no inspect per container): other work on the engine may remove its
    # own containers meanwhile, which made the high-level list raise NotFound.
    leftovers = docker_client.api.containers(
        all=True, filters={"label": f"{LABEL_SESSION}={session_id}"}
    )
    if leftovers:  # still there: gc must see it as orphaned and remove it
        removed = {item.session for item in collect_garbage(docker_client) if item.removed}
        assert session_id in removed

    # A rerun with one more task runs only that one.
    more = _tasks(repos, tmp_path, marker)
    rerun = run_batch(more, docker_cat, store=store, executor="ray", timeout=300)
    assert rerun.skipped == 4 and len(rerun.records) == 5
    assert marker.read_text().split().count("repo4") == 1
    assert len(marker.read_text().split()) == len(attempts) + 1
