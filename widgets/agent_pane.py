"""The agent pane: the session's event stream as readable cards.

The app calls `add_event` for every session event; the pane never reaches the backend.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Static

from simulator.describe import describe_event
from simulator.events import TRANSIENT_KINDS, Event
from simulator.session import Session

# Cards kept on screen; older ones are dropped (the trajectory keeps everything).
MAX_CARDS = 500


class EventCard(Static):
    """One event: who did it, and what, in one line."""

    DEFAULT_CSS = """
    EventCard { padding: 0 1; }
    EventCard.-agent { color: $text; }
    EventCard.-human { color: $accent; }
    EventCard.-system { color: $text-muted; }
    """

    def __init__(self, event: Event) -> None:
        text = Text()
        text.append(f"{event.seq:>4} ", style="dim")
        text.append(f"{event.actor!s:6} ", style="bold")
        text.append(describe_event(event))
        super().__init__(text, classes=f"-{event.actor}")
        self.event = event


class AgentPane(Widget):
    """The session's events as cards; the agent's run, approvals and task input build on it."""

    DEFAULT_CSS = """
    AgentPane { width: 1fr; height: 1fr; }
    AgentPane #agent-cards { height: 1fr; }
    """

    def __init__(
        self,
        session: Session,
        agent_config: object | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.session = session
        self.agent_config = agent_config

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="agent-cards")

    def add_event(self, event: Event) -> None:
        """Show one session event as a card (live output chunks are left to the terminal)."""
        if event.kind in TRANSIENT_KINDS or not self.is_attached:
            return
        try:
            cards = self.query_one("#agent-cards", VerticalScroll)
        except NoMatches:  # not composed yet, or already torn down
            return
        cards.mount(EventCard(event))
        overflow = len(cards.children) - MAX_CARDS
        for old in list(cards.children)[: max(overflow, 0)]:
            old.remove()
        cards.scroll_end(animate=False)
