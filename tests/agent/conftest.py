"""Fixtures for the agent tests: a buggy project, a session on it, the fake model server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from simulator.agent import ModelTurn, ToolCall
from tests.agent.fake_llm import Reply, call
from tests.conftest import WAIT, project_fixtures

if TYPE_CHECKING:
    from textual.pilot import Pilot

BUGGY_PROJECT = {
    "stats/__init__.py": "",
    "stats/core.py": (
        "def total(values):\n    return sum(values)\n\n\n"
        "def mean(values):\n    return total(values) / (len(values) - 1)\n"
    ),
    "tests/test_core.py": (
        "from stats.core import mean, total\n\n\n"
        "def test_total():\n    assert total([1, 2, 3]) == 6\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    ),
}

BUG = "total(values) / (len(values) - 1)"
FIX = "total(values) / len(values)"

FIX_CALL = call("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=FIX)
"""The model's tool call that fixes BUGGY_PROJECT (for the fake OpenAI-compatible server)."""

FIX_REPLIES = [
    Reply("Fix the divisor.", [FIX_CALL]),
    Reply("", [call("run_tests")]),
    Reply("", [call("finish", summary="fixed mean")]),
]
"""The fake model's replies of a run that fixes BUGGY_PROJECT: edit, run the tests, finish."""


buggy_repo, session = project_fixtures(
    BUGGY_PROJECT, repo="buggy_repo", name="buggy", trajectory="run.jsonl"
)


def turn(name: str, thought: str = "", **arguments: object) -> ModelTurn:
    """A scripted model turn: `thought`, then one call of tool `name` with `arguments`."""
    return ModelTurn(
        content=thought,
        tool_calls=(ToolCall(f"c{time.monotonic_ns()}", name, json.dumps(arguments)),),
    )


async def wait_until(
    pilot: Pilot[None], condition: Callable[[], bool], timeout: float = WAIT
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the UI"
        await pilot.pause(0.05)
