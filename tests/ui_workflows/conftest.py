"""Fixture repositories for the workflows started from `reposim open`, the local model server
and helpers to drive an entry and read its cards."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot

from simulator.agent import AgentConfig, Mode
from simulator.events import Kind
from simulator.session import Session
from tests.agent.conftest import BUGGY_PROJECT
from tests.agent.fake_llm import FakeLLM, fake_client
from tests.conftest import RepoFactory, SessionOn, git
from tests.harness.conftest import CLAMP, CLAMP_TESTS
from tests.ui.helpers import WAIT, wait_for, wired_app
from widgets import workflow_entries
from widgets.agent_cards import render_card
from widgets.agent_pane import EventCard
from widgets.app import RepoSimApp
from widgets.editor_pane import EditorPane

CALC = CLAMP
CALC_TESTS = "import pytest\n\nfrom shapes.calc import clamp\n\n\n" + CLAMP_TESTS

SHAPES = {"shapes/__init__.py": "", "shapes/calc.py": CALC, "tests/test_calc.py": CALC_TESTS}


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


def app_with_model(session: Session, server: FakeLLM | None, mode: Mode = Mode.AUTO) -> RepoSimApp:
    config = AgentConfig(client=fake_client(server) if server is not None else None, mode=mode)
    return wired_app(session, config)


@asynccontextmanager
async def workflow_app(
    session_on: SessionOn, repo: Path, server: FakeLLM | None, mode: Mode = Mode.AUTO
) -> AsyncIterator[tuple[RepoSimApp, Pilot[None]]]:
    """The app on a new session over `repo`, the workflows' model served by `server` (None: no
    model configured), running headless at 160x48."""
    app = app_with_model(await session_on(repo), server, mode)
    async with app.run_test(size=(160, 48)) as pilot:
        yield app, pilot


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
    return make_repo(BUGGY_PROJECT, name="buggy")


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
