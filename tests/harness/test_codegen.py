"""codegen and debug through litellm against the local fake server, on real workspaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.codegen.debug import debug
from simulator.codegen.passk import pass_at_k
from simulator.codegen.run import codegen
from simulator.dataset.schema import Harness
from simulator.harness.model import assemble
from simulator.harness.target import find_targets
from simulator.harness.workflow import new_problem
from simulator.session import Session
from tests.agent.conftest import BUG, FIX, FIX_CALL
from tests.agent.fake_llm import FakeLLM, Reply, call, fake_client
from tests.conftest import RepoFactory
from tests.harness.conftest import CALC, CLAMP_EQUIVALENCE, clamp_reply

EQUIVALENCE_TESTS = "\n" + CLAMP_EQUIVALENCE

RIGHT = clamp_reply("max(low, min(value, high))", message="bad bounds")

WRONG = clamp_reply("max(low, value)", message="bad bounds")


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 2) == pytest.approx(1 - 1 / 3)  # 1 - C(2,2)/C(3,2)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(5, 4, 2) == 1.0 and pass_at_k(5, 0, 5) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


async def test_codegen_scores_samples_and_debug_rounds(session: Session, calc_repo: Path) -> None:
    [target] = find_targets(calc_repo, selectors=["clamp"])
    problem = new_problem(session, target)
    problem.harness = Harness("model", assemble(target, "shapes.calc", EQUIVALENCE_TESTS))
    server = FakeLLM(
        [
            Reply(RIGHT),  # sample 0: right at once
            Reply(WRONG),  # sample 1: wrong, then right after the failure is fed back
            Reply(RIGHT),
            Reply("I would rather not write code."),  # sample 2: no code, then wrong
            Reply(WRONG),
        ]
    ).start()
    try:
        result = await codegen(
            session, problem, fake_client(server), n=3, ks=(1, 2), debug_rounds=1
        )
    finally:
        server.close()

    assert [(s.passed_first, s.passed, s.rounds) for s in result.samples] == [
        (True, True, 1),
        (False, True, 2),
        (False, False, 2),
    ]
    assert result.pass_at() == {"pass@1": pytest.approx(1 / 3, abs=1e-4), "pass@2": 0.6667}
    assert result.pass_at(debug=True) == {"pass@1": 0.6667, "pass@2": 1.0}
    # the clamp above `high` is missing: the case (11, 0, 10) fails, and the log says so
    assert "FAILED .reposim/harness/test_shapes_calc_clamp.py::test_same_as_reference[args2]" in (
        result.samples[2].log
    )

    # the model never saw the reference body, only the mask; the failure went back to it
    first_prompt = server.requests[0]["messages"][1]["content"]
    assert "def clamp(value, low, high):" in first_prompt and "..." in first_prompt
    assert "low must not exceed high" not in first_prompt
    assert "fails its tests" in server.requests[2]["messages"][-1]["content"]
    # the workspace holds the reference again
    assert (await session.read_bytes("shapes/calc.py")).decode() == CALC


async def test_debug_fixes_failing_tests_and_reports_the_diff(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    from tests.agent.conftest import BUGGY_PROJECT

    repo = make_repo(BUGGY_PROJECT, name="buggy")
    server = FakeLLM(
        [
            Reply(
                "mean divides by len - 1.",
                [FIX_CALL],
            ),
            Reply("", [call("run_tests")]),
            Reply("", [call("finish", summary="mean divides by len(values) now.")]),
        ]
    ).start()
    session = await Session.open(repo, trajectory_path=tmp_path / "debug.jsonl")
    try:
        result = await debug(session, fake_client(server), "tests/test_core.py")
    finally:
        await session.close()
        server.close()
    assert result.status == "fixed" and result.fixed
    assert result.before == "1 passed, 1 failed" and result.after == "2 passed"
    assert f"-    return {BUG}" in result.diff and f"+    return {FIX}" in result.diff
    assert result.summary == "mean divides by len(values) now."
    # the agent was told what failed
    assert "test_mean" in server.requests[0]["messages"][1]["content"]


async def test_the_codegen_command_runs_problems_as_a_resumable_batch(
    session: Session, calc_repo: Path, tmp_path: Path
) -> None:
    import asyncio
    import json
    import subprocess
    import sys

    from simulator.dataset.schema import CurationState

    [target] = find_targets(calc_repo, selectors=["clamp"])
    problem = new_problem(session, target)
    problem.harness = Harness("model", assemble(target, "shapes.calc", EQUIVALENCE_TESTS))
    problem.curation.state = CurationState.ACCEPTED
    problems = tmp_path / "problems.jsonl"
    problems.write_text(json.dumps(problem.as_dict()) + "\n")
    results = tmp_path / "results.jsonl"
    server = FakeLLM([Reply(RIGHT), Reply(WRONG)]).start()
    command = [
        sys.executable, "-m", "reposim", "codegen", str(problems), "--model", "openai/fake-model",
        "--api-base", server.api_base, "-n", "2", "--results", str(results),
    ]  # fmt: skip
    env = {**__import__("os").environ, "OPENAI_API_KEY": "sk-test"}
    try:
        first = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, env=env, timeout=600
        )
        assert first.returncode == 0, first.stderr
        assert "1/2 correct; pass@1 0.50, pass@2 1.00" in first.stdout
        [record] = [json.loads(line) for line in results.read_text().splitlines()]
        assert record["key"] == problem.id and record["status"] == "ok"
        assert Path(record["trajectory"]).exists()  # the problem's own recorded session
        again = await asyncio.to_thread(
            subprocess.run, command, capture_output=True, text=True, env=env, timeout=600
        )
        assert "1 were already done" in again.stderr
        assert len(server.requests) == 2, "a scored problem is not sampled again"
    finally:
        server.close()


async def test_codegen_judges_a_traced_harness_with_suite_parity(
    session: Session, calc_repo: Path
) -> None:
    from simulator.harness.validate import Thresholds
    from simulator.harness.workflow import HarnessOptions, make_problems

    options = HarnessOptions(thresholds=Thresholds(repeats=1))
    [problem] = await make_problems(session, find_targets(calc_repo, selectors=["clamp"]), options)
    assert problem.harness is not None and problem.harness.suite_tests
    problem.validation = None  # never judged (as after a person's edit)
    server = FakeLLM([Reply(RIGHT)]).start()
    try:
        result = await codegen(session, problem, fake_client(server), n=1)
    finally:
        server.close()
    # the harness codegen scores with is judged as `reposim harness` judges it: parity included
    assert result.harness_parity == 1.0
    assert result.harness_figures()["harness_parity"] == 1.0
