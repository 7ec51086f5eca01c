"""Fixture repositories for the workflows started from `reposim open`, the local model server
and helpers to drive an entry and read its cards."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot

from simulator.agent import AgentConfig, Mode
from simulator.agent.models import LiteLLMClient, RetryPolicy
from simulator.events import Kind
from simulator.session import Session
from tests.agent.fake_llm import FakeLLM
from tests.conftest import RepoFactory, git
from tests.ui.helpers import WAIT, wait_for, wired_app
from widgets import workflow_entries
from widgets.agent_cards import render_card
from widgets.agent_pane import EventCard
from widgets.app import RepoSimApp
from widgets.editor_pane import EditorPane

CALC = '''\
"""Small functions with known branches."""


def clamp(value, low, high):
    """Clamp `value` into [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    if value < low:
        return low
    if value > high:
        return high
    return value
'''

CALC_TESTS = """\
import pytest

from shapes.calc import clamp


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_outside():
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10


def test_clamp_bad_bounds():
    with pytest.raises(ValueError):
        clamp(1, 5, 0)
"""

SHAPES = {"shapes/__init__.py": "", "shapes/calc.py": CALC, "tests/test_calc.py": CALC_TESTS}

BUGGY = {
    "stats/__init__.py": "",
    "stats/core.py": (
        "def total(values):\n    return sum(values)\n\n\n"
        "def mean(values):\n    return total(values) / (len(values) - 1)\n"
    ),
    "tests/test_core.py": (
        "from stats.core import mean, total\n\n\n"
        "def test_total():\n    assert total([1, 2, 3]) == 6\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    ),
}
BUG = "total(values) / (len(values) - 1)"
FIX = "total(values) / len(values)"

FAST = '''\
def triangle(n):
    """The sum of 0..n-1."""
    return sum(range(n))
'''

SLOW = '''\
def triangle(n):
    """The sum of 0..n-1."""
    total = 0
    for i in range(n):
        for _ in range(4):
            total += i
    return total // 4
'''

PERF_TESTS = """\
from numbers_.series import triangle


def test_triangle():
    assert triangle(3000) == 4498500
"""

QUICK = replace(
    workflow_entries.EntryOptions(),
    codegen_n=2,
    codegen_ks=(1, 2),
    debug_steps=6,
    harness_rounds=2,
    perf_rounds=2,
    perf_min_time=0.01,
)


@pytest.fixture(autouse=True)
def quick_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Small workflows (a few samples, two pyperf rounds) and no user configuration."""
    monkeypatch.setattr(workflow_entries, "OPTIONS", QUICK)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data-home"))
    monkeypatch.delenv("REPOSIM_MODEL", raising=False)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.close()


def model(server: FakeLLM) -> LiteLLMClient:
    """The client `reposim open --model openai/fake-model --base-url ...` builds."""
    return LiteLLMClient(
        "openai/fake-model",
        api_base=server.api_base,
        api_key="sk-test",
        retry=RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.02),
    )


def app_with_model(session: Session, server: FakeLLM | None, mode: Mode = Mode.AUTO) -> RepoSimApp:
    config = AgentConfig(client=model(server) if server is not None else None, mode=mode)
    return wired_app(session, config)


@pytest.fixture
def shapes_repo(make_repo: RepoFactory) -> Path:
    return make_repo(SHAPES, name="shapes")


@pytest.fixture
def perf_repo(make_repo: RepoFactory) -> Path:
    """Two commits: HEAD~1 sums in C (sum(range(n))), HEAD in a Python loop, several times
    slower. Not hundreds of times: pyperf calibrates its loops on A, and B runs as many."""
    files = {"numbers_/__init__.py": "", "numbers_/series.py": FAST}
    repo = make_repo({**files, "tests/test_series.py": PERF_TESTS}, name="numbers")
    (repo / "numbers_" / "series.py").write_text(SLOW)
    git(repo, "commit", "-qam", "triangle: a plain loop")
    return repo


@pytest.fixture
def buggy_repo(make_repo: RepoFactory) -> Path:
    return make_repo(BUGGY, name="buggy")


SessionOn = Callable[[Path], Awaitable[Session]]


@pytest.fixture
async def session_on(tmp_path: Path) -> AsyncIterator[SessionOn]:
    """Opens the session `reposim open REPO` would (closed after the test)."""
    opened: list[Session] = []

    async def open_(repo: Path) -> Session:
        session = await Session.open(repo, trajectory_path=tmp_path / f"{repo.name}.jsonl")
        opened.append(session)
        return session

    yield open_
    for session in opened:
        await session.close()


async def cursor_in(pilot: Pilot[None], app: RepoSimApp, path: str, text: str) -> None:
    """Open `path` in the editor with the cursor on the first line holding `text`."""
    app.open_path(path)
    pane = app.query_one(EditorPane)
    await wait_for(pilot, lambda: pane.current_editor is not None, f"{path} in the editor")
    editor = pane.current_editor
    assert editor is not None
    row = next(i for i, line in enumerate(editor.text.splitlines()) if text in line)
    editor.move_cursor((row, 4))


def run_entry(app: RepoSimApp, title: str) -> None:
    [entry] = [a for a in app.palette_actions() if a.title == title]
    entry.run()


def cards(app: RepoSimApp, kind: Kind, workflow: str | None = None) -> list[EventCard]:
    return [
        card
        for card in app.query(EventCard)
        if card.event.kind == kind
        and (workflow is None or card.event.payload.get("workflow") == workflow)
    ]


def card_text(card: EventCard, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(render_card(card.event))
    return console.export_text()


async def result_card(
    pilot: Pilot[None], app: RepoSimApp, workflow: str, *, within: float = WAIT
) -> str:
    """Wait for the workflow's end (up to `within` seconds: an upper bound for a loaded
    machine, not a timing assertion) and return its result card's text."""
    deadline = time.monotonic() + within
    while not cards(app, Kind.WORKFLOW_END, workflow):
        assert time.monotonic() < deadline, f"timed out waiting for the {workflow} run to end"
        await pilot.pause(0.1)
    [end] = cards(app, Kind.WORKFLOW_END, workflow)
    assert end.event.payload["status"] == "ok", card_text(end)
    [result] = cards(app, Kind.WORKFLOW_RESULT, workflow)
    return card_text(result)


def notices(app: RepoSimApp) -> list[str]:
    return [n.message for n in app._notifications]
