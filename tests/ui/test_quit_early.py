"""Ctrl+Q while the app is still putting its panes up (issue 29 mounts the bottom panel and the
agent pane just after the first frame). Driven in tmux, Ctrl+Q ~0.2 s after the tree showed
printed `ValueError: No Tab with id '--content-tab-panel-terminal'` or `MountError: Can't mount
widget(s) before Horizontal(id='main') is mounted` over the terminal, and the session recorded
an unexpected exception: Textual's `App.exit()` makes every later mount in the app fail or mount
nothing, and the rest of the late mount ran after it."""

from __future__ import annotations

import asyncio

from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from simulator.session import Session
from widgets.agent_pane import AgentPane
from widgets.app import RepoSimApp

WAIT = 180.0  # an upper bound on a loaded machine (the suite's), never a timing assertion


class QuitsMidMount(RepoSimApp):
    """Ctrl+Q is pressed once the panel's panes have begun to mount; the agent pane has not.
    Textual's shutdown is held until the late mount has ended (a busy machine, where the
    rest of the mount outruns the shutdown), so what the quit did to the mount shows."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.quit_pressed = asyncio.Event()
        self.late_mount_ended = asyncio.Event()

    async def action_quit(self) -> None:
        await super().action_quit()
        self.quit_pressed.set()

    async def _mount_late_panes(self) -> None:
        try:
            await super()._mount_late_panes()
        finally:
            self.late_mount_ended.set()

    async def _on_exit_app(self) -> None:
        await asyncio.wait_for(self.late_mount_ended.wait(), WAIT)
        await super()._on_exit_app()

    def _late_panes(self) -> tuple[TabbedContent, AgentPane]:
        panel, agent = super()._late_panes()
        app = self

        class PressesCtrlQ(Widget):
            async def on_mount(self) -> None:
                app.simulate_key("ctrl+q")
                await asyncio.wait_for(app.quit_pressed.wait(), WAIT)

        panel.compose_add_child(TabPane("Probe", PressesCtrlQ(), id="panel-probe"))
        return panel, agent


async def test_ctrl_q_while_the_late_panes_mount_ends_cleanly(session: Session) -> None:
    app = QuitsMidMount(session)
    # Run as `reposim open` runs it: Pilot's run_test would wait for the panes, then shut down.
    await asyncio.wait_for(app.run_async(headless=True, size=(120, 40)), WAIT * 2)
    assert app.quit_pressed.is_set()
    assert app._exception is None, repr(app._exception)
    assert app.return_code == 0


class QuitsWhileFollowing(RepoSimApp):
    """Once its panes are up, the agent pane asks to follow a file; while the editor reads it,
    Ctrl+Q is pressed, and the read answers only once the app has stopped running."""

    async def _mount_late_panes(self) -> None:
        await super()._mount_late_panes()
        if self.panes_mounted:
            self.query_one(AgentPane).post_message(AgentPane.FollowFile("calc/ops.py", 1))


async def test_ctrl_q_while_the_editor_follows_a_file_ends_cleanly(session: Session) -> None:
    """Last stop a Pilot test failed with `No Tab with id '--content-tab-editor-tab-1'`: the
    follow of an approved edit was adding its first tab when Pilot's teardown removed the panes
    (`run_test` calls `App._shutdown` beside a running message loop, workers still live). On
    `reposim open`'s path (`run_async`, Ctrl+Q) Textual cancels the app's workers when its
    message loop ends, before any pane is removed: the follow stops where it waits, and the
    app ends cleanly without the tab."""
    app = QuitsWhileFollowing(session)
    read = session.read
    read_held, follow_cancelled = asyncio.Event(), asyncio.Event()

    async def held_read(path: str) -> str:
        text = await read(path)
        read_held.set()
        app.simulate_key("ctrl+q")
        try:
            await asyncio.wait_for(asyncio.Event().wait(), WAIT)  # until cancelled
        except asyncio.CancelledError:
            follow_cancelled.set()
            raise
        return text

    session.read = held_read  # type: ignore[method-assign]
    await asyncio.wait_for(app.run_async(headless=True, size=(120, 40)), WAIT * 2)
    assert read_held.is_set() and follow_cancelled.is_set()
    assert app._exception is None, repr(app._exception)
    assert app.return_code == 0
