"""The agent pane mounted in a small app over a real session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from simulator.events import Actor
from simulator.session import Session
from widgets.agent_pane import AgentPane, EventCard


class PaneApp(App[None]):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        yield AgentPane(self.session)

    def on_mount(self) -> None:
        pane = self.query_one(AgentPane)
        self.session.subscribe(pane.add_event)


@pytest.fixture
async def session(sample_repo: Path, tmp_path: Path) -> AsyncIterator[Session]:
    session = await Session.open(sample_repo, trajectory_path=tmp_path / "t.jsonl")
    yield session
    await session.close()


async def test_pane_shows_session_events_as_cards(session: Session) -> None:
    app = PaneApp(session)
    async with app.run_test() as pilot:
        await session.exec("echo hello", actor=Actor.AGENT)
        await pilot.pause()
        texts = [str(card.render()) for card in app.query(EventCard)]
        assert any("$ echo hello" in t for t in texts)
        assert any("exit 0" in t for t in texts)
