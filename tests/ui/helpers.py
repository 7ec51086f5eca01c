"""Helpers for the UI tests: waiting on the app, reading trajectories, starting sessions."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual.app import App
from textual.pilot import Pilot

from reposim.ui import wire_agent
from simulator.agent import AgentConfig, Mode, ScriptedClient
from simulator.backend_factory import make_backend
from simulator.session import Session
from tests.conftest import WAIT as WAIT
from themes import theme_names
from widgets.agent_pane import ApprovalPrompt
from widgets.app import RepoSimApp
from widgets.tests_panel import TestsPanel

_NOTIFIED = "_notified_in_this_test"


def _keep_notices() -> None:
    """Every app of a test process keeps what it notifies (see `notices`). Installed once, when
    this module is imported: before the tests that read notices construct their apps."""
    notify = App.notify

    def keep(self: App[Any], message: str, **options: Any) -> None:
        self.__dict__.setdefault(_NOTIFIED, []).append(message)
        notify(self, message, **options)

    App.notify = keep  # type: ignore[method-assign]


_keep_notices()


def notices(app: App[Any]) -> list[str]:
    """What `app` notified, in order, whether or not its toast still shows. The screen's own
    list (`app._notifications`) lets a notice go when its timeout (5-10 s) passes, and on a
    loaded machine a test can reach its check later than that."""
    return list(app.__dict__.get(_NOTIFIED, ()))


async def wait_for(
    pilot: Any, predicate: Callable[[], object], what: str, *, within: float = WAIT
) -> None:
    """Let the app run until `predicate()` is true; fail with `what` if it never becomes so
    within `within` seconds (a deadline only: a passing test waits no longer for it)."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


async def f5_run(pilot: Any, app: Any) -> TestsPanel:
    """Press F5 and wait for the test run to finish: the tests panel with its result."""
    await pilot.press("f5")
    tests: TestsPanel = app.query_one(TestsPanel)
    await wait_for(pilot, lambda: tests.result is not None, "the test run")
    return tests


def quiet(app: Any) -> bool:
    """No worker of the app runs and none of its debounced timers (RepoSimApp's reload and
    changes look, 0.2 s after a command or test run) still waits to fire."""
    timers = getattr(app, "_debounce_timers", {})
    pending = [t for t in timers.values() if t._task is not None and not t._task.done()]
    return not pending and not any(worker.is_running for worker in app.workers)


async def wait_quiet(pilot: Any, app: Any) -> None:
    """Before leaving the app: wait until what a run started has finished (never a fixed
    pause, which a loaded machine outlasts)."""
    await wait_for(pilot, lambda: quiet(app), "the app's workers and debounced timers")


async def drained(pilot: Any, app: Any, widget: Any) -> None:
    """Wait until the callbacks queued before now have run: the app's (a deferred focus, as
    an editor's once a file is open; a key's handling) and `widget`'s after-refresh ones (a
    tree's reveal moves its cursor so). Focus or state read before then is what they are
    about to change; a fixed pause is too short on a loaded machine."""
    ran = [asyncio.Event(), asyncio.Event()]
    app.call_later(ran[0].set)  # the app runs its callbacks and messages in order
    widget.call_after_refresh(ran[1].set)  # and a widget's after-refresh callbacks too
    await wait_for(pilot, lambda: all(event.is_set() for event in ran), "the queued callbacks")


async def settled_frame(pilot: Any, app: Any) -> None:
    """Before a snapshot: the app quiet, every scheduled animation (a scroll to the cursor)
    done, and the messages that follow handled."""
    await wait_quiet(pilot, app)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def palette_highlights(app: Any, text: str) -> bool:
    """The command palette has highlighted a hit whose text contains `text` (what Enter runs:
    its results arrive asynchronously, so a fixed pause may find none, or an older one)."""
    from textual.command import CommandList

    lists = app.screen.query(CommandList)
    if not lists:
        return False
    options = lists.first()
    index = options.highlighted
    if index is None or index >= options.option_count:
        return False
    prompt = options.get_option_at_index(index).prompt
    return text.lower() in str(getattr(prompt, "plain", prompt)).lower()


def recorded(path: Path) -> list[dict[str, Any]]:
    """The events (not the header) of a trajectory file."""
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def workspace(session: Session) -> Path:
    return Path(session.workspace_path)


class StartingApp(RepoSimApp):
    """RepoSimApp whose session is started inside the app's own event loop (for snapshot
    tests, which run the app with `App.run`, i.e. in a loop of their own)."""

    async def on_load(self) -> None:
        await self.session.start()


TestT = TypeVar("TestT", bound=Callable[..., Any])


def every_theme_at_both_sizes(test: TestT) -> TestT:
    """A snapshot test's matrix: `theme`, each theme the app ships, and `size`, 80x24 and 160x48."""
    by_size = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
    return pytest.mark.parametrize("theme", theme_names())(by_size(test))


def unstarted_session(repo: Path, trajectory: Path) -> Session:
    return Session(make_backend("local", repo), source=repo, trajectory_path=trajectory)


def wired_app(session: Session, config: AgentConfig) -> RepoSimApp:
    """RepoSimApp with its agent built the way `reposim open` / `reposim demo` build it."""
    agent, connect = wire_agent(session, config)
    return RepoSimApp(session, agent_config=config, agent=agent, connect_agent=connect)


@asynccontextmanager
async def running(
    session: Session, size: tuple[int, int] = (120, 40)
) -> AsyncIterator[tuple[RepoSimApp, Pilot[None]]]:
    """RepoSimApp on `session` (no agent configured), running headless at `size`."""
    app = RepoSimApp(session)
    async with app.run_test(size=size) as pilot:
        yield app, pilot


AppT = TypeVar("AppT", bound=App[Any])


@asynccontextmanager
async def confirming(
    make_app: Callable[[Session, AgentConfig], AppT],
    session: Session,
    client: ScriptedClient,
    size: tuple[int, int],
    task: str = "Make the tests pass.",
) -> AsyncIterator[tuple[AppT, Any, ApprovalPrompt]]:
    """`make_app`'s app with an agent in confirm mode that `client` plays for `task`, running
    headless at `size`, and the prompt where the agent's actions wait for approval."""
    app = make_app(session, AgentConfig(client=client, mode=Mode.CONFIRM, task=task))
    async with app.run_test(size=size) as pilot:
        yield app, pilot, app.query_one(ApprovalPrompt)


async def quit_prompt_with_an_edit(app: RepoSimApp, pilot: Any, typed: str = "z") -> None:
    """Type into calc/ops.py (unsaved) and press Ctrl+Q: the Cancel / Discard / Save prompt."""
    from widgets.editor_pane import ChoiceScreen, EditorPane

    editor = app.query_one(EditorPane)
    await editor.open_file("calc/ops.py")
    await pilot.press(*typed)
    await wait_for(pilot, lambda: editor.is_dirty("calc/ops.py"), "the dirty tab")
    await pilot.press("ctrl+q")
    await wait_for(pilot, lambda: isinstance(app.screen, ChoiceScreen), "the quit prompt")


def key_burst(app: Any, *keys: str) -> None:
    """Keys as a terminal delivers a fast burst (a paste without bracketed paste, keys queued on
    a loaded machine): all in the app's queue before any is handled. Pilot's press waits for the
    app to go idle after each key, which hides the race. A key is its Textual name; a single
    printable character is typed as itself."""
    from textual import events

    driver = app._driver
    assert driver is not None
    for key in keys:
        character = key if len(key) == 1 else {"enter": "\r", "space": " "}.get(key)
        name = {"/": "slash", " ": "space"}.get(key, key)
        event = events.Key(name, character)
        event.set_sender(app)
        driver.send_message(event)
