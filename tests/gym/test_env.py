"""The gymnasium env over a real session: the checker, an episode solved by a scripted model,
and its trajectory re-executed step by step."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from simulator.agent.models import ModelTurn, ScriptedClient, ToolCall
from simulator.gym import GymTask, RepoSimEnv, RewardMode, TaskError, run_episode
from simulator.replay.reexec import reexecute
from tests.conftest import RepoFactory

BUGGY = {
    "mathlib/__init__.py": "",
    "mathlib/ops.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_ops.py": (
        "from mathlib.ops import add, mul\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_add_zero():\n    assert add(0, 4) == 4\n\n\n"
        "def test_mul():\n    assert mul(2, 3) == 6\n"
    ),
}


@pytest.fixture
def task(make_repo: RepoFactory) -> GymTask:
    repo = make_repo(BUGGY, name="mathlib")
    return GymTask.failing_tests(repo, ["tests/test_ops.py"], max_steps=6)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=f"call-{name}", name=name, arguments=json.dumps(arguments))


def test_gymnasium_checker_passes(task: GymTask, tmp_path: Path) -> None:
    env = RepoSimEnv(task, trajectory_dir=tmp_path / "episodes")
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_reset_observes_the_task_and_tree_and_rewards_come_from_the_tests(
    task: GymTask, tmp_path: Path
) -> None:
    env = RepoSimEnv(task, trajectory_dir=tmp_path)
    try:
        observation, info = env.reset(seed=1)
        assert "tests/test_ops.py" in observation["task"]
        assert observation["tree"].splitlines()[:2] == ["mathlib/", "tests/"]
        assert "mathlib/ops.py" in observation["tree"]
        assert Path(info["trajectory"]).exists()
        # Nothing fixed yet: finishing now scores the pass ratio, 1 test of 3.
        observation, reward, terminated, truncated, info = env.step(
            {"tool": "finish", "arguments": {"summary": "giving up"}}
        )
        assert terminated and not truncated
        assert reward == pytest.approx(1 / 3)
        assert info["tests"]["counts"]["failed"] == 2
        with pytest.raises(gymnasium.error.ResetNeeded):
            env.step({"tool": "view", "arguments": {"path": "."}})
    finally:
        env.close()


def test_pass_fail_reward_and_truncation_at_max_steps(task: GymTask, tmp_path: Path) -> None:
    strict = GymTask.failing_tests(
        task.repo, list(task.tests), max_steps=2, reward=RewardMode.PASS_FAIL
    )
    env = RepoSimEnv(strict, trajectory_dir=tmp_path)
    try:
        env.reset()
        _, reward, terminated, truncated, _ = env.step(
            {"tool": "bash", "arguments": {"command": "echo one"}}
        )
        assert (reward, terminated, truncated) == (0.0, False, False)
        _, reward, terminated, truncated, info = env.step(
            {"tool": "view", "arguments": {"path": "mathlib/ops.py"}}
        )
        assert truncated and not terminated
        assert reward == 0.0 and info["tests"]["passed"] is False
    finally:
        env.close()


def test_bad_actions_and_tasks_say_what_is_wrong(task: GymTask, tmp_path: Path) -> None:
    env = RepoSimEnv(task, trajectory_dir=tmp_path)
    try:
        with pytest.raises(gymnasium.error.ResetNeeded):
            env.step({"tool": "view", "arguments": {"path": "."}})
        env.reset()
        with pytest.raises(gymnasium.error.InvalidAction, match="one of"):
            env.step({"tool": "rm", "arguments": {}})
        # A call the tool rejects is an observation for the agent, not an exception.
        observation, _, _, _, info = env.step({"tool": "view", "arguments": {}})
        assert observation["output"].startswith("Error:") and info["tool_ok"] is False
    finally:
        env.close()
    with pytest.raises(TaskError, match="not a directory"):
        GymTask(repo=str(tmp_path / "missing"), instruction="x")


def test_gymnasium_make_builds_the_env_from_a_task_dict(task: GymTask, tmp_path: Path) -> None:
    env = gymnasium.make("reposim/Repo-v0", task=task.to_dict(), trajectory_dir=tmp_path)
    try:
        observation, _ = env.reset()
        assert observation["task"] == task.instruction
    finally:
        env.close()


async def test_a_scripted_model_solves_the_task_and_the_episode_replays(
    task: GymTask, tmp_path: Path
) -> None:
    client = ScriptedClient(
        [
            ModelTurn("Look at the code.", (call("view", path="mathlib/ops.py"),)),
            ModelTurn(
                "add subtracts; fix it.",
                (
                    call(
                        "edit",
                        command="str_replace",
                        path="mathlib/ops.py",
                        old_str="return a - b",
                        new_str="return a + b",
                    ),
                ),
            ),
            ModelTurn("Check.", (call("run_tests"),)),
            ModelTurn("Done.", (call("finish", summary="add adds now"),)),
        ]
    )
    env = RepoSimEnv(task, trajectory_dir=tmp_path / "episodes")
    try:
        # run_episode is synchronous (as an RL worker is); this test is async only to await the
        # re-execution below, so the episode runs in a thread of its own.
        import asyncio

        result = await asyncio.to_thread(run_episode, env, client, seed=0)
    finally:
        await asyncio.to_thread(env.close)
    assert result.terminated and result.reward == 1.0 and result.steps == 4
    assert result.tests is not None and result.tests["counts"]["passed"] == 3
    assert client.remaining == 0
    assert result.trajectory is not None
    report, _ = await reexecute(result.trajectory, trajectory_path=tmp_path / "verify.jsonl")
    assert report.problem is None
    assert report.first_difference is None, report.summary()
    assert report.count("match") >= 4


def test_the_tree_is_the_workspace_as_the_file_tree_shows_it(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """The observation's tree comes from the shared workspace walk: .gitignore hides what it
    names, caches and virtual environments are skipped, entries are in name order."""
    files = {
        **BUGGY,
        ".gitignore": "generated/\n*.log\n",
        "generated/out.py": "x = 1\n",
        "notes.log": "noise\n",
        "zeta.txt": "z\n",
        ".venv/lib/site.py": "",
    }
    repo = make_repo(files, name="mathlib")
    env = RepoSimEnv(GymTask.failing_tests(repo, ["tests/test_ops.py"]), trajectory_dir=tmp_path)
    try:
        observation, _ = env.reset(seed=1)
        tree = observation["tree"].splitlines()
        assert tree[:4] == [".gitignore", "mathlib/", "tests/", "zeta.txt"], tree
        assert not any(line.startswith(("generated", ".venv", "notes.log")) for line in tree)
    finally:
        env.close()
