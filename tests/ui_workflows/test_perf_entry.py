"""'Compare performance of this function between two commits': a small modal asks for the two
revisions (HEAD~1 and HEAD by default), pyperf times the function under the cursor at both (two
rounds: seconds, not minutes), and the result card shows the performance table."""

from __future__ import annotations

from pathlib import Path

from simulator.events import Kind
from tests.conftest import SessionOn
from tests.ui.helpers import wait_for, wait_quiet
from tests.ui_workflows.conftest import (
    app_with_model,
    cards,
    cursor_in,
    notices,
    result_card,
    run_entry,
)
from widgets.workflow_entries import RevisionsScreen

ENTRY = "Compare performance of this function between two commits"


async def test_perf_compares_the_function_under_the_cursor_at_two_commits(
    session_on: SessionOn, perf_repo: Path
) -> None:
    session = await session_on(perf_repo)
    app = app_with_model(session, None)  # no model needed: the harness is traced from tests
    async with app.run_test(size=(160, 48)) as pilot:
        await cursor_in(pilot, app, "numbers_/series.py", "for i in range(n):")
        run_entry(app, ENTRY)
        await wait_for(pilot, lambda: isinstance(app.screen, RevisionsScreen), "the modal")
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
    session = await session_on(perf_repo)
    app = app_with_model(session, None)
    async with app.run_test(size=(160, 48)) as pilot:
        await cursor_in(pilot, app, "numbers_/series.py", "total += i")
        run_entry(app, ENTRY)
        await wait_for(pilot, lambda: isinstance(app.screen, RevisionsScreen), "the modal")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.workers, "the worker to end")
        assert not isinstance(app.screen, RevisionsScreen)
        assert not cards(app, Kind.WORKFLOW_START)
