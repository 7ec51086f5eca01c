"""The agent pane driven with Pilot over a real session: cards, confirm mode with one approval
and one rejection with a reason, pausing and taking over, a new task after finish."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from reposim.ui import wire_agent
from simulator.agent import AgentConfig, Mode, ScriptedClient
from simulator.events import Actor, Event, Kind
from simulator.session import Session
from simulator.trajectory import read_trajectory
from simulator.workflow import WorkflowRun
from tests.agent.conftest import BUG, FIX, turn, wait_until
from tests.ui.helpers import confirming, notices
from widgets.agent_pane import STEER_KEYS_HINT, AgentPane, EventCard


class PaneApp(App[None]):
    """The pane alone, fed the session's events the way RepoSimApp feeds them."""

    def __init__(self, session: Session, config: AgentConfig | None = None) -> None:
        super().__init__()
        self.session = session
        self.config = config

    def compose(self) -> ComposeResult:
        # Wired the way `reposim open` wires it: the composition root builds the agent.
        agent, connect = wire_agent(self.session, self.config)
        yield AgentPane(self.session, self.config, agent=agent, connect=connect)

    def on_mount(self) -> None:
        pane = self.query_one(AgentPane)
        self._unsubscribe = self.session.subscribe(pane.add_event)

    def on_unmount(self) -> None:
        self._unsubscribe()


def events(session: Session) -> list[Event]:
    return read_trajectory(session.trajectory_path).events


def card_texts(app: App[None]) -> list[str]:
    return [card.plain_text() for card in app.query(EventCard)]


async def test_pane_shows_session_events_as_cards(session: Session) -> None:
    app = PaneApp(session)
    async with app.run_test() as pilot:
        await session.exec("echo hello", actor=Actor.HUMAN)
        await pilot.pause()
        texts = "\n".join(card_texts(app))
        assert "$ echo hello" in texts
        assert "exit 0" in texts


async def test_confirm_mode_through_the_ui_one_rejection_one_approval(session: Session) -> None:
    client = ScriptedClient(
        [
            turn("bash", "Start clean.", command="rm -rf tests"),
            turn(
                "edit",
                "Fix the divisor.",
                command="str_replace",
                path="stats/core.py",
                old_str=BUG,
                new_str=FIX,
            ),
            turn("finish", summary="Fixed mean."),
        ]
    )
    async with confirming(PaneApp, session, client, (120, 50)) as (app, pilot, prompt):
        await wait_until(pilot, lambda: bool(prompt.display))
        assert prompt.description == "$ rm -rf tests"
        await pilot.press("r")
        reason = prompt.query_one("#approval-reason", Input)
        assert reason.has_focus
        await pilot.press(*"keep the tests", "enter")
        await wait_until(
            pilot,
            lambda: bool(prompt.display) and prompt.description.startswith("edit stats/core.py"),
        )
        await pilot.press("a")
        pane = app.query_one(AgentPane)
        await wait_until(pilot, lambda: not pane.running)
        texts = "\n".join(card_texts(app))
        assert "Fixed mean." in texts
        assert "rejected" in texts
    assert await session.exists("tests/test_core.py")
    assert FIX in (await session.read_bytes("stats/core.py")).decode()
    recorded = events(session)
    decisions = [e for e in recorded if e.kind == Kind.POLICY_DECISION]
    assert [(d.payload["allowed"], d.payload["reason"], d.actor) for d in decisions] == [
        (False, "keep the tests", Actor.HUMAN),
        (True, "", Actor.HUMAN),
    ]
    rejection = next(m for m in client.calls[1] if m["role"] == "tool")
    assert "keep the tests" in rejection["content"]
    assert not any(e.kind == Kind.EXEC for e in recorded)


async def test_pause_take_over_and_resume(session: Session) -> None:
    client = ScriptedClient(
        [turn("view", path="stats/core.py"), turn("finish", summary="saw what you did")], delay=0.5
    )
    config = AgentConfig(client=client, task="Look around.")
    app = PaneApp(session, config)
    async with app.run_test(size=(120, 50)) as pilot:
        pane = app.query_one(AgentPane)
        assert pane.agent is not None
        await wait_until(pilot, lambda: pane.agent is not None and pane.agent.state == "model")
        pane.query_one("#agent-cards").focus()
        await pilot.press("i")  # interrupt the model call: the agent pauses in mode human
        await wait_until(pilot, lambda: pane.agent is not None and pane.agent.state == "paused")
        assert pane.agent.mode is Mode.HUMAN
        # the person takes over: a command typed in the pane runs as theirs
        await pilot.press("t", *"$ echo taking-over > NOTE.txt", "enter")
        await wait_until(pilot, lambda: any(e.kind == Kind.EXEC_RESULT for e in events(session)))
        pane.query_one("#agent-cards").focus()
        await pilot.press("g")  # back to auto
        await wait_until(pilot, lambda: not pane.running)
        # a new task after finish
        client._turns.append(turn("finish", summary="second task done"))
        await pilot.press("t", *"one more thing", "enter")
        await wait_until(
            pilot, lambda: sum(e.kind == Kind.AGENT_FINISH for e in events(session)) == 2
        )
    told = [m for m in client.calls[1] if m["role"] == "user"][-1]["content"]
    assert "$ echo taking-over > NOTE.txt" in told
    exec_event = next(e for e in events(session) if e.kind == Kind.EXEC)
    assert exec_event.actor is Actor.HUMAN
    finishes = [e.payload["summary"] for e in events(session) if e.kind == Kind.AGENT_FINISH]
    assert finishes == ["saw what you did", "second task done"]
    modes = [e.payload["text"] for e in events(session) if e.payload.get("mark") == "agent.mode"]
    assert modes == ["agent mode: human", "agent mode: auto"]


async def test_no_model_configured_is_one_notification(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REPOSIM_MODEL", raising=False)
    app = PaneApp(session)
    async with app.run_test(size=(120, 50)) as pilot:
        pane = app.query_one(AgentPane)
        await pilot.click("#agent-task")
        await pilot.press(*"fix it", "enter")
        await wait_until(pilot, lambda: not pane.running and bool(notices(app)))
        messages = notices(app)
        assert any("No model is configured" in m and "REPOSIM_MODEL" in m for m in messages)


async def test_rejecting_an_edit_stops_a_scripted_run_instead_of_claiming_success(
    session: Session,
) -> None:
    client = ScriptedClient(
        [
            turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=FIX),
            turn("run_tests"),
            turn("finish", summary="All tests pass."),
        ],
        follows_script=True,
    )
    async with confirming(PaneApp, session, client, (120, 50)) as (app, pilot, prompt):
        await wait_until(pilot, lambda: bool(prompt.display))
        await pilot.press("r", *"not like that", "enter")
        pane = app.query_one(AgentPane)
        await wait_until(pilot, lambda: not pane.running)
        texts = "\n".join(card_texts(app))
        assert "All tests pass." not in texts
        assert "off_script" in texts and "cannot adapt" in texts
    finish = [e for e in events(session) if e.kind == Kind.AGENT_FINISH]
    assert [e.payload["reason"] for e in finish] == ["off_script"]
    assert client.remaining == 2  # nothing after the rejection was played
    assert BUG in (await session.read_bytes("stats/core.py")).decode()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_reject_reason_and_the_keys_stay_visible_under_a_long_edit(
    session: Session, size: tuple[int, int]
) -> None:
    new = "\n".join(f"    x{i} = {i}" for i in range(40))
    client = ScriptedClient(
        [turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str=new)]
    )
    async with confirming(PaneApp, session, client, size) as (app, pilot, prompt):
        await wait_until(pilot, lambda: bool(prompt.display))
        await pilot.press("r")
        reason = prompt.query_one("#approval-reason", Input)
        await pilot.press(*"no")
        await pilot.pause()
        screen = app.screen.region
        for widget in (prompt.query_one("#approval-keys"), reason):
            region = widget.region
            assert region.height >= (3 if widget is reason else 1)
            assert screen.contains_region(region), (widget.id, region, screen)
        assert reason.value == "no" and reason.has_focus


async def test_a_workflow_steps_nested_figures_read_as_words_not_dicts(session: Session) -> None:
    app = PaneApp(session)
    async with app.run_test(size=(120, 40)) as pilot:
        with WorkflowRun(session, "setup") as run:
            # the shape the setup oracle's verdict has (simulator/setup/ladder.py)
            run.step(
                "oracle",
                detail={
                    "tier": "ready",
                    "tests": {"passed": 929, "failed": 2, "skipped": 0},
                    "skipped": [{"module": "tests/test_gui.py", "error": "no display"}],
                },
            )
        await wait_until(pilot, lambda: any("oracle" in t for t in card_texts(app)))
        [card] = [t for t in card_texts(app) if "oracle" in t]
        assert "929 passed, 2 failed" in card, card
        assert "module tests/test_gui.py" in card, card
        assert "{" not in card and "'" not in card, card


async def test_the_approval_keys_wrap_in_a_narrow_pane(session: Session) -> None:
    """At 80x24 the agent pane is about 30 columns: the keys line must not be cut."""
    client = ScriptedClient(
        [turn("edit", command="str_replace", path="stats/core.py", old_str=BUG, new_str="x")]
    )
    async with confirming(PaneApp, session, client, (30, 24)) as (_, pilot, prompt):
        await wait_until(pilot, lambda: bool(prompt.display))
        await pilot.pause()
        keys = prompt.query_one("#approval-keys")
        shown = " ".join(keys.render_line(y).text.strip() for y in range(keys.region.height))
        assert "a approve · r reject with a reason" in shown, shown


async def test_letters_typed_at_the_cards_that_steer_nothing_say_where_the_keys_are(
    session: Session,
) -> None:
    """Following shows the agent's file in the editor without the keyboard; a person who types
    into it is typing at the cards. Keys of theirs act silently; any other letter says where the
    keys are, once however many follow; in the task input letters are typing."""
    app = PaneApp(session)
    async with app.run_test() as pilot:
        pane = app.query_one(AgentPane)
        cards = pane.query_one("#agent-cards")
        cards.focus()
        await wait_until(pilot, lambda: app.focused is cards)
        await pilot.press("z", "z", "q")
        handled = asyncio.Event()
        pane.call_later(handled.set)  # the pane handles the keys that bubble to it in order
        await wait_until(pilot, handled.is_set)
        hints = [text for text in notices(app) if "steer the agent" in text]
        assert hints == [STEER_KEYS_HINT]
        assert "t for a task" in hints[0] and "Alt+2 for the editor" in hints[0]
        await pilot.press("t")  # a key of theirs: the task input, and no notice
        task = pane.query_one("#agent-task", Input)
        await wait_until(pilot, lambda: app.focused is task)
        await pilot.press("z", "q")
        await wait_until(pilot, lambda: task.value == "zq")
        assert [text for text in notices(app) if "steer the agent" in text] == hints
