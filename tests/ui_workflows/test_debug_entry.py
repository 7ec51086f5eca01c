"""'Debug the failing tests' from the palette: the agent's model (litellm against the local fake
server) fixes the failing test; the result card says fixed, with the diff. In confirm mode every
action waits for a / r, and a rejection stops the workflow with its reason, nothing applied."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simulator.agent import Mode
from simulator.events import Actor, Kind
from simulator.trajectory import read_trajectory
from tests.agent.conftest import BUG, FIX, FIX_CALL
from tests.agent.conftest import BUGGY_PROJECT as BUGGY
from tests.agent.fake_llm import FakeLLM, Reply, Slow, call
from tests.conftest import RepoFactory, SessionOn
from tests.ui.helpers import WAIT, drained, notices, wait_for, wait_quiet
from tests.ui_workflows.conftest import (
    app_with_model,
    card_text,
    cards,
    result_card,
    run_entry,
    workflow_app,
)
from widgets.app import RepoSimApp
from widgets.workflow_entries import WorkflowApproval

ENTRY = "Debug the failing tests"

SCRIPT = [
    Reply(
        "mean divides by len - 1.",
        [FIX_CALL],
    ),
    Reply("", [call("run_tests")]),
    Reply("", [call("finish", summary="mean divides by len(values) now.")]),
]


def asking(app: RepoSimApp, prefix: str) -> bool:
    """A workflow's approval question is shown and starts with `prefix`."""
    prompts = app.query(WorkflowApproval)
    return (
        bool(prompts)
        and bool(prompts.first().display)
        and (prompts.first().description.startswith(prefix))
    )


async def test_debug_fixes_the_failing_test_and_shows_the_diff(
    session_on: SessionOn, buggy_repo: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script = list(SCRIPT)
    async with workflow_app(session_on, buggy_repo, fake_llm) as (app, pilot):
        run_entry(app, ENTRY)
        card = await result_card(pilot, app, "debug", within=4 * WAIT)  # a loaded machine
        assert "FIXED" in card and "1 passed, 1 failed" in card and "2 passed" in card, card
        assert f"-    return {BUG}" in card and f"+    return {FIX}" in card, card
        await wait_for(pilot, lambda: any("Debug: fixed" in n for n in notices(app)), "notice")
        await wait_quiet(pilot, app)  # the app's debounced reload after the test run
    assert FIX in await app.session.read("stats/core.py")
    assert len(fake_llm.requests) == 3


async def test_confirm_mode_asks_for_each_action_and_a_rejection_stops_the_workflow(
    session_on: SessionOn, buggy_repo: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script = list(SCRIPT)
    async with workflow_app(session_on, buggy_repo, fake_llm, Mode.CONFIRM) as (app, pilot):
        run_entry(app, ENTRY)
        await wait_for(pilot, lambda: asking(app, "run tests"), "the question for the test run")
        prompt = app.query_one(WorkflowApproval)
        assert prompt.has_focus
        what = str(prompt.query_one("#approval-what").render())
        assert "The debug workflow wants to: run tests" in what
        await pilot.press("a")
        await wait_for(
            pilot, lambda: asking(app, "edit stats/core.py"), "the question for the edit"
        )
        await pilot.press("r", *"not that way", "enter")
        await wait_for(
            pilot, lambda: cards(app, Kind.WORKFLOW_END, "debug"), "the workflow to stop"
        )
        [end] = cards(app, Kind.WORKFLOW_END, "debug")
        text = card_text(end)
        assert end.event.payload["status"] == "failed" and "not that way" in text, text
        assert not cards(app, Kind.WORKFLOW_RESULT, "debug")
        assert not prompt.display
        await wait_for(pilot, lambda: any("you rejected" in n for n in notices(app)), "notice")
        assert "not that way" in notices(app)[-1]
        await wait_quiet(pilot, app)
    assert BUG in await app.session.read("stats/core.py")  # nothing applied
    assert len(fake_llm.requests) == 1  # the model was not asked to carry on
    decisions = [
        (e.payload["action"], e.payload["allowed"], e.payload["reason"])
        for e in read_trajectory(app.session.trajectory_path).events
        if e.kind == Kind.POLICY_DECISION and e.actor is Actor.HUMAN
    ]
    assert decisions == [("test.run", True, ""), ("file.edit", False, "not that way")]


async def test_stopping_a_running_workflow_ends_it_as_interrupted(
    session_on: SessionOn, buggy_repo: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script = [Slow(60, SCRIPT[0])]  # the model takes its time
    async with workflow_app(session_on, buggy_repo, fake_llm) as (app, pilot):
        run_entry(app, ENTRY)
        await wait_for(pilot, lambda: fake_llm.requests, "the model call")
        run_entry(app, ENTRY)  # one workflow at a time
        await wait_for(
            pilot, lambda: any("still running" in n for n in notices(app)), "the refusal"
        )
        run_entry(app, "Stop the running workflow")
        await wait_for(pilot, lambda: cards(app, Kind.WORKFLOW_END, "debug"), "the workflow to end")
        [end] = cards(app, Kind.WORKFLOW_END, "debug")
        assert end.event.payload["status"] == "interrupted", card_text(end)
        assert "The debug workflow was stopped." in notices(app)
        await wait_for(pilot, lambda: not app.workers, "the worker to end")
        run_entry(app, "Stop the running workflow")
        await wait_for(pilot, lambda: "No workflow is running." in notices(app), "notice")
        await wait_quiet(pilot, app)
    assert BUG in await app.session.read("stats/core.py")


async def test_the_card_shows_the_agents_fix_even_when_it_restores_the_start(
    session_on: SessionOn, make_repo: RepoFactory, fake_llm: FakeLLM
) -> None:
    """Issue 26, major 7: the repository starts correct, the person breaks a file during the
    session, and the agent's fix puts it back as it was at the start. Against the start there
    is no change; the card must show the agent's edit."""
    good = {**BUGGY, "stats/core.py": BUGGY["stats/core.py"].replace(BUG, FIX)}
    session = await session_on(make_repo(good, name="good"))
    broken = "total(values) * len(values)"
    await session.edit("stats/core.py", FIX, broken, actor=Actor.HUMAN)
    fake_llm.script = [
        Reply(
            "mean multiplies.",
            [
                call(
                    "edit", command="str_replace", path="stats/core.py", old_str=broken, new_str=FIX
                )
            ],
        ),
        Reply("", [call("run_tests")]),
        Reply("", [call("finish", summary="mean divides again.")]),
    ]
    app = app_with_model(session, fake_llm)
    async with app.run_test(size=(160, 48)) as pilot:
        run_entry(app, ENTRY)
        card = await result_card(pilot, app, "debug", within=4 * WAIT)  # a loaded machine
        assert "FIXED" in card and "no change" not in card, card
        assert f"-    return {broken}" in card and f"+    return {FIX}" in card, card
        await wait_quiet(pilot, app)  # the app's debounced reload after the test run


async def wait_long(pilot: Any, predicate: Callable[[], object], what: str) -> None:
    """As wait_for, 4x longer: each answer sets off a model call and a command (load 25 here)."""
    deadline = time.monotonic() + 4 * WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


async def answer(pilot: Any, app: RepoSimApp, key: str, reason: str = "") -> None:
    """Press `key` on the workflow's question, and for r type `reason` and Enter, by keys
    alone as a person does. The question shown has the keys once its queued focus has run:
    nothing queued before it may take them (the editor following the agent's edit gave them
    back to the file tree, 1 run in 3 under load; see test_approval_focus.py)."""
    prompt = app.query_one(WorkflowApproval)
    await drained(pilot, app, prompt)
    assert app.focused is prompt, f"the question is shown but {app.focused!r} has the keys"
    await pilot.press(key)
    if key == "r":
        field = prompt.query_one("#approval-reason")
        await wait_long(pilot, lambda: app.focused is field, "the reason's input to have the keys")
        await pilot.press(*reason, "enter")


async def test_a_rejection_undoes_what_the_workflow_changed_before_it(
    session_on: SessionOn, buggy_repo: Path, fake_llm: FakeLLM
) -> None:
    """The person approves the fix, then rejects the next action: the workflow stops and the
    approved fix is undone too (it used to stay in the workspace)."""
    fake_llm.script = [
        Reply(
            "",
            [FIX_CALL],
        ),
        Reply("", [call("edit", command="create", path="stats/extra.py", file_text="X = 1\n")]),
    ]
    async with workflow_app(session_on, buggy_repo, fake_llm, Mode.CONFIRM) as (app, pilot):
        run_entry(app, ENTRY)
        await wait_long(pilot, lambda: asking(app, "run tests"), "the question for the test run")
        await answer(pilot, app, "a")
        await wait_long(
            pilot, lambda: asking(app, "edit stats/core.py"), "the question for the fix"
        )
        await answer(pilot, app, "a")
        await wait_long(
            pilot,
            lambda: asking(app, "") and not asking(app, "edit stats/core.py"),
            "the next question (the test run after the fix, or the next change)",
        )
        assert FIX in await app.session.read("stats/core.py")  # applied once approved
        await answer(pilot, app, "r", "no")
        await wait_long(pilot, lambda: any("you rejected" in n for n in notices(app)), "notice")
        [said] = [n for n in notices(app) if "you rejected" in n]
        assert "undone" in said, said
        await wait_quiet(pilot, app)
    assert BUG in await app.session.read("stats/core.py")  # the approved fix was undone
    kinds = [e.kind for e in read_trajectory(app.session.trajectory_path).events]
    assert Kind.RESTORE in kinds
