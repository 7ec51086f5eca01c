"""'Compare performance of this function between two commits': a small modal asks for the two
revisions (HEAD~1 and HEAD by default), pyperf times the function under the cursor at both (two
rounds: seconds, not minutes), and the result card shows the performance table."""

from __future__ import annotations

import subprocess
from pathlib import Path

from textual.pilot import Pilot

from simulator.events import Kind
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.conftest import RepoFactory, SessionOn, git
from tests.ui.helpers import notices, wait_for, wait_quiet
from tests.ui_workflows.conftest import (
    FAST,
    PERF_TESTS,
    SLOW,
    app_with_model,
    card_text,
    cards,
    cursor_in,
    result_card,
    run_entry,
    workflow_app,
)
from widgets.app import RepoSimApp
from widgets.workflow_entries import RevisionsScreen

ENTRY = "Compare performance of this function between two commits"


async def _the_modal(pilot: Pilot[None], app: RepoSimApp, line: str) -> None:
    """The cursor on `line` of numbers_/series.py, the entry run, its revisions modal up."""
    await cursor_in(pilot, app, "numbers_/series.py", line)
    run_entry(app, ENTRY)
    await wait_for(pilot, lambda: isinstance(app.screen, RevisionsScreen), "the modal")


async def test_perf_compares_the_function_under_the_cursor_at_two_commits(
    session_on: SessionOn, perf_repo: Path
) -> None:
    # no model needed: the harness is traced from tests
    async with workflow_app(session_on, perf_repo, None) as (app, pilot):
        await _the_modal(pilot, app, "for i in range(n):")
        screen = app.screen
        assert isinstance(screen, RevisionsScreen)
        assert screen.defaults == ("HEAD~1", "HEAD")
        await pilot.press("enter")  # the defaults
        # pyperf spawns a dozen worker processes per side: minutes on a loaded 2-core machine
        card = await result_card(pilot, app, "perf.compare", within=300)
        assert "numbers_.series.triangle" in card
        rows = {
            words[0]: words
            for words in (line.split() for line in card.splitlines())
            if len(words) >= 6 and words[0] in ("A", "B") and words[-1].isdigit()
        }
        assert rows["A"][1] == "HEAD~1" and rows["B"][1] == "HEAD", card
        assert rows["A"][-1] == "4" and rows["B"][-1] == "4", card  # 2 rounds x 2 processes
        assert "B is slower" in card, card
        # the two sides' steps came through as progress cards of this session
        steps = {c.event.payload["step"] for c in cards(app, Kind.WORKFLOW_STEP, "perf.compare")}
        assert {"A checkout", "B checkout", "A calibrate", "A measure", "B measure"} <= steps
        await wait_for(pilot, lambda: any("slower" in n for n in notices(app)), "the notice")
        await wait_quiet(pilot, app)


async def test_escape_in_the_modal_compares_nothing(session_on: SessionOn, perf_repo: Path) -> None:
    async with workflow_app(session_on, perf_repo, None) as (app, pilot):
        await _the_modal(pilot, app, "total += i")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.workers, "the worker to end")
        assert not isinstance(app.screen, RevisionsScreen)
        assert not cards(app, Kind.WORKFLOW_START)


def _venv_with(root: Path, module: str, text: str) -> Path:
    """A venv in `root/.venv` with pytest (from uv's cache, offline) and `module` installed in
    its site-packages: a dependency RepoSim's own environment does not have."""
    venv = root / ".venv"
    subprocess.run(["uv", "venv", "-q", str(venv)], check=True)
    subprocess.run(
        ["uv", "pip", "install", "-q", "--offline", "--python", str(venv / "bin/python"), "pytest"],
        check=True,
    )
    [site] = venv.glob("lib/python*/site-packages")
    (site / f"{module}.py").write_text(text)
    return venv


async def test_perf_times_in_the_projects_environment(
    session_on: SessionOn, make_repo: RepoFactory
) -> None:
    """The comparison runs where the project's code runs (its venv, with the dependency only it
    has), not in RepoSim's own interpreter, and the card says which environment."""
    uses = "from steps import STEP\n\n"
    files = {"numbers_/__init__.py": "", "numbers_/series.py": uses + FAST}
    repo = make_repo({**files, "tests/test_series.py": PERF_TESTS}, name="numbers")
    (repo / "numbers_" / "series.py").write_text(uses + SLOW)
    git(repo, "commit", "-qam", "triangle: a plain loop")
    venv = _venv_with(repo, "steps", "STEP = 1\n")
    async with workflow_app(session_on, repo, None) as (app, pilot):
        await _the_modal(pilot, app, "for i in range(n):")
        await pilot.press("enter")
        card = await result_card(pilot, app, "perf.compare", within=300)
        assert "B is slower" in card, card
        [start] = cards(app, Kind.WORKFLOW_START, "perf.compare")
        assert str(venv) in start.event.payload["params"]["environment"]
        await wait_quiet(pilot, app)


FIXTURE_TESTS = """\
import pytest

from numbers_.series import triangle


@pytest.fixture
def size():
    return 3000


def test_triangle(size):
    assert triangle(size) == 4498500
"""
BENCH = "from numbers_.series import triangle\n\n\ndef bench():\n    triangle(3000)\n"


async def test_tests_that_give_no_traced_harness_hand_over_to_the_agents_model(
    session_on: SessionOn, make_repo: RepoFactory
) -> None:
    """The only test calling the function needs a pytest fixture: no harness can be traced.
    Without a model the card says how to set one in the UI (not the CLI's flags); with the
    agent's model (litellm against the local fake server) the model writes the harness and
    the comparison goes on."""
    files = {"numbers_/__init__.py": "", "numbers_/series.py": FAST}
    repo = make_repo({**files, "tests/test_series.py": FIXTURE_TESTS}, name="numbers")
    (repo / "numbers_" / "series.py").write_text(SLOW)
    git(repo, "commit", "-qam", "triangle: a plain loop")
    async with workflow_app(session_on, repo, None) as (app, pilot):
        await _the_modal(pilot, app, "for i in range(n):")
        await pilot.press("enter")
        await wait_for(pilot, lambda: cards(app, Kind.WORKFLOW_END, "perf.compare"), "the end")
        [end] = cards(app, Kind.WORKFLOW_END, "perf.compare")
        said = card_text(end) + " ".join(notices(app))
        assert "1 test(s) call" in said and "Set the agent's model" in said, said
        assert "--harness" not in said, said
        await wait_quiet(pilot, app)

    server = FakeLLM([Reply("A harness.", [call("write_harness", code=BENCH)])]).start()
    try:
        app = app_with_model(await session_on(repo, "second.jsonl"), server)
        async with app.run_test(size=(160, 48)) as pilot:
            await _the_modal(pilot, app, "for i in range(n):")
            await pilot.press("enter")
            card = await result_card(pilot, app, "perf.compare", within=300)
            assert "B is slower" in card, card
            await wait_quiet(pilot, app)
    finally:
        server.close()
    assert server.requests, "the model was never asked"
