"""An agent batch on a real local Ray instance, its sessions seen by the fleet (the model is the
fake OpenAI-compatible server on 127.0.0.1, reached through litellm from the Ray workers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simulator.agent.batch import agent_task, agent_tasks
from simulator.agent.loop import Budgets
from simulator.batch import ResultStore, run_batch
from simulator.fleet import Fleet, SessionState
from simulator.gym import GymTask
from tests.agent.conftest import BUGGY_PROJECT, FIX_CALL
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.conftest import RepoFactory


@pytest.mark.slow
def test_an_agent_batch_on_ray_shows_its_sessions_in_the_fleet(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    repo = make_repo(BUGGY_PROJECT, name="buggy")
    server = FakeLLM(
        [
            Reply(
                "Fix it.",
                [FIX_CALL],
            ),
            Reply("", [call("finish", summary="fixed mean")]),
        ]
    ).start()
    folder = tmp_path / "runs.trajectories"
    results = tmp_path / "runs.jsonl"
    try:
        tasks = agent_tasks(
            [
                GymTask(
                    repo=str(repo),
                    instruction="Fix mean.",
                    tests=("tests/test_core.py",),
                    id="on-ray",
                )
            ],
            model="openai/fake-model",
            api_base=server.api_base,
            budgets=Budgets(max_steps=5),
            trajectories=folder,
        )
        summary = run_batch(tasks, agent_task, store=ResultStore(results), jobs=1, executor="ray")
    finally:
        server.close()
        if ray.is_initialized():
            ray.shutdown()
    [record] = summary.records
    assert str(record.status) == "ok", (record.category, record.evidence)
    assert record.result["tests_after"]["passed"] == 2
    fleet = Fleet(folder, results=results)
    fleet.poll()
    row = fleet.rows["on-ray"]
    assert row.state == SessionState.FINISHED
    assert row.verdict == "ok"
    assert row.steps >= 2  # the edit and the test runs before and after
    assert row.tests == "2 passed"
