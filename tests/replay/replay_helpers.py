"""Shared by the replay tests: sample files and recording real sessions (a uniquely named module,
since `conftest` is a name every test folder uses)."""

from __future__ import annotations

import json
from pathlib import Path

from backends.base import Backend
from simulator.agent import Agent, ScriptedClient
from simulator.agent.models import ModelTurn, ToolCall
from simulator.events import Actor
from simulator.session import Session

DATA = Path(__file__).parent / "data"
SAMPLES = sorted(p for p in DATA.iterdir() if p.suffix in (".traj", ".json"))

SMALL_PROJECT = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a + b\n",
    "tests/test_ops.py": (
        "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    ),
}


async def record_session(
    repo: Path, out: Path, *, with_tests: bool = False, backend: Backend | None = None
) -> Path:
    """A session with human and agent actions of every kind that replay re-executes."""
    session = await Session.open(repo, trajectory_path=out, backend=backend)
    async with session:
        await session.exec("echo hello from $0; pwd; sleep 0.05", actor=Actor.AGENT)
        await session.edit("calc/ops.py", "a + b", "b + a", actor=Actor.AGENT)
        await session.create("notes.txt", "first\n")
        await session.checkpoint("mid")
        await session.write("notes.txt", "second\n")
        await session.restore("mid")
        await session.exec("cd calc && export MARK=forty-two && ls", actor=Actor.AGENT)
        await session.exec("python3 -c 'import os; print(object(), \"pid\", os.getpid())'")
        if with_tests:
            await session.run_tests("tests", actor=Actor.AGENT)
        await session.search("add", actor=Actor.AGENT)
        await session.read("notes.txt", actor=Actor.AGENT)
        await session.exec("echo $MARK; pwd", actor=Actor.AGENT)
        await session.rename("notes.txt", "kept.txt")
        await session.create("scratch.txt", "x\n")
        await session.delete("scratch.txt")
    return out


def _turn(name: str, thought: str = "", **arguments: object) -> ModelTurn:
    return ModelTurn(
        content=thought,
        tool_calls=(ToolCall(f"call-{name}-{len(arguments)}", name, json.dumps(arguments)),),
    )


async def record_agent_and_human(repo: Path, out: Path) -> Path:
    """A scripted agent (bash, view, edit, finish) and a person working in one session."""
    script = [
        _turn("bash", "Look around first.", command="ls calc && cat calc/ops.py"),
        _turn("view", "Read the module.", path="calc/ops.py"),
        _turn(
            "edit",
            "Document add.",
            command="str_replace",
            path="calc/ops.py",
            old_str="def add(a, b):\n",
            new_str='def add(a, b):\n    """Sum."""\n',
        ),
        _turn("finish", summary="add is documented."),
    ]
    session = await Session.open(repo, trajectory_path=out)
    async with session:
        await session.create("TODO.txt", "document add\n")
        result = await Agent(session, ScriptedClient(script)).run("Document calc.add.")
        assert result.reason == "finished", result
        await session.exec("grep -n Sum calc/ops.py")
        await session.delete("TODO.txt")
    return out
