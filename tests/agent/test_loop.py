"""The agent loop with the scripted client on a real repository: tools, budgets, modes,
interrupts, approvals and replay."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from simulator.agent import (
    Agent,
    Budgets,
    Mode,
    ModelTurn,
    ReplayClient,
    ScriptedClient,
    ToolCall,
    truncate,
)
from simulator.agent.models import Message
from simulator.events import Actor, Kind
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.agent.conftest import BUG, FIX


def turn(name: str, thought: str = "", **arguments: object) -> ModelTurn:
    return ModelTurn(
        content=thought,
        tool_calls=(ToolCall(f"c-{name}-{id(arguments)}", name, json.dumps(arguments)),),
    )


FIX_SCRIPT = [
    turn("run_tests", "Let me see what fails."),
    turn("view", "mean divides by the wrong count.", path="stats/core.py"),
    turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=FIX),
    turn("run_tests"),
    turn("finish", summary="mean divided by len - 1; it now divides by len."),
]


async def reach_state(agent: Agent, state: str) -> None:
    reached = asyncio.Event()
    agent.listeners.append(lambda a: reached.set() if a.state == state else None)
    if agent.state != state:
        await asyncio.wait_for(reached.wait(), 60)


async def see_kind(session: Session, kind: str) -> None:
    seen = asyncio.Event()
    session.subscribe(lambda e: seen.set() if e.kind == kind else None)
    await asyncio.wait_for(seen.wait(), 60)


async def test_scripted_agent_fixes_the_bug_through_the_session(session: Session) -> None:
    agent = Agent(session, ScriptedClient(FIX_SCRIPT))
    result = await agent.run("Make the tests pass.")
    assert result.reason == "finished"
    assert "len" in result.summary
    assert FIX in (await session.read_bytes("stats/core.py")).decode()
    events = read_trajectory(session.trajectory_path).events
    tests = [e for e in events if e.kind == Kind.TEST_RESULT]
    assert [t.payload["counts"]["failed"] for t in tests] == [1, 0]
    assert all(t.actor is Actor.AGENT for t in tests)
    edit = next(e for e in events if e.kind == Kind.FILE_EDIT)
    assert (
        edit.actor is Actor.AGENT
        and "+    return total(values) / len(values)" in edit.payload["diff"]
    )
    assert sum(e.kind == Kind.LLM_CALL for e in events) == 5
    assert sum(e.kind == Kind.TOOL_RESULT for e in events) == 5
    # every observation answers its call
    calls = {e.seq for e in events if e.kind == Kind.TOOL_CALL}
    assert {e.cause for e in events if e.kind == Kind.TOOL_RESULT} == calls
    assert events[-1].kind == Kind.AGENT_FINISH
    assert events[-1].payload["cost"] is None  # a scripted model has no price: unknown, not 0


async def test_view_numbers_lines_and_edit_insert_and_undo(session: Session) -> None:
    client = ScriptedClient(
        [
            turn("view", path="stats/core.py", start_line=5, end_line=6),
            turn("edit", command="insert", path="stats/core.py", insert_line=0, text="# stats"),
            turn("edit", command="undo", path="stats/core.py"),
            turn("create", path="NOTES.md", content="hello\n"),
            turn("edit", command="undo", path="NOTES.md"),
            turn("search", pattern="def mean"),
            turn("finish", summary="looked around"),
        ]
    )
    agent = Agent(session, client)
    await agent.run("look")
    tool_messages = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert (
        tool_messages[0] == "5  def mean(values):\n6      return total(values) / (len(values) - 1)"
    )
    assert "+# stats" in tool_messages[1]
    assert (await session.read("stats/core.py")).startswith("def total")
    assert not await session.exists("NOTES.md")
    assert "stats/core.py:5: def mean(values):" in tool_messages[5]


async def test_malformed_tool_calls_get_a_format_error_and_are_counted(session: Session) -> None:
    client = ScriptedClient(
        [
            ModelTurn(tool_calls=(ToolCall("a", "view", '{"path": "stats/core.py"'),)),
            ModelTurn(tool_calls=(ToolCall("b", "teleport", "{}"),)),
            ModelTurn(tool_calls=(ToolCall("c", "view", "{}"),)),
            ModelTurn(content="I think I am done."),
            turn("finish", summary="done"),
        ]
    )
    agent = Agent(session, client)
    result = await agent.run("look")
    assert result.usage.format_errors == 4
    answers = [m["content"] for m in agent.messages if m["role"] in ("tool", "user")]
    assert "not valid JSON" in answers[1]
    assert "There is no tool named 'teleport'" in answers[2]
    assert "view needs the argument(s) path" in answers[3]
    assert "called no tool" in answers[4]
    results = [
        e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.TOOL_RESULT
    ]
    assert [bool(e.payload.get("format_error")) for e in results] == [True, True, True, False]


def test_truncate_keeps_head_and_tail_and_counts_what_it_left_out() -> None:
    text = "".join(f"line {n}\n" for n in range(5000))
    short, elided = truncate(text, 1000)
    assert short.startswith("line 0\n") and short.endswith("line 4999\n")
    assert f"[... {elided} characters elided ...]" in short
    assert elided == len(text) - 1000
    assert truncate("small", 1000) == ("small", 0)


async def test_budgets_stop_the_run(session: Session) -> None:
    looping = [turn("bash", command="echo again") for _ in range(10)]
    agent = Agent(session, ScriptedClient(looping), budgets=Budgets(max_steps=3))
    result = await agent.run("loop")
    assert result.reason == "budget:steps"
    assert result.usage.steps == 3
    tokens = ModelTurn(
        tool_calls=(ToolCall("t", "bash", '{"command": "true"}'),),
        usage=__import__("simulator.agent.models", fromlist=["Usage"]).Usage(10, 5, 15),
    )
    agent = Agent(session, ScriptedClient([tokens] * 10), budgets=Budgets(max_tokens=40))
    result = await agent.run("loop")
    assert result.reason == "budget:tokens" and result.usage.tokens == 45
    slow = ScriptedClient(looping, delay=5.0)
    agent = Agent(session, slow, budgets=Budgets(max_time=0.3))
    result = await agent.run("slow")
    assert result.reason == "budget:time"
    finish = read_trajectory(session.trajectory_path).events[-1]
    assert finish.kind == Kind.AGENT_FINISH and finish.payload["reason"] == "budget:time"


async def test_confirm_mode_asks_and_a_rejection_reason_reaches_the_model(session: Session) -> None:
    client = ScriptedClient(
        [
            turn("view", path="stats/core.py"),  # a read: no question asked
            turn("bash", command="rm -rf stats"),
            turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=FIX),
            turn("finish", summary="fixed"),
        ]
    )
    agent = Agent(session, client, mode=Mode.CONFIRM)
    asked: list[str] = []

    def answer(a: Agent) -> None:
        if a.state == "approval" and a.pending is not None:
            asked.append(a.pending.description)
            if a.pending.kind == Kind.EXEC:
                a.reject("do not delete the package")
            else:
                a.approve()

    agent.listeners.append(answer)
    result = await agent.run("fix it")
    assert result.reason == "finished"
    assert asked == ["$ rm -rf stats", "edit stats/core.py (+1 -1)"]
    assert await session.exists("stats/core.py")
    assert FIX in await session.read("stats/core.py")
    rejected = next(
        m for m in client.calls[2] if m["role"] == "tool" and "rejected" in m["content"]
    )
    assert "do not delete the package" in rejected["content"]
    decisions = [
        e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.POLICY_DECISION
    ]
    assert [(d.payload["allowed"], d.actor) for d in decisions] == [
        (False, Actor.HUMAN),
        (True, Actor.HUMAN),
    ]


async def test_interrupt_during_a_model_call_pauses_and_resume_continues(session: Session) -> None:
    started = asyncio.Event()

    async def slow_turn(messages: Sequence[Message]) -> ModelTurn:
        started.set()
        await asyncio.sleep(60)
        return turn("finish", summary="never")

    client = ScriptedClient([slow_turn, turn("finish", summary="after the pause")])
    agent = Agent(session, client)
    run = asyncio.create_task(agent.run("go"))
    await started.wait()
    await agent.interrupt()
    await reach_state(agent, "paused")
    assert agent.mode is Mode.HUMAN
    # the person acts while the agent is paused; the model is told on resume
    await session.write("stats/core.py", "def mean(values):\n    return 0\n")
    agent.set_mode(Mode.AUTO)
    result = await run
    assert result.summary == "after the pause"
    told = client.calls[-1][-1]
    assert told["role"] == "user" and "write stats/core.py" in told["content"]
    events = read_trajectory(session.trajectory_path).events
    interrupt = next(e for e in events if e.kind == Kind.INTERRUPT)
    assert interrupt.payload["during"] == "model call"
    assert events[interrupt.cause - 1].kind == Kind.LLM_CALL  # type: ignore[operator]


async def test_interrupt_during_a_command_stops_it(session: Session) -> None:
    client = ScriptedClient(
        [turn("bash", command="sleep 30; echo done"), turn("finish", summary="stopped")]
    )
    agent = Agent(session, client)
    saw_exec = asyncio.create_task(see_kind(session, Kind.EXEC))
    run = asyncio.create_task(agent.run("wait"))
    await saw_exec
    await agent.interrupt()
    await reach_state(agent, "paused")
    result_event = next(
        e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.EXEC_RESULT
    )
    assert result_event.payload["interrupted"] is True
    observation = next(m for m in agent.messages if m["role"] == "tool")
    assert "interrupted by the person" in observation["content"]
    assert "exit code 0" not in observation["content"]
    agent.stop()
    result = await run
    assert result.reason == "stopped"


async def test_a_new_task_after_finish_continues_the_conversation(session: Session) -> None:
    client = ScriptedClient(
        [*FIX_SCRIPT, turn("bash", command="git status --short"), turn("finish", summary="two")]
    )
    agent = Agent(session, client)
    assert (await agent.run("fix")).reason == "finished"
    second = await agent.run("show what changed")
    assert second.summary == "two"
    assert client.calls[-1][0]["role"] == "system"
    assert any(m.get("content") == "show what changed" for m in client.calls[-1])
    finishes = [
        e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.AGENT_FINISH
    ]
    assert len(finishes) == 2


async def test_replay_client_replays_recorded_turns_and_the_tools_run_again(
    session: Session, buggy_repo: Path, tmp_path: Path
) -> None:
    await Agent(session, ScriptedClient(FIX_SCRIPT)).run("fix")
    replay = ReplayClient(session.trajectory_path)
    async with await Session.open(buggy_repo, trajectory_path=tmp_path / "again.jsonl") as again:
        assert BUG in await again.read("stats/core.py")
        result = await Agent(again, replay).run("fix")
        assert result.reason == "finished"
        assert FIX in await again.read("stats/core.py")
    events = read_trajectory(tmp_path / "again.jsonl").events
    assert [e.payload["counts"]["passed"] for e in events if e.kind == Kind.TEST_RESULT] == [1, 2]


async def test_a_task_given_in_mode_human_waits_for_the_person(session: Session) -> None:
    client = ScriptedClient([turn("finish", summary="went on")])
    agent = Agent(session, client, mode=Mode.HUMAN)
    run = asyncio.create_task(agent.run("wait for me"))
    await reach_state(agent, "paused")
    assert client.calls == []  # no model call while the person has the keyboard
    await session.exec("echo mine", actor=Actor.HUMAN)
    agent.set_mode(Mode.AUTO)
    result = await run
    assert result.summary == "went on"
    assert "$ echo mine" in client.calls[0][-1]["content"]
    assert result.usage.paused > 0


async def test_long_output_is_cut_for_the_model_but_kept_in_the_trajectory(
    session: Session,
) -> None:
    ambiguous = {"path": "stats/core.py", "old_str": "values", "new_str": "x"}
    client = ScriptedClient(
        [
            turn("bash", command="seq 1 40000"),
            turn("edit", command="str_replace", **ambiguous),
            turn("finish", summary="done"),
        ]
    )
    agent = Agent(session, client)
    await agent.run("count")
    seen = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert seen[0].startswith("1\n2\n3\n") and "40000\n[exit code 0]" in seen[0]
    assert "characters elided ...]" in seen[0] and len(seen[0]) < 13_000
    assert "occurs 5 times in stats/core.py" in seen[1]  # an error the model can act on
    events = read_trajectory(session.trajectory_path).events
    result = next(e for e in events if e.kind == Kind.TOOL_RESULT)
    assert result.payload["elided"] > 200_000
    full = next(e for e in events if e.kind == Kind.EXEC_RESULT)
    whole = read_trajectory(session.trajectory_path).load_blob(full, "output")
    assert whole.splitlines()[-1] == "40000"
    edit_result = [e for e in events if e.kind == Kind.TOOL_RESULT][1]
    assert edit_result.payload["ok"] is False and not edit_result.payload.get("format_error")
