"""Tab and Shift+Tab move the keyboard pane to pane — tree, editor, bottom panel, agent — and skip
hidden panes; hiding the terminal leaves the keyboard somewhere useful (issue 18, item 3 / 15)."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widget import Widget

from simulator.session import Session
from tests.ui.helpers import running, wait_for
from widgets.app import RepoSimApp
from widgets.code_editor import CodeEditor
from widgets.editor_pane import EditorPane
from widgets.file_tree import FileTree
from widgets.terminal_pane import TerminalPane


async def press_and_see(pilot: Pilot[None], app: RepoSimApp, key: str) -> Widget | None:
    await pilot.press(key)
    await pilot.pause()  # the key's messages handled (focus moves while they are)
    return app.focused


async def focus_walk(pilot: Pilot[None], app: RepoSimApp, *keys: str) -> list[Widget | None]:
    """Where the keyboard is after each of `keys`, pressed one after another."""
    return [await press_and_see(pilot, app, key) for key in keys]


async def test_hiding_the_terminal_leaves_the_keyboard_in_a_pane_and_tab_skips_it(
    session: Session,
) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        await pilot.press("ctrl+grave_accent")
        await wait_for(pilot, lambda: app.focused is app.query_one(TerminalPane), "terminal")
        await pilot.press("ctrl+grave_accent")  # hidden again; no file is open
        await wait_for(pilot, lambda: not app.query_one("#panel").display, "the panel hidden")
        tree, agent = app.query_one(FileTree), app.query_one("#agent-task")
        assert app.focused is tree
        assert await focus_walk(pilot, app, "tab", "tab", "shift+tab") == [agent, tree, agent]


async def test_tab_walks_the_visible_panes_in_order_both_ways(session: Session) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        editor = app.query_one(EditorPane)
        await editor.open_file("calc/ops.py")
        await pilot.press("alt+3", "alt+3")  # the panel's Tests tab
        tests = app.query_one("#tests-list")
        await wait_for(pilot, lambda: app.focused is tests, "the tests list")
        tree, agent = app.query_one(FileTree), app.query_one("#agent-task")
        assert await focus_walk(pilot, app, "tab", "tab") == [agent, tree]
        area = await press_and_see(pilot, app, "tab")
        assert isinstance(area, CodeEditor), "the editor's text, not its tab bar"
        before = area.text
        assert await press_and_see(pilot, app, "tab") is area, "Tab in the editor indents"
        assert area.text != before
        walk = await focus_walk(pilot, app, "shift+tab", "shift+tab", "shift+tab")
        assert walk == [tree, agent, tests]


async def test_tab_skips_the_agent_pane_hidden_on_a_narrow_screen(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await pilot.press("alt+3", "alt+3")
        tests = app.query_one("#tests-list")
        await wait_for(pilot, lambda: app.focused is tests, "the tests list")
        assert await press_and_see(pilot, app, "tab") is app.query_one(FileTree)
        assert await press_and_see(pilot, app, "shift+tab") is tests
