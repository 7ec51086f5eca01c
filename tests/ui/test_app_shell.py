"""The app shell around a run that starts by itself (the demo): the agent pane is visible at any
width, the status bar follows test runs whoever starts them, and the app shuts down cleanly while
its debounced refreshes are still pending."""

from __future__ import annotations

import json

from simulator.agent import AgentConfig, Mode, ModelTurn, ScriptedClient, ToolCall
from simulator.events import Actor
from simulator.session import Session
from tests.ui.helpers import running, wait_for, wired_app
from widgets.agent_pane import AgentPane
from widgets.app import RepoSimApp
from widgets.status_bar import StatusBar
from widgets.terminal_pane import TerminalPane
from widgets.tests_panel import TestsPanel


def turn(n: int, name: str, **arguments: object) -> ModelTurn:
    return ModelTurn(tool_calls=(ToolCall(f"c{n}", name, json.dumps(arguments)),))


def run_tests_then_finish() -> AgentConfig:
    client = ScriptedClient([turn(1, "run_tests"), turn(2, "finish", summary="done")])
    return AgentConfig(client=client, mode=Mode.AUTO, task="run the tests")


async def test_a_run_that_starts_by_itself_shows_the_agent_pane_at_80x24(
    session: Session,
) -> None:
    app = wired_app(session, run_tests_then_finish())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        agent = app.query_one(AgentPane)
        assert agent.display
        assert agent.region.width >= 30
        # the file tree gives way to it; the editor keeps the larger share
        assert not app.query_one("#sidebar").display
        assert app.query_one("#centre").region.width >= 40
        await wait_for(pilot, lambda: not agent.running and agent.agent is not None, "the run")


async def test_without_a_task_the_agent_pane_starts_hidden_when_narrow(
    session: Session,
) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await pilot.pause()
        assert not app.query_one(AgentPane).display
        assert app.query_one("#sidebar").display
        app.action_toggle_agent()  # Ctrl+J: the agent comes in, the tree gives way
        await pilot.pause()
        assert app.query_one(AgentPane).display
        assert not app.query_one("#sidebar").display
        app.action_toggle_agent()
        await pilot.pause()
        assert app.query_one("#sidebar").display


async def test_a_run_at_160x48_keeps_tree_editor_and_agent(session: Session) -> None:
    app = wired_app(session, run_tests_then_finish())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.query_one(AgentPane).display
        assert app.query_one("#sidebar").display


async def test_status_bar_follows_a_test_run_started_through_the_session(
    session: Session,
) -> None:
    async with running(session) as (app, pilot):
        status = app.query_one(StatusBar)
        run = await session.run_tests(actor=Actor.AGENT)
        await wait_for(pilot, lambda: "running" not in status.activity, "the status after the run")
        assert status.activity.startswith("tests:")
        assert run.summary() in status.activity


async def test_a_harness_run_is_not_shown_as_the_repositorys_tests(session: Session) -> None:
    """Issue 26 minor: after a workflow ran its harness under .reposim/, the status bar said
    `tests: 1 passed` and the Tests panel showed the harness as the repository's last run."""
    async with running(session) as (app, pilot):
        status = app.query_one(StatusBar)
        panel = app.query_one(TestsPanel)
        ours = await session.run_tests(actor=Actor.HUMAN)
        await wait_for(pilot, lambda: panel.result is not None, "the repository's run")
        await session.write(
            ".reposim/harness/test_h.py", "def test_h():\n    pass\n", actor=Actor.SYSTEM
        )
        harness = await session.run_tests(".reposim/harness/test_h.py", actor=Actor.SYSTEM)
        assert harness.summary() != ours.summary()
        await wait_for(pilot, lambda: status.activity.startswith("harness:"), "the harness run")
        assert harness.summary() in status.activity
        assert panel.result is not None and panel.result.summary() == ours.summary()


async def test_debounced_callbacks_are_harmless_once_the_app_has_shut_down(
    session: Session,
) -> None:
    """A debounce timer may fire while the screens are being torn down (the panes are gone,
    the app's queue still runs): each callback must then do nothing instead of failing."""
    async with running(session) as (app, pilot):
        await wait_for(pilot, lambda: app.query_one(StatusBar).changed is not None, "mount")
        await session.exec("true", actor=Actor.AGENT)
        await wait_for(pilot, lambda: "reload-open" in app._debounce_timers, "the reload timer")
    app._reload_open_files()
    app.refresh_changes()
    app._watch_terminal()
    app._workspace_changed()


async def test_the_terminal_starts_at_its_laid_out_width(session: Session) -> None:
    """The shell starts once the pane has its size: its first prompt is one line, not wrapped
    at the 10 columns a pane has before the first layout."""
    async with running(session) as (app, pilot):
        terminal = app.query_one(TerminalPane)
        await wait_for(pilot, lambda: "#" in "".join(terminal.screen_text()), "the prompt")
        assert terminal.term.cols > 30
        prompt = next(line for line in terminal.screen_text() if line.strip())
        assert prompt.rstrip().endswith("#"), terminal.screen_text()[:4]


async def test_the_palette_offers_the_editors_code_navigation(session: Session) -> None:
    app = RepoSimApp(session)
    async with app.run_test(size=(120, 40)):
        names = [action.title for action in app.palette_actions()]
    assert "Go to definition" in names
    assert "Go to symbol in file (outline)" in names
