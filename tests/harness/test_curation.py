"""The engine verbs a curation UI needs: edit, revalidate, remutate, accept, reject."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.dataset.schema import CurationState
from simulator.events import Kind
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import (
    HarnessOptions,
    accept,
    edit,
    make_problems,
    reject,
    remutate,
    revalidate,
)
from simulator.session import Session
from simulator.trajectory import read_trajectory

BOUNDARY_CASES = """
    dict(args=(0, 0, 10), returns=0),
    dict(args=(10, 0, 10), returns=10),
    dict(args=(3, 3, 3), returns=3),
]"""


async def test_a_person_edits_a_harness_then_it_is_validated_and_accepted(
    session: Session, calc_repo: Path
) -> None:
    options = HarnessOptions(thresholds=Thresholds(repeats=1))
    [problem] = await make_problems(session, find_targets(calc_repo, selectors=["clamp"]), options)
    assert problem.harness is not None and problem.validation is not None
    assert problem.validation.mutation is not None
    assert problem.validation.mutation["killed"] == 7
    # the tests that called the target travel with the harness: suite parity needs them again
    assert problem.harness.suite_tests == [
        "tests/test_calc.py::test_clamp_inside",
        "tests/test_calc.py::test_clamp_outside",
        "tests/test_calc.py::test_clamp_bad_bounds",
    ]

    # the person adds the boundary cases the recorded tests lacked
    text = problem.harness.text.replace("\n]", BOUNDARY_CASES, 1)
    edit(problem, text, by="ada", reason="boundary values")
    assert problem.curation.state == CurationState.EDITED
    assert problem.validation is not None and problem.validation.stale  # kept until revalidated
    with pytest.raises(ValueError, match="not usable"):
        edit(problem, "def broken(:\n", by="ada")

    validation = await revalidate(session, problem, options)
    # 7 cases and the comparator's self-check
    assert validation.verdict == "valid" and validation.tests == 8 and not validation.stale
    assert problem.curation.state == CurationState.VALID
    # (3, 3, 3) now kills `low > high` -> `>=`; the two others are equivalent mutants
    assert validation.mutation is not None and validation.mutation["killed"] == 8
    # suite parity is computed on revalidation too, not only when the harness is made
    assert validation.mutation["suite"]["parity"] == 1.0

    figures = await remutate(session, problem, HarnessOptions(thresholds=Thresholds(max_mutants=3)))
    assert figures["total"] == 3
    assert figures["suite"]["parity"] is not None  # and on remutation

    with pytest.raises(ValueError, match="reason"):
        reject(problem, by="ada", reason=" ")
    accept(problem, by="ada", note="checked by hand")
    assert [e.state for e in problem.curation.history][-3:] == [
        CurationState.EDITED,
        CurationState.VALID,
        CurationState.ACCEPTED,
    ]
    assert problem.curation.history[-1].by == "ada"

    runs = [
        e.payload["params"]
        for e in read_trajectory(session.trajectory_path).events
        if e.kind == Kind.WORKFLOW_START
    ]
    assert [r.get("action") for r in runs] == [None, "revalidate", "mutate"]
