"""`reposim agent` and `reposim demo` as a user runs them: real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from simulator.events import Actor, Kind
from simulator.trajectory import read_trajectory
from tests.agent.conftest import FIX_REPLIES
from tests.agent.fake_llm import FakeLLM, Reply, call


def reposim(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environment.pop("REPOSIM_MODEL", None)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", "from reposim.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environment,
        check=False,
    )


def test_demo_headless_fixes_the_bundled_project(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    proc = reposim("demo", "--headless", "--dir", str(tmp_path), "--trajectory", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "tests: 8 passed, 1 failed" in proc.stdout
    assert "tests: 9 passed" in proc.stdout
    assert "agent finished:" in proc.stdout
    # the tools really ran on the copy: the workspace is fixed, the bundled project is not
    events = read_trajectory(out).events
    edit = next(e for e in events if e.kind == Kind.FILE_EDIT)
    assert edit.actor is Actor.AGENT
    assert "+    if quantity >= BULK_THRESHOLD:" in edit.payload["diff"]
    assert (tmp_path / "cart" / ".git").is_dir()
    bundled = Path(__file__).parents[2] / "simulator" / "demo_repo" / "cart" / "pricing.py"
    assert "quantity > BULK_THRESHOLD" in bundled.read_text()


def test_the_bundled_trajectory_says_it_is_scripted() -> None:
    from simulator.demo import bundled_trajectory

    header = read_trajectory(bundled_trajectory()).header
    assert "scripted demonstration" in header.agent.extra["scripted"]
    assert "not produced by a model" in header.agent.extra["scripted"]


def test_no_model_configured_is_one_sentence(buggy_repo: Path) -> None:
    proc = reposim("agent", str(buggy_repo), "--task", "fix it")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "reposim: error: No model is configured; pass --model provider/name (for example "
        "openai/gpt-4o-mini) or set REPOSIM_MODEL."
    ]


def test_a_missing_key_names_the_variable(buggy_repo: Path) -> None:
    proc = reposim("agent", str(buggy_repo), "--task", "fix it", "--model", "openai/gpt-4o-mini")
    assert proc.returncode == 2
    assert "Set OPENAI_API_KEY in the environment" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_agent_command_against_an_openai_compatible_server(
    buggy_repo: Path, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.script = list(FIX_REPLIES)
    out = tmp_path / "agent.jsonl"
    proc = reposim(
        "agent",
        str(buggy_repo),
        "--task",
        "Make the tests pass.",
        "--model",
        "openai/fake-model",
        "--api-base",
        fake_llm.api_base,
        "--json",
        "--trajectory",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    printed = [json.loads(line) for line in proc.stdout.splitlines()]
    assert printed[-2]["kind"] == "agent.finish"
    assert printed[-2]["payload"]["summary"] == "fixed mean"
    header = read_trajectory(out).header
    assert header.agent.to_dict() == {"model": "openai/fake-model", "mode": "auto"}
    # the user's checkout is untouched (scratch copy); the fix is in the recorded edit
    assert "(len(values) - 1)" in (buggy_repo / "stats" / "core.py").read_text()
    assert any(e["kind"] == "test.result" and e["payload"]["exit_code"] == 0 for e in printed)


def test_demo_runs_live_with_a_model(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.script = [
        Reply("", [call("run_tests")]),
        Reply(
            "Off by one at the threshold.",
            [
                call(
                    "edit",
                    command="str_replace",
                    path="cart/pricing.py",
                    old_str="if quantity > BULK_THRESHOLD:",
                    new_str="if quantity >= BULK_THRESHOLD:",
                )
            ],
        ),
        Reply("", [call("run_tests")]),
        Reply("", [call("finish", summary="live fix")]),
    ]
    proc = reposim(
        "demo",
        "--headless",
        "--model",
        "openai/fake-model",
        "--api-base",
        fake_llm.api_base,
        "--dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "tests: 9 passed" in proc.stdout
    assert "agent finished: live fix" in proc.stdout
    task = fake_llm.requests[0]["messages"][1]["content"]
    assert task.startswith("One of the tests of this project fails.")


def test_agent_confirm_mode_asks_on_the_terminal(
    buggy_repo: Path, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.script = [
        Reply("", [call("bash", command="rm -rf tests")]),
        Reply("", [call("run_tests")]),
        Reply("", [call("finish", summary="asked twice")]),
    ]
    out = tmp_path / "confirm.jsonl"
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-c", "from reposim.cli import main; main()", "agent",
         str(buggy_repo), "--task", "tidy up", "--model", "openai/fake-model",
         "--api-base", fake_llm.api_base, "--mode", "confirm", "--trajectory", str(out)],
        input="r\nthe tests stay\na\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "approve $ rm -rf tests?" in proc.stderr
    decisions = [
        (e.payload["allowed"], e.payload["reason"])
        for e in read_trajectory(out).events
        if e.kind == Kind.POLICY_DECISION
    ]
    assert decisions == [(False, "the tests stay"), (True, "")]
    tool_answer = fake_llm.requests[1]["messages"][-1]
    assert "the tests stay" in tool_answer["content"]
