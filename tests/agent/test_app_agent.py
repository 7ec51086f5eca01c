"""The agent inside the whole RepoSim UI: confirm mode with Pilot, the editor following."""

from __future__ import annotations

from pathlib import Path

from simulator.agent import Mode, ScriptedClient
from simulator.events import Actor, Kind
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.agent.conftest import BUG, FIX, turn, wait_until
from tests.ui.helpers import confirming, drained, wait_quiet, wired_app
from tests.ui.screen_text import screen_rows
from widgets.agent_pane import AgentPane
from widgets.editor_pane import EditorPane


async def test_confirm_mode_in_the_app_and_the_editor_follows(session: Session) -> None:
    client = ScriptedClient(
        [
            turn("view", path="stats/core.py"),
            turn("bash", command="git checkout -- ."),
            turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=FIX),
            turn("run_tests"),
            turn("finish", summary="Fixed mean."),
        ]
    )
    async with confirming(wired_app, session, client, (160, 50)) as (app, pilot, prompt):
        pane = app.query_one(AgentPane)
        editor = app.query_one(EditorPane)
        await wait_until(pilot, lambda: bool(prompt.display))
        assert prompt.description == "$ git checkout -- ."
        # the editor followed the agent's view
        await wait_until(pilot, lambda: editor.current_path == "stats/core.py")
        assert prompt.has_focus  # and the keyboard stayed on the question
        await pilot.press("r")
        # the reason is typed once its box has the keyboard (an `a` in it must not approve)
        reason = prompt.query_one("#approval-reason")
        await wait_until(pilot, lambda: reason.has_focus)
        await pilot.press(*"no git commands", "enter")
        await wait_until(
            pilot, lambda: bool(prompt.display) and prompt.description.startswith("edit")
        )
        await pilot.press("a")
        await wait_until(
            pilot, lambda: bool(prompt.display) and prompt.description.startswith("run tests")
        )
        await pilot.press("a")
        await wait_until(pilot, lambda: not pane.running)
        # the open editor shows the agent's fix
        shown = editor.query_one("CodeEditor")
        assert FIX in shown.text  # type: ignore[attr-defined]
        # let the app's debounced reload (0.2 s after a test run) fire before it shuts down
        await wait_quiet(pilot, app)
    decisions = [
        (e.payload["action"], e.payload["allowed"], e.payload["reason"])
        for e in read_trajectory(session.trajectory_path).events
        if e.kind == Kind.POLICY_DECISION and e.actor is Actor.HUMAN
    ]
    assert decisions == [
        ("exec", False, "no git commands"),
        ("file.edit", True, ""),
        ("test.run", True, ""),
    ]


async def test_a_pending_approval_is_reachable_by_keyboard_after_focus_left_it(
    session: Session,
) -> None:
    """Issue 26, major 5: once the keyboard left the question (Alt+1, a click elsewhere), Alt+4,
    Tab and the palette bring it back; a letter typed elsewhere never answers it."""
    client = ScriptedClient(
        [
            turn("bash", command="echo hello > note.txt"),
            turn("finish", summary="Done."),
        ]
    )
    asking = confirming(wired_app, session, client, (160, 50), task="Write a note.")
    async with asking as (app, pilot, prompt):
        pane = app.query_one(AgentPane)
        await wait_until(pilot, lambda: bool(prompt.display) and prompt.has_focus)
        await pilot.press("alt+1")  # the tree: an `a` there is the tree's, not an approval
        await wait_until(pilot, lambda: not prompt.has_focus)
        await pilot.press("a")
        await drained(pilot, app, prompt)  # the key is handled (a fixed pause was 0.2 s)
        assert prompt.display and pane.running
        await pilot.press("alt+4")
        await wait_until(pilot, lambda: prompt.has_focus)
        await pilot.press("alt+1", "shift+tab")  # Tab walks to it too
        await wait_until(pilot, lambda: prompt.has_focus)
        await pilot.press("alt+1")
        [entry] = [a for a in app.palette_actions() if "pending approval" in a.title]
        entry.run()
        await wait_until(pilot, lambda: prompt.has_focus)
        await pilot.press("a")
        await wait_until(pilot, lambda: not pane.running)
        # no question left: Alt+4 is the task input, where letters are text, not actions
        await pilot.press("alt+4")
        task = pane.query_one("#agent-task")
        await wait_until(pilot, lambda: task.has_focus)
        await pilot.press(*"gsp")
        assert pane.agent is not None and pane.agent.mode is Mode.CONFIRM  # typed, not run
        assert task.value == "gsp"  # type: ignore[attr-defined]
        await wait_quiet(pilot, app)  # what the run started has finished before the app closes
    assert (Path(session.workspace_path) / "note.txt").read_text() == "hello\n"


async def test_at_80x24_the_confirm_card_shows_the_change_it_asks_about(session: Session) -> None:
    client = ScriptedClient(
        [
            turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=FIX),
            turn("finish", summary="Fixed mean."),
        ]
    )
    async with confirming(wired_app, session, client, (80, 24)) as (app, pilot, prompt):
        await wait_until(pilot, lambda: bool(prompt.display) and prompt.has_focus)
        # The card laid out with the change it asks about (a frame after it is shown).
        await wait_until(pilot, lambda: any("┃ -    return total" in r for r in screen_rows(app)))
        # (never quiet here: the agent's worker waits for this answer)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        region = prompt.region
        rows = [row[region.x : region.right] for row in screen_rows(app)[region.y : region.bottom]]
        shown = "\n".join(rows)
        # The removed and the added line are on screen, with the keys that answer.
        assert any(row.startswith("┃ -    return total(values)") for row in rows), shown
        assert any(row.startswith("┃ +    return total(values)") for row in rows), shown
        assert "a approve" in shown
        await pilot.press("a")
        await wait_until(pilot, lambda: not app.query_one(AgentPane).running)
        await wait_quiet(pilot, app)  # the editor's follow of the edit may still be opening it
