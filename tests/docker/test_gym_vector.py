"""Many gym environments at once on the Docker backend: gymnasium's AsyncVectorEnv runs one
RepoSimEnv per process, each episode in its own container."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import gymnasium

from simulator.gym import GymTask, make_env
from tests.conftest import RepoFactory
from tests.docker.conftest import TEST_IMAGE
from tests.gym.test_env import BUGGY


def test_two_docker_envs_step_in_parallel_and_score_their_own_workspaces(
    docker_client: Any, make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(BUGGY, name="mathlib")
    task = GymTask.failing_tests(
        repo, ["tests/test_ops.py"], backend="docker", image=TEST_IMAGE
    ).to_dict()
    envs = gymnasium.vector.AsyncVectorEnv(
        [
            lambda: make_env(task, trajectory_dir=tmp_path / "env0"),
            lambda: make_env(task, trajectory_dir=tmp_path / "env1"),
        ],
        shared_memory=False,
        # spawn, not fork: forking a process that runs threads (Ray, Docker clients, a pytest
        # worker that ran them) can leave the child waiting forever on a lock.
        context="spawn",
    )
    try:
        envs.reset_async(seed=0)
        observations, _ = envs.reset_wait(timeout=300)
        assert all("mathlib/" in tree for tree in observations["tree"])
        envs.step_async(
            (
                {"tool": "bash", "arguments": {"command": "id -u; hostname"}},
                {
                    "tool": "edit",
                    "arguments": {
                        "command": "str_replace",
                        "path": "mathlib/ops.py",
                        "old_str": "a - b",
                        "new_str": "a + b",
                    },
                },
            )
        )
        observations, _, _, _, _ = envs.step_wait(timeout=300)
        uid, hostname = observations["output"][0].splitlines()[:2]
        assert uid == "1000" and hostname != socket.gethostname()  # a container, not this host
        assert "Edited mathlib/ops.py" in observations["output"][1]
        envs.step_async(
            (
                {"tool": "finish", "arguments": {"summary": "no change"}},
                {"tool": "finish", "arguments": {"summary": "fixed add"}},
            )
        )
        _, rewards, terminated, _, _ = envs.step_wait(timeout=300)
        assert list(terminated) == [True, True]
        # Each env scored its own container's workspace: only the second fixed the bug.
        assert abs(rewards[0] - 1 / 3) < 1e-9 and rewards[1] == 1.0
    finally:
        # close, not terminate: each worker closes its env, so its session removes its container
        # (terminate=True killed the workers and left both containers running, owner-less, until
        # a later `reposim gc`); a worker stuck past the timeout is still terminated
        envs.close(timeout=120)
    assert len(list((tmp_path / "env0").glob("*.jsonl"))) >= 1
    assert len(list((tmp_path / "env1").glob("*.jsonl"))) >= 1
