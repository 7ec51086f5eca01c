"""`reposim agent --tasks FILE.jsonl`: a batch of agent runs through the shared batch layer,
against the fake OpenAI-compatible server on 127.0.0.1 (litellm's real request path), with real
sessions on real git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from simulator.batch import ResultStore
from simulator.trajectory import read_trajectory
from tests.agent.conftest import BUG, FIX_REPLIES
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.agent.test_agent_cli import reposim as reposim_cli


def reposim(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, given the time a batch needs on a busy machine: the driver and the batch's
    worker each import litellm (seconds when idle; over a minute each at load 20)."""
    return reposim_cli(*args, timeout=1500)


def _tasks(path: Path, repo: Path, *ids_and_steps: tuple[str, int]) -> Path:
    lines = [
        json.dumps(
            {
                "id": task_id,
                "repo": str(repo),
                "instruction": "Make tests/test_core.py::test_mean pass.",
                "tests": ["tests/test_core.py"],
                "max_steps": steps,
            }
        )
        for task_id, steps in ids_and_steps
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_batch_of_agent_runs_records_each_session_with_tests_before_and_after(
    buggy_repo: Path, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.script = [
        *FIX_REPLIES,  # fix-it: edits, runs the tests, finishes.
        # out-of-steps: looks around and runs out of its one step.
        Reply("Let me look.", [call("bash", command="ls stats")]),
    ]
    tasks = _tasks(tmp_path / "tasks.jsonl", buggy_repo, ("fix-it", 10), ("out-of-steps", 1))
    results = tmp_path / "agent-results.jsonl"
    args = [
        "agent",
        "--tasks",
        str(tasks),
        "--model",
        "openai/fake-model",
        "--api-base",
        fake_llm.api_base,
        "--results",
        str(results),
        "--jobs",
        "1",
    ]
    proc = reposim(*args)
    assert proc.returncode == 1, proc.stderr  # one task did not finish
    records = ResultStore(results).latest()
    done = records["fix-it"]
    assert str(done.status) == "ok"
    assert done.result["outcome"] == "finished"
    assert done.result["tests_before"]["failed"] == 1
    assert done.result["tests_after"] == {
        "passed": 2,
        "failed": 0,
        "error": 0,
        "skipped": 0,
        "exit_code": 0,
    }
    assert done.result["reward"] == 1.0
    assert done.result["steps"] == 3
    stuck = records["out-of-steps"]
    assert str(stuck.status) == "failed" and stuck.category == "budget"
    assert stuck.result["tests_after"]["failed"] == 1
    # Each session's trajectory sits in the batch's folder, named by its task.
    folder = tmp_path / "agent-results.trajectories"
    assert sorted(p.name for p in folder.glob("*.jsonl")) == ["fix-it.jsonl", "out-of-steps.jsonl"]
    header = read_trajectory(folder / "fix-it.jsonl").header
    assert header.agent is not None and header.agent.extra.get("task") == "fix-it"
    # The user's checkout is untouched.
    assert BUG in (buggy_repo / "stats" / "core.py").read_text()
    assert "fix-it" in proc.stdout and "finished" in proc.stdout

    # A rerun resumes: the finished task is not run again (no model call is made for it).
    calls = len(fake_llm.requests)
    fake_llm.script = [Reply("", [call("finish", summary="gave up")])]
    again = reposim(*args, "--retry-failed")
    assert len(fake_llm.requests) == calls + 1
    assert again.returncode == 0, again.stderr
    # The earlier attempt's trajectory is kept beside the new one.
    assert len(list(folder.glob("out-of-steps*.jsonl"))) == 2


def test_bad_batch_input_is_one_sentence(buggy_repo: Path, tmp_path: Path) -> None:
    broken = tmp_path / "tasks.jsonl"
    broken.write_text('{"repo": "/no/such/dir", "instruction": "x"}\n')
    proc = reposim(
        "agent",
        "--tasks",
        str(broken),
        "--model",
        "openai/x",
        "--api-base",
        "http://127.0.0.1:9/v1",
    )
    assert proc.returncode == 2
    assert "is not a directory" in proc.stderr and "Traceback" not in proc.stderr
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{buggy_repo}\n")
    proc = reposim(
        "agent", str(listing), "--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1"
    )
    assert proc.returncode == 2 and "--task is required" in proc.stderr
