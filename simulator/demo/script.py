"""The turns of the bundled demonstration, and how to record its trajectory again.

These turns were written by hand: no model provider was reachable when the demo was made. The
trajectory they produce is real (the tools ran), and says so in its header. Re-record it with
`python -m simulator.demo.script [OUT]` after changing the example project.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from simulator.agent import Agent, ModelTurn, ScriptedClient, ToolCall
from simulator.demo import DEMO_TASK, bundled_trajectory, prepare_workspace, test_command
from simulator.session import Session

SCRIPTED_NOTE = (
    "A scripted demonstration: these model turns were written by hand, not produced by a model "
    "(no provider was reachable when it was recorded). The tool runs and their outputs are real."
)


def _turn(n: int, thought: str, name: str, **arguments: object) -> ModelTurn:
    call = ToolCall(f"demo_{n}", name, json.dumps(arguments))
    return ModelTurn(content=thought, tool_calls=(call,), model="scripted-demo")


DEMO_TURNS = [
    _turn(1, "Let me run the test suite to see what fails.", "run_tests"),
    _turn(
        2,
        "test_bulk_discount_starts_at_ten_items fails: 10 items are charged full price "
        "(2000 instead of 1800). The discount lives in cart/pricing.py; let me read it.",
        "view",
        path="cart/pricing.py",
    ),
    _turn(
        3,
        "The comment says orders of BULK_THRESHOLD *or more* get the discount, but line 14 "
        "tests `quantity > BULK_THRESHOLD`, which leaves out exactly 10. Is the threshold "
        "compared anywhere else?",
        "search",
        pattern="BULK_THRESHOLD",
    ),
    _turn(
        4,
        "Only here. The fix is `>=`; the test is right.",
        "edit",
        command="str_replace",
        path="cart/pricing.py",
        old_str="    if quantity > BULK_THRESHOLD:",
        new_str="    if quantity >= BULK_THRESHOLD:",
    ),
    _turn(5, "Now the whole suite again.", "run_tests"),
    _turn(
        6,
        "All 9 tests pass.",
        "finish",
        summary="The bulk discount left out orders of exactly BULK_THRESHOLD items: "
        "cart/pricing.py compared `quantity > BULK_THRESHOLD`; it now uses `>=`, as its comment "
        "and test_bulk_discount_starts_at_ten_items say. All 9 tests pass.",
    ),
]


async def record(out: Path) -> Path:
    """Run the scripted turns against a fresh copy of the example project, recording to out."""
    with tempfile.TemporaryDirectory(prefix="reposim-demo-record-") as scratch:
        workspace = prepare_workspace(Path(scratch))
        agent_info = {"model": "scripted-demo", "mode": "auto", "scripted": SCRIPTED_NOTE}
        async with await Session.open(
            workspace, trajectory_path=out, agent=agent_info, test_command=test_command()
        ) as session:
            result = await Agent(
                session, ScriptedClient(DEMO_TURNS, model="scripted-demo", follows_script=True)
            ).run(DEMO_TASK)
        if result.reason != "finished":
            raise SystemExit(f"the demonstration did not finish: {result.summary}")
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else bundled_trajectory()
    print(asyncio.run(record(target)))
