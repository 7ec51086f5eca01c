"""The layout follows the terminal when it is resized live, by the same rules as at start, and
keeps what the person toggled (issue 18, minor item 14)."""

from __future__ import annotations

from textual.pilot import Pilot

from simulator.session import Session
from tests.ui.helpers import running, wait_for, wired_app
from tests.ui.test_app_shell import run_tests_then_finish
from widgets.agent_pane import AgentPane
from widgets.app import RepoSimApp


def widths(app: RepoSimApp) -> tuple[int, int, int]:
    """(tree, editor column, agent) widths as laid out; 0 for a hidden pane."""
    sidebar = app.query_one("#sidebar")
    agent = app.query_one(AgentPane)
    return (
        sidebar.region.width if sidebar.display else 0,
        app.query_one("#centre").region.width,
        agent.region.width if agent.display else 0,
    )


async def laid_out(pilot: Pilot[None], app: RepoSimApp, width: int) -> None:
    """Wait until the panes share the screen's new width (the layout follows a resize and a
    toggle a refresh later: a fixed pause may look before)."""
    await wait_for(pilot, lambda: app.query_one("#main").region.width == width, "the new size")
    await wait_for(pilot, lambda: sum(widths(app)) == width, "the panes laid out")


async def resize(pilot: Pilot[None], app: RepoSimApp, width: int, height: int) -> None:
    await pilot.resize_terminal(width, height)
    await laid_out(pilot, app, width)


async def test_shrinking_to_80x24_hides_the_agent_and_growing_brings_it_back(
    session: Session,
) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        await laid_out(pilot, app, 160)
        tree, editor, agent = widths(app)
        assert agent >= 40 and tree > 0 and editor >= 80
        await resize(pilot, app, 80, 24)
        tree, editor, agent = widths(app)
        assert agent == 0, "a narrow screen starts without the agent pane"
        assert tree > 0 and editor >= 50, widths(app)
        await resize(pilot, app, 160, 48)
        assert widths(app) == (32, 88, 40)


async def test_a_running_agent_stays_and_the_tree_gives_way_when_shrunk(
    session: Session,
) -> None:
    app = wired_app(session, run_tests_then_finish())
    async with app.run_test(size=(160, 48)) as pilot:
        await laid_out(pilot, app, 160)
        assert all(widths(app))
        await resize(pilot, app, 80, 24)
        tree, editor, agent = widths(app)
        assert tree == 0 and 30 <= agent <= 32 and editor >= 48, widths(app)
        await resize(pilot, app, 160, 48)
        assert widths(app) == (32, 88, 40)
        pane = app.query_one(AgentPane)
        await wait_for(pilot, lambda: not pane.running and pane.agent is not None, "the run")


async def test_the_persons_toggle_survives_resizes_both_ways(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await laid_out(pilot, app, 80)
        assert widths(app)[2] == 0
        await pilot.press("ctrl+j")  # the person wants the agent pane on the narrow screen
        await wait_for(pilot, lambda: widths(app)[2] > 0, "the agent pane shown")
        await laid_out(pilot, app, 80)
        tree, editor, agent = widths(app)
        assert agent > 0 and tree == 0
        await resize(pilot, app, 160, 48)
        assert widths(app) == (32, 88, 40)
        await resize(pilot, app, 80, 24)
        tree, editor, agent = widths(app)
        assert agent > 0, "the toggle is kept"
        assert tree == 0 and editor >= 48, widths(app)
        await pilot.press("ctrl+j")  # and hidden again: it stays hidden when grown
        await resize(pilot, app, 160, 48)
        assert widths(app)[2] == 0


async def test_focusing_visible_panes_is_no_toggle(session: Session) -> None:
    """Alt+1 / Alt+4 on panes already shown keep the layout rules in charge: shrinking then
    hides the agent pane and keeps the tree, as for a person who never pressed them."""
    async with running(session, (160, 48)) as (app, pilot):
        await pilot.press("alt+4", "alt+1")
        await wait_for(pilot, lambda: app.query_one("#sidebar").has_focus_within, "the tree")
        await resize(pilot, app, 80, 24)
        tree, editor, agent = widths(app)
        assert agent == 0 and tree > 0 and editor >= 50, widths(app)


async def test_alt_arrows_resize_the_agent_pane_and_f10_zooms_any_pane(session: Session) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        await wait_for(pilot, lambda: widths(app)[2] == 40, "the agent pane")
        pane = app.query_one(AgentPane)
        task = pane.query_one("#agent-task")
        await pilot.press("alt+4")
        await wait_for(pilot, lambda: task.has_focus, "the task input")
        await pilot.press("alt+left", "alt+left")  # its left edge moves left: wider
        await wait_for(pilot, lambda: widths(app)[2] == 48, "a wider agent pane")
        await pilot.press("alt+right")
        await wait_for(pilot, lambda: widths(app)[2] == 44, "a narrower agent pane")
        await resize(pilot, app, 150, 48)
        assert widths(app)[2] == 44  # the person's width survives a resize
        # F10: the agent pane fills the screen above the status bar, the keyboard stays in it.
        await pilot.press("f10")
        await wait_for(pilot, lambda: pane.region.width == 150, "the zoomed agent pane")
        assert pane.region.height == 47
        assert task.has_focus
        await pilot.press(*"hi")
        assert task.value == "hi"  # type: ignore[attr-defined]
        await pilot.press("f10")
        await wait_for(pilot, lambda: widths(app)[2] == 44, "the layout back")
        # Any pane zooms; moving the keyboard to another pane brings the layout back.
        await pilot.press("alt+1", "f10")
        sidebar = app.query_one("#sidebar")
        await wait_for(pilot, lambda: sidebar.region.width == 150, "the zoomed tree")
        await pilot.press("alt+3")
        await wait_for(pilot, lambda: app.screen.maximized is None, "the zoom restored")
        await wait_for(pilot, lambda: widths(app)[2] == 44, "the layout back")


async def test_f10_zooms_the_agent_pane_at_80x24(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        pane = app.query_one(AgentPane)
        await pilot.press("alt+4")
        await wait_for(pilot, lambda: pane.display and widths(app)[2] > 0, "the agent pane")
        await pilot.press("f10")
        await wait_for(pilot, lambda: pane.region.width == 80, "the zoomed agent pane")
        await pilot.press("f10")
        await wait_for(pilot, lambda: 0 < pane.region.width < 80, "the layout back")
