"""The traced generator on a fixture repository: harnesses from its own tests, no model."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from simulator.dataset.readers import read_problems
from simulator.dataset.shapes import R2E_FILE, REPOST_FILE
from simulator.dataset.writers import FORMATS, write
from simulator.events import Kind
from simulator.harness.env import PythonEnv
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.conftest import RepoFactory
from tests.harness.conftest import PLANTED_BUG


async def test_traced_harnesses_pass_on_the_reference_and_catch_a_planted_bug(
    session: Session, calc_repo: Path, tmp_path: Path
) -> None:
    targets = find_targets(calc_repo)
    assert [t.id for t in targets] == [
        "shapes/calc.py::clamp",
        "shapes/calc.py::Account.withdraw",
        "shapes/calc.py::untested",
    ]
    problems = await make_problems(session, targets, HarnessOptions())
    clamp, withdraw, untested = problems

    assert clamp.validation is not None and clamp.validation.verdict == "valid"
    assert clamp.harness is not None and clamp.harness.cases == 4
    # 4 cases and the comparator's self-check
    assert clamp.validation.runs == 3 and clamp.validation.tests == 5
    # clamp: three `if`s, both ways each: 6 of 6 branch arcs
    assert clamp.validation.coverage is not None
    assert (clamp.validation.coverage["covered"], clamp.validation.coverage["total"]) == (6, 6)
    # 10 mutants; the three boundary swaps (> to >=, < to <=, > to >=) survive: no test
    # has value == low, value == high or low == high
    assert clamp.validation.mutation is not None
    assert (clamp.validation.mutation["killed"], clamp.validation.mutation["total"]) == (7, 10)
    assert sorted(s["description"] for s in clamp.validation.mutation["survivors"]) == [
        "line 10: `>` -> `>=`",
        "line 6: `>` -> `>=`",
        "line 8: `<` -> `<=`",
    ]

    # the method under a `# pragma: no cover` class line: its 2 branches are counted (the pragma
    # hides nothing). The one recorded call takes one of them (50%); a case derived from it (the
    # amount replaced by another recorded value) reaches the overdraft, its expected exception
    # the reference's, and is marked as derived in the harness
    assert withdraw.validation is not None and withdraw.harness is not None
    assert withdraw.validation.coverage is not None
    assert withdraw.validation.coverage["total"] == 2
    assert withdraw.validation.coverage["covered"] == 2
    assert any("coverage 50% -> 100%" in note for note in withdraw.harness.notes)
    assert "# derived from the call recorded in tests/test_calc.py::test_withdraw" in (
        withdraw.harness.text
    )
    assert "raises=('builtins.ValueError', 'insufficient funds')" in withdraw.harness.text
    assert withdraw.validation.verdict == "valid"
    # negated test, `-=`, `return None` and the message are caught; `>=` survives (no case
    # withdraws exactly the balance)
    assert withdraw.validation.mutation is not None
    assert (withdraw.validation.mutation["killed"], withdraw.validation.mutation["total"]) == (4, 5)
    assert [s["description"] for s in withdraw.validation.mutation["survivors"]] == [
        "line 23: `>` -> `>=`"
    ]

    assert untested.harness is None and untested.validation is None
    assert "never call" in untested.curation.reasons[0]

    # the harness is a plain pytest file a person can read and run
    text = (await session.read_bytes(clamp.harness.path)).decode()
    assert "candidate = load_candidate(TARGET)" in text
    assert "args=(-1, 0, 10)," in text and "returns=0," in text
    assert "raises=('builtins.ValueError', 'low must not exceed high')," in text
    env = PythonEnv()
    run = await session.run_tests(clamp.harness.path, command=env.pytest(".reposim/harness"))
    assert run.passed, run.output

    # exports load back as the same problems, and the shaped ones hold their datasets' fields
    for fmt in FORMATS:
        path = tmp_path / f"problems.{fmt}"
        assert write(problems, path, fmt, keep_unharnessed=True) == 3
        assert [p.as_dict() for p in read_problems(path)] == [p.as_dict() for p in problems]
    jsonschema.validate(json.loads((tmp_path / "problems.r2e").read_text()), R2E_FILE)
    repost = json.loads((tmp_path / "problems.repost").read_text())
    jsonschema.validate(repost, REPOST_FILE)
    assert repost[0]["func_name"] == "clamp" and repost[0]["coverage_rate"] == 1.0
    assert repost[0]["test_correctness_check"]["answer"] == "yes"
    assert repost[1]["test_correctness_check"]["answer"] == "yes"  # withdraw, with its derived case
    assert repost[2]["test_correctness_check"]["answer"] == "no"  # untested: no harness
    # RepoST's eval_script holds clamp itself and replays the harness on
    # `clamp_new_implementation` (RepoST's generation step puts it there): without one it fails
    # (issue 23: no fallback to the original); tests/dataset runs RepoST's own steps on it
    script = repost[0]["eval_script"]
    assert "\ndef clamp(value, low, high):" in script
    for added, failed in (("", 1), ("value", 1), (clamp.target["body"].split('"""')[-1], 0)):
        implementation = f"\n\ndef clamp_new_implementation(value, low, high):\n    {added}"
        text = script + (implementation if added else "")
        await session.write("repost_eval.py", text.replace("    \n", "\n"))
        run = await session.run_tests("repost_eval.py", command=env.pytest())
        assert run.counts()["failed"] == failed, run.output

    # a planted bug in the workspace: the same harness fails, on the case that shows it
    source = (await session.read_bytes("shapes/calc.py")).decode()
    await session.write("shapes/calc.py", source.replace(*PLANTED_BUG))
    run = await session.run_tests(clamp.harness.path, command=env.pytest(".reposim/harness"))
    assert not run.passed
    failed = [t for t in run.tests if t.outcome == "failed"]
    assert len(failed) == 1 and "returned 9, the reference returned 10" in failed[0].message

    events = read_trajectory(session.trajectory_path).events
    steps = [e.payload for e in events if e.kind == Kind.WORKFLOW_STEP]
    assert [s["step"] for s in steps if s["status"] == "ok"][:1] == ["trace"]
    result = next(e.payload for e in events if e.kind == Kind.WORKFLOW_RESULT)
    assert result["result"]["targets"] == 3 and result["result"]["valid"] == 2
    # each harness is validated in one process of the runner: its runs on the reference (the
    # first under coverage.py) and its mutants; no interpreter start per run
    until = next(i for i, e in enumerate(events) if e.kind == Kind.WORKFLOW_END)
    assert not [e for e in events[:until] if e.kind == Kind.TEST_RUN]
    commands = [str(e.payload["command"]) for e in events[:until] if e.kind == Kind.EXEC]
    runners = [c for c in commands if "reposim_mutants.py" in c and "-harness.json" in c]
    # clamp, withdraw, and withdraw again with its derived case (below the coverage threshold)
    assert len(runners) == 3, runners
    assert sum("Account_withdraw" in c for c in runners) == 2, runners


LAZY_PROJECT = {
    "lazy/__init__.py": "",
    "lazy/core.py": (
        "def scaled(values, factor):\n"
        '    """The values times `factor`, lazily."""\n'
        "    if factor == 0:\n"
        '        raise ValueError("factor must not be zero")\n'
        "    return map(abs, [v * factor for v in values])\n\n\n"
        "def apply_all(fns, value):\n"
        '    """Each function of `fns` applied to `value`."""\n'
        "    results = []\n"
        "    for fn in fns:\n"
        "        results.append(fn(value))\n"
        "    return results\n"
    ),
    # no __init__.py: pytest imports this module as plain `test_lazy`
    "tests/test_lazy.py": (
        "import pytest\n\nfrom lazy.core import apply_all, scaled\n\n\n"
        "def inc(x):\n    return x + 1\n\n\n"
        "def test_scaled():\n    assert list(scaled([1, -2], 3)) == [3, 6]\n"
        "    with pytest.raises(ValueError):\n        scaled([1], 0)\n\n\n"
        "def test_apply_all():\n    assert apply_all([inc, abs], -1) == [0, 1]\n"
        "    assert apply_all([], 5) == []\n"
    ),
}


async def test_lazy_results_and_values_from_test_modules_are_replayed(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(LAZY_PROJECT, name="lazy")
    session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl")
    try:
        problems = await make_problems(
            session, find_targets(repo), HarnessOptions(thresholds=Thresholds(repeats=1))
        )
    finally:
        await session.close()
    scaled, apply_all = problems
    # a `map` is compared by what it yields
    assert scaled.validation is not None and scaled.validation.verdict == "valid", (
        scaled.validation.reasons if scaled.validation else scaled.curation.reasons
    )
    # `inc` lives in tests/test_lazy.py, imported as `test_lazy`: the harness puts tests/ on
    # the path so the recorded call can be replayed
    assert apply_all.harness is not None
    assert 'import_paths(["tests"])' in apply_all.harness.text
    assert apply_all.validation is not None and apply_all.validation.verdict == "valid", (
        apply_all.validation.reasons
    )
