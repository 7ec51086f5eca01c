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

    from simulator.batch.ray_executor import init_ray

    init_ray(ray, 2, None)  # a local instance with 2 slots, as run_batch would start
    yield
    ray.shutdown()


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
        assert time.monotonic() < deadline, "the task never reached its container"
        time.sleep(0.1)
    worker_pid, session_id = kill_flag.read_text().split()
    os.kill(int(worker_pid), signal.SIGKILL)
    driver.join(timeout=300)
    assert not driver.is_alive()

    lines = [json.loads(line) for line in store.path.read_text().splitlines()]
    assert sorted(line["key"] for line in lines) == ["repo0", "repo1", "repo2", "repo3"]
    summary = outcome["summary"]
    assert all(record.status is TaskStatus.OK for record in summary.records)
    assert {r.key: r.result["output"] for r in summary.records} == {
        f"repo{i}": f"content {i}" for i in range(4)
    }
    attempts = marker.read_text().split()
    assert attempts.count("repo1") == 2, "the killed task ran again, once"
    assert all(Path(r.trajectory or "").exists() for r in summary.records)

    # The killed attempt's container has no owner any more: gc on this node removes it.
    from backends.docker_engine import LABEL_SESSION, collect_garbage

    leftovers = [
        c
        for c in docker_client.containers.list(all=True, filters={"label": f"{LABEL_SESSION}"})
        if c.labels.get(LABEL_SESSION) == session_id
    ]
    if leftovers:  # still there: gc must see it as orphaned and remove it
        removed = {item.session for item in collect_garbage(docker_client) if item.removed}
        assert session_id in removed

    # A rerun with one more task runs only that one.
    more = _tasks(repos, tmp_path, marker)
    rerun = run_batch(more, docker_cat, store=store, executor="ray", timeout=300)
    assert rerun.skipped == 4 and len(rerun.records) == 5
    assert marker.read_text().split().count("repo4") == 1
    assert len(marker.read_text().split()) == len(attempts) + 1
