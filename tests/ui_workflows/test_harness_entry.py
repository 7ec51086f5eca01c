"""'Generate a harness for the function under the cursor with a model': the model generator
through litellm against the local fake server; the result card says valid, coverage, mutation."""

from __future__ import annotations

from pathlib import Path

from simulator.agent import Mode
from simulator.events import Kind
from simulator.trajectory import read_trajectory
from tests.agent.fake_llm import FakeLLM, Reply
from tests.conftest import SessionOn
from tests.harness.conftest import CLAMP_EQUIVALENCE, fenced
from tests.ui.helpers import notices, wait_for, wait_quiet
from tests.ui_workflows.conftest import (
    cards,
    cursor_in,
    result_card,
    run_entry,
    workflow_app,
)
from widgets.workflow_entries import WorkflowApproval

ENTRY = "Generate a harness for the function under the cursor with a model"

TESTS = fenced(CLAMP_EQUIVALENCE, "Tests for every branch:\n")


async def test_the_model_writes_a_valid_harness_for_the_function_under_the_cursor(
    session_on: SessionOn, shapes_repo: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script = [Reply(TESTS)]
    async with workflow_app(session_on, shapes_repo, fake_llm) as (app, pilot):
        await cursor_in(pilot, app, "shapes/calc.py", "return value")
        run_entry(app, ENTRY)
        card = await result_card(pilot, app, "harness")
        rows = {line.split()[0]: line.split()[1:] for line in card.splitlines() if line.strip()}
        assert rows["valid"] == ["yes"], card
        assert rows["coverage"] == ["100%"], card
        assert rows["mutation"][-1].endswith("%") and rows["mutation"][-1] != "0%", card
        [start] = cards(app, Kind.WORKFLOW_START, "harness")
        assert start.event.payload["params"]["generator"] == "model"
        assert start.event.payload["params"]["targets"] == ["shapes/calc.py::clamp"]
        await wait_for(pilot, lambda: any("Harness for clamp" in n for n in notices(app)), "end")
        assert "valid, coverage 100%" in notices(app)[-1]
        await wait_quiet(pilot, app)
    assert len(fake_llm.requests) == 1
    harness = (await app.session.read_bytes(".reposim/harness/test_shapes_calc_clamp.py")).decode()
    assert "def test_bad_bounds" in harness


async def test_in_confirm_mode_A_approves_the_rest_of_the_workflow(
    session_on: SessionOn, shapes_repo: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script = [Reply(TESTS)]
    async with workflow_app(session_on, shapes_repo, fake_llm, Mode.CONFIRM) as (app, pilot):
        await cursor_in(pilot, app, "shapes/calc.py", "return value")
        run_entry(app, ENTRY)
        await wait_for(
            pilot,
            lambda: app.query(WorkflowApproval) and app.query_one(WorkflowApproval).display,
            "the first question",
        )
        prompt = app.query_one(WorkflowApproval)
        keys = str(prompt.query_one("#approval-keys").render())
        assert "A approve the rest" in keys
        await pilot.press("A")
        card = await result_card(pilot, app, "harness")
        assert "valid" in card and "yes" in card, card
        assert not prompt.display
        await wait_quiet(pilot, app)
    decisions = [
        e.payload["reason"]
        for e in read_trajectory(app.session.trajectory_path).events
        if e.kind == Kind.POLICY_DECISION and e.payload["allowed"] and e.payload["by"] == "human"
    ]
    assert decisions[0] == "approved with the rest of the workflow"
    assert len(decisions) > 5  # every later action recorded, none asked
    assert set(decisions[1:]) == {"the rest of the workflow was approved"}
