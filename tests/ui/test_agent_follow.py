"""The agent pane follows new cards while the person is at the bottom of it, and keeps their
place when they scrolled up to read (issue 18, minor item 13)."""

from __future__ import annotations

import asyncio

from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.widgets import Input

from simulator.events import Actor
from simulator.session import Session
from tests.ui.helpers import running, settled_frame, wait_for
from widgets.agent_pane import AgentPane, EventCard
from widgets.app import RepoSimApp


def cards_of(app: RepoSimApp) -> VerticalScroll:
    return app.query_one("#agent-cards", VerticalScroll)


def last_card_visible(app: RepoSimApp) -> bool:
    """The newest card's end is on screen (a card taller than the list shows its end)."""
    cards = cards_of(app)
    children = list(cards.query(EventCard))
    if not children:
        return False
    last = children[-1].region
    view = cards.content_region
    return last.height > 0 and view.y < last.bottom <= view.bottom


async def wait_for_cards(pilot: Pilot[None], pane: AgentPane, at_least: int) -> None:
    await wait_for(pilot, lambda: len(pane.query(EventCard)) >= at_least, f"{at_least} cards")


async def wait_for_text(pilot: Pilot[None], pane: AgentPane, text: str) -> None:
    def shown() -> bool:
        return any(text in card.plain_text() for card in pane.query(EventCard))

    await wait_for(pilot, shown, f"a card with {text!r}")


async def test_cards_from_typed_commands_bursts_and_f5_scroll_into_view(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await pilot.press("ctrl+j")  # narrow: the agent pane comes in on request
        pane = app.query_one(AgentPane)
        assert pane.display
        cards = cards_of(app)
        task = app.query_one("#agent-task", Input)
        for n in range(3):
            task.focus()
            task.value = f"$ echo card-{n}"
            await pilot.press("enter")
            await wait_for_text(pilot, pane, f"card-{n}")
            await wait_for(pilot, lambda: last_card_visible(app), "the last card in view")
            assert last_card_visible(app), (n, cards.scroll_y, cards.max_scroll_y)
        for run in range(3):  # test runs the person starts with F5
            count = len(pane.query(EventCard))
            await pilot.press("f5")
            await wait_for_cards(pilot, pane, count + 2)
            await wait_for(pilot, lambda: last_card_visible(app), "the last card in view")
            assert last_card_visible(app), (run, cards.scroll_y, cards.max_scroll_y)
        # An agent's bursts: many cards land between two frames (a layout can come between one
        # card and the scroll that was to show it).
        for burst in range(4):
            count = len(pane.query(EventCard))
            await asyncio.gather(
                *(session.exec(f"echo burst-{burst}-{n}", actor=Actor.AGENT) for n in range(10))
            )
            await wait_for_cards(pilot, pane, count + 20)
            await wait_for(pilot, lambda: last_card_visible(app), "the last card in view")
            assert last_card_visible(app), (burst, cards.scroll_y, cards.max_scroll_y)
        count = len(pane.query(EventCard))
        await pilot.press("f5")
        await wait_for(
            pilot,
            lambda: any(c.event.kind == "test.result" for c in pane.query(EventCard)),
            "the test result card",
        )
        await wait_for(pilot, lambda: last_card_visible(app), "the last card in view")
        assert len(pane.query(EventCard)) > count
        assert last_card_visible(app), (
            cards.scroll_y,
            cards.max_scroll_y,
            [(c.event.kind, c.region) for c in list(pane.query(EventCard))[-3:]],
            cards.content_region,
        )


async def test_a_person_reading_older_cards_keeps_their_place(session: Session) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        pane = app.query_one(AgentPane)
        for n in range(12):
            await session.exec(f"echo old-{n}", actor=Actor.AGENT)
        await wait_for(pilot, lambda: len(pane.query(EventCard)) >= 24, "the cards")
        cards = cards_of(app)
        await wait_for(pilot, lambda: cards.max_scroll_y > 0, "the cards laid out")
        assert cards.max_scroll_y > 0
        cards.focus()
        await pilot.press("home")  # the person scrolls up to read
        await wait_for(pilot, lambda: cards.scroll_y == 0, "the scroll to the top")
        await session.exec("echo new", actor=Actor.AGENT)
        await wait_for(
            pilot,
            lambda: any("new" in c.plain_text() for c in list(pane.query(EventCard))[-2:]),
            "the new card",
        )
        await settled_frame(pilot, app)  # a scroll to the new card would have happened by now
        assert cards.scroll_y == 0
        assert not last_card_visible(app)
        await pilot.press("end")  # back at the bottom: following again
        await session.exec("echo newer", actor=Actor.AGENT)
        await wait_for(
            pilot,
            lambda: any("newer" in c.plain_text() for c in list(pane.query(EventCard))[-2:]),
            "the newer card",
        )
        await wait_for(pilot, lambda: last_card_visible(app), "the last card in view")
