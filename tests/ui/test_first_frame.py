"""The first frame comes first: the tree and the editor are drawn before the bottom panel and
the agent pane are mounted (issue 29, item 2)."""

from __future__ import annotations

from typing import Any

from simulator.session import Session
from widgets.agent_pane import AgentPane
from widgets.app import RepoSimApp
from widgets.editor_pane import EditorPane
from widgets.file_tree import FileTree


class Watched(RepoSimApp):
    """Notes what was mounted, and what the screen showed, at each of the first frames."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.frames: list[dict[str, Any]] = []

    def _watch_frame(self) -> None:
        if len(self.frames) < 3:
            self.frames.append(
                {
                    "tree": bool(self.query(FileTree)),
                    "editor": bool(self.query(EditorPane)),
                    "agent": bool(self.query(AgentPane)),
                    "panel": bool(self.query("#panel")),
                    "text": self.export_screenshot(),
                }
            )
            self.call_after_refresh(self._watch_frame)

    def on_mount(self) -> None:
        self.call_after_refresh(self._watch_frame)  # before the app's own after-frame call
        super().on_mount()


async def test_the_first_frame_shows_the_tree_before_the_agent_pane_is_mounted(
    session: Session,
) -> None:
    app = Watched(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.1)
        first = app.frames[0]
        assert first["tree"] and first["editor"]
        assert "EXPLORER" in first["text"] and session.source.name in first["text"]
        assert not first["agent"] and not first["panel"]
        # Then they come, and the app is whole: the agent pane, the panel's three tabs.
        assert app.panes_mounted
        assert app.query_one(AgentPane).display
        assert [tab.id for tab in app.query("#panel TabPane")] == [
            "panel-terminal",
            "panel-tests",
            "panel-changes",
        ]
