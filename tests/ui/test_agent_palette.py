"""The agent's commands are in the command palette (issue 18, VS Code list), and choosing one
brings the agent pane in when a narrow screen had it hidden."""

from __future__ import annotations

from textual.widgets import Input

from simulator.agent import Mode
from simulator.session import Session
from tests.ui.helpers import palette_highlights, running, wait_for
from widgets.agent_pane import AgentPane


async def test_the_palette_sets_the_agents_mode_and_opens_its_task_input(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        pane = app.query_one(AgentPane)
        assert not pane.display  # narrow: the agent pane starts hidden
        titles = [a.title for a in app.palette_actions()]
        for title in ("Agent: new task…", "Agent: interrupt", "Agent: stop the run"):
            assert title in titles
        await pilot.press("f2", *"confirm each action")
        await wait_for(pilot, lambda: palette_highlights(app, "confirm each"), "the palette's hit")
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.config.mode is Mode.CONFIRM, "confirm mode")
        assert pane.display
        app.action_toggle_agent()  # hidden again by the person
        await pilot.pause()
        assert not pane.display
        await pilot.press("f2", *"agent new task")
        await wait_for(pilot, lambda: palette_highlights(app, "new task"), "the palette's hit")
        await pilot.press("enter")
        task = app.query_one("#agent-task", Input)
        await wait_for(pilot, lambda: app.focused is task, "the task input")
        assert pane.display
