"""Per-line coverage for a gutter, and curation decisions recorded in the trajectory."""

from __future__ import annotations

from pathlib import Path

from simulator.events import Kind
from simulator.harness.branches import BranchCoverage, function_branches
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems, record_decision, reject
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.harness.conftest import CALC


async def test_coverage_marks_each_line_and_a_rejection_is_recorded(
    session: Session, calc_repo: Path
) -> None:
    options = HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=2))
    [problem] = await make_problems(session, find_targets(calc_repo, selectors=["clamp"]), options)
    assert problem.validation is not None and problem.validation.coverage is not None
    marks = BranchCoverage.from_dict(problem.validation.coverage).line_marks()
    lines = CALC.splitlines()
    by_text = {lines[n - 1].strip(): mark for n, mark in marks.items()}
    # the recorded calls take every exit of clamp: every statement covered, none partial
    assert by_text["return value"] == "covered"
    assert by_text["if value < low:"] == "covered"
    assert set(marks.values()) == {"covered"}

    # a harness that only calls clamp inside its bounds: the raise and the clamping miss,
    # and the `if`s that ran are partial
    start = lines.index("def clamp(value, low, high):") + 1
    end = start + 8
    executed = [(-start, start + 2), (start + 2, start + 4), (start + 4, start + 6)]
    executed += [(start + 6, start + 8), (start + 8, -start)]
    partial = function_branches(CALC, start, end, executed).line_marks()
    assert partial[start + 3] == "missed"  # raise ValueError
    assert partial[start + 2] == "partial"  # if low > high: only the false exit
    assert partial[start + 8] == "covered"  # return value

    reject(problem, by="ada", reason="too few cases")
    record_decision(session, problem, "reject", by="ada", reason="too few cases")
    events = read_trajectory(session.trajectory_path).events
    [result] = [
        e.payload
        for e in events
        if e.kind == Kind.WORKFLOW_RESULT and e.payload["workflow"] == "curation"
    ]
    assert result["result"] == {
        "problem": problem.id,
        "state": "rejected",
        "by": "ada",
        "reason": "too few cases",
    }
