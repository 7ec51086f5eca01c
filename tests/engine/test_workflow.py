"""A workflow run records its start, stages, result and end in the session's trajectory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from simulator.agent.models import ModelTurn, ScriptedClient, ToolCall
from simulator.codegen.debug import debug
from simulator.events import Actor, Kind
from simulator.session import Decision, Session
from simulator.trajectory import read_trajectory
from simulator.workflow import (
    ActionRejected,
    ActionRequest,
    RunStatus,
    StepStatus,
    WorkflowEnd,
    WorkflowFailure,
    WorkflowRun,
    WorkflowStart,
    WorkflowStep,
    approval_gate,
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


# -- confirm mode: the approval gate ------------------------------------------------------------


async def test_a_gate_is_asked_before_each_action_and_a_rejection_stops_the_run(
    sample_repo: Path, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    asked: list[ActionRequest] = []

    async def gate(request: ActionRequest) -> Decision:
        asked.append(request)
        if request.kind == Kind.FILE_WRITE and request.payload["path"] == "calc/ops.py":
            return Decision(False, "do not touch the library", by="human")
        return Decision(True, by="human")

    async with await Session.open(sample_repo, trajectory_path=path) as session:
        original = await session.read("calc/ops.py")
        with (
            approval_gate(gate),
            pytest.raises(ActionRejected) as raised,
            WorkflowRun(session, "codegen") as run,
        ):
            await session.exec("echo first", actor=Actor.SYSTEM)
            await session.write("notes.txt", "kept\n", actor=Actor.SYSTEM)
            await session.write("calc/ops.py", "broken = True\n", actor=Actor.AGENT)
            await session.exec("echo never", actor=Actor.SYSTEM)
        # outside the block nothing asks, and the policy the session had is back
        await session.write("after.txt", "free\n")
        assert session.policy is None
        assert await session.read("calc/ops.py") == original
        assert await session.read("notes.txt") == "kept\n"
    assert [(r.kind, r.workflow, r.run) for r in asked] == [
        (Kind.EXEC, "codegen", run.id),
        (Kind.FILE_WRITE, "codegen", run.id),
        (Kind.FILE_WRITE, "codegen", run.id),
    ]
    assert asked[2].diff and "+broken = True" in asked[2].diff
    assert raised.value.reason == "do not touch the library"
    events = read_trajectory(path).events
    decisions = [e.payload for e in events if e.kind == Kind.POLICY_DECISION]
    assert [(d["action"], d["allowed"], d["by"]) for d in decisions] == [
        ("exec", True, "human"),
        ("file.write", True, "human"),
        ("file.write", False, "human"),
    ]
    assert decisions[-1]["target"] == "calc/ops.py"
    assert decisions[-1]["reason"] == "do not touch the library"
    commands = [e.payload["command"] for e in events if e.kind == Kind.EXEC]
    assert "echo never" not in commands
    end = WorkflowEnd.from_dict(next(e for e in events if e.kind == Kind.WORKFLOW_END).payload)
    assert end.status is RunStatus.FAILED
    assert end.error is not None and "do not touch the library" in end.error


async def test_the_gate_reaches_an_agent_inside_a_workflow_and_its_rejection_is_not_swallowed(
    sample_repo: Path, tmp_path: Path
) -> None:
    """The debug workflow's agent would tell the model about a refused action and carry on;
    a rejection in a gated workflow ends the workflow instead."""
    edit = ModelTurn(
        "Fix the divisor.",
        (
            ToolCall(
                "c1",
                "edit",
                json.dumps(
                    {
                        "command": "str_replace",
                        "path": "calc/ops.py",
                        "old_str": "(len(values) - 1)",
                        "new_str": "len(values)",
                    }
                ),
            ),
        ),
    )
    client = ScriptedClient([edit, ModelTurn("done", (ToolCall("c2", "finish", "{}"),))])
    kinds: list[Kind] = []

    async def gate(request: ActionRequest) -> Decision:
        kinds.append(request.kind)
        if request.actor is Actor.AGENT:
            return Decision(False, "wrong fix", by="human")
        return Decision(True, by="human")

    path = tmp_path / "t.jsonl"
    async with await Session.open(sample_repo, trajectory_path=path) as session:
        with approval_gate(gate), pytest.raises(ActionRejected, match="wrong fix"):
            await debug(session, client, "tests/test_ops.py::test_mean")
        assert "(len(values) - 1)" in await session.read("calc/ops.py")
    assert kinds == [Kind.TEST_RUN, Kind.FILE_EDIT]  # the tests ran (approved), the edit did not
    assert client.remaining == 1  # the agent was not asked again after the rejection
    events = read_trajectory(path).events
    end = WorkflowEnd.from_dict(next(e for e in events if e.kind == Kind.WORKFLOW_END).payload)
    assert end.workflow == "debug" and end.status is RunStatus.FAILED
    assert end.error is not None and "wrong fix" in end.error


async def test_without_a_gate_nothing_waits(sample_repo: Path, tmp_path: Path) -> None:
    async with await Session.open(sample_repo, trajectory_path=tmp_path / "t.jsonl") as session:
        with approval_gate(None), WorkflowRun(session, "codegen"):
            assert session.policy is None
            await session.write("notes.txt", "x\n", actor=Actor.SYSTEM)


async def test_a_write_of_the_bytes_already_there_is_not_asked(
    sample_repo: Path, tmp_path: Path
) -> None:
    asked: list[str] = []

    async def gate(request: ActionRequest) -> Decision:
        asked.append(request.description)
        return Decision(True, by="human")

    async with await Session.open(sample_repo, trajectory_path=tmp_path / "t.jsonl") as session:
        text = await session.read("calc/ops.py")
        with approval_gate(gate), WorkflowRun(session, "harness"):
            await session.write("calc/ops.py", text, actor=Actor.SYSTEM)  # a snapshot in place
            await session.write("calc/ops.py", text + "# more\n", actor=Actor.SYSTEM)
    assert asked == ["write calc/ops.py (+1 -0)"]
