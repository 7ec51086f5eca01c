"""A workflow run records its start, stages, result and end in the session's trajectory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from simulator.events import Kind
from simulator.session import Session
from simulator.trajectory import read_trajectory
from simulator.workflow import (
    RunStatus,
    StepStatus,
    WorkflowEnd,
    WorkflowFailure,
    WorkflowRun,
    WorkflowStart,
    WorkflowStep,
)


async def test_a_run_records_its_structure_around_the_work_it_does(
    sample_repo: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    async with await Session.open(sample_repo, trajectory_path=path) as session:
        with WorkflowRun(session, "setup", params={"repo": "calc"}) as run:
            with run.stage("probe") as detail:
                result = await session.exec("echo probing")
                detail["exit_code"] = result.exit_code
            run.result(verdict="ready", tests=3)
    events = read_trajectory(path).events
    kinds = [e.kind for e in events]
    start = kinds.index(Kind.WORKFLOW_START)
    assert kinds[start:].count(Kind.EXEC) == 1  # the work itself is recorded between
    assert kinds.index(Kind.EXEC) > start
    first = WorkflowStart.from_dict(events[start].payload)
    assert (first.workflow, first.params) == ("setup", {"repo": "calc"})
    steps = [WorkflowStep.from_dict(e.payload) for e in events if e.kind == Kind.WORKFLOW_STEP]
    assert [(s.step, s.status) for s in steps] == [
        ("probe", StepStatus.RUNNING),
        ("probe", StepStatus.OK),
    ]
    assert steps[1].detail == {"exit_code": 0} and steps[1].seconds is not None
    results = [e for e in events if e.kind == Kind.WORKFLOW_RESULT]
    assert results[0].payload["result"] == {"verdict": "ready", "tests": 3}
    end = WorkflowEnd.from_dict(next(e for e in events if e.kind == Kind.WORKFLOW_END).payload)
    assert end.status is RunStatus.OK and end.run == first.run
    assert all(
        e.cause == events[start].seq
        for e in events
        if e.kind.startswith("workflow.") and e.kind != Kind.WORKFLOW_START
    )


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (WorkflowFailure("no test command found"), RunStatus.FAILED),
        (ValueError("bad"), RunStatus.ERROR),
        (asyncio.CancelledError(), RunStatus.INTERRUPTED),
    ],
)
async def test_how_a_run_ends_is_recorded_and_the_error_still_raised(
    sample_repo: Path, tmp_path: Path, error: BaseException, status: RunStatus
) -> None:
    path = tmp_path / "t.jsonl"
    async with await Session.open(sample_repo, trajectory_path=path) as session:
        with (
            pytest.raises(type(error)),
            WorkflowRun(session, "harness") as run,
            run.stage("trace"),
        ):
            raise error
    events = read_trajectory(path).events
    steps = [WorkflowStep.from_dict(e.payload) for e in events if e.kind == Kind.WORKFLOW_STEP]
    assert steps[-1].status is StepStatus.FAILED and "error" in steps[-1].detail
    end = WorkflowEnd.from_dict(next(e for e in events if e.kind == Kind.WORKFLOW_END).payload)
    assert end.status is status
    if status is RunStatus.FAILED:
        assert end.error == "no test command found"
