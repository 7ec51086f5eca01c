"""The Docker gym env closes every socket it opened (issue 25 item 9: unclosed-socket
ResourceWarnings after close)."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

from simulator.gym.env import RepoSimEnv
from simulator.gym.task import GymTask
from tests.docker.conftest import TEST_IMAGE


def test_a_docker_gym_env_leaves_no_unclosed_socket(sample_repo: Path, tmp_path: Path) -> None:
    task = GymTask(
        repo=str(sample_repo), instruction="look", max_steps=2, backend="docker",
        image=TEST_IMAGE, test_command="true",
    )  # fmt: skip
    # what earlier tests in this worker left for the collector is theirs, not the env's: in the
    # lead's run with Docker modules first, an earlier test's finished subprocess transport was
    # collected inside this window and counted here
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        env = RepoSimEnv(task, trajectory_dir=tmp_path)
        try:
            env.reset()
            env.step({"tool": "bash", "arguments": {"command": "echo hi"}})
        finally:
            env.close()
        del env
        gc.collect()
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert unclosed == []
