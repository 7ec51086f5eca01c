"""The fleet view with Pilot: sessions growing on disk seen live, filtered, sorted, stuck ones
standing out, and attach following one session in the replay viewer."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from simulator.fleet import Fleet
from tests.fleet.helpers import GrowingRun
from tests.ui.helpers import wait_for
from widgets.compare import CompareScreen
from widgets.fleet import FleetApp, FleetScreen
from widgets.fleet.table import FleetTable
from widgets.replay import ReplayScreen
from widgets.replay.timeline import Timeline


def _first_poll_shown(app: FleetApp) -> bool:
    return isinstance(app.screen, FleetScreen) and app.screen.updates > 0


def _table(app: FleetApp) -> FleetTable:
    return app.screen.query_one(FleetTable)


def _cell(app: FleetApp, key: str, column: str) -> str:
    return str(_table(app).get_cell(key, column))


async def test_sessions_show_live_and_can_be_filtered_sorted_and_attached(
    tmp_path: Path,
) -> None:
    runs = {key: GrowingRun(tmp_path, key) for key in ("alpha", "beta", "gamma")}
    for run in runs.values():
        run.command("ls")
    runs["beta"].tests(passed=2, failed=1)
    app = FleetApp(Fleet(tmp_path, stuck_after=3600), interval=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: _first_poll_shown(app), "the fleet screen")
        await wait_for(pilot, lambda: _table(app).row_count == 3, "three sessions")
        assert _cell(app, "beta", "tests") == "2 passed, 1 failed"

        # A session that moves is updated in place.
        runs["alpha"].command("make test", code=2)
        await wait_for(
            pilot, lambda: _cell(app, "alpha", "last action") == "$ make test", "the new step"
        )
        assert _cell(app, "alpha", "steps") == "2"

        # A session that appears later is added.
        GrowingRun(tmp_path, "delta").command("pwd")
        await wait_for(pilot, lambda: _table(app).row_count == 4, "the new session")

        # Filter by text; Esc clears it.
        await pilot.press("slash", *"gam")
        await wait_for(pilot, lambda: _table(app).row_count == 1, "the filter")
        assert _cell(app, "gamma", "session") == "gamma"
        await pilot.press("escape")
        await wait_for(pilot, lambda: _table(app).row_count == 4, "the filter cleared")

        # Sort by steps: the busiest session first.
        await pilot.press("s", "s")
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        assert _table(app).keys[0] == "alpha"
        # What is on screen: the header, and each row's cells under it.
        lines = app.screen.query_one("#fleet-header", Static).render().plain  # type: ignore[union-attr]
        assert lines.split() == [
            "session",
            "repo",
            "state",
            "steps",
            "elapsed",
            "tests",
            "cost",
            "last",
            "action",
        ]
        drawn = [_table(app).render_line(y).text for y in range(4)]
        assert drawn[0].split()[:4] == ["alpha", "calc", "running", "2"]
        assert drawn[0].rstrip().endswith("$ make test")

        # Attach: the replay viewer follows the session as it grows.
        _table(app).move_cursor(row=0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen), "the replay viewer")
        timeline = app.screen.query_one(Timeline)
        await wait_for(pilot, lambda: timeline.row_count == 4, "the session's steps")
        runs["alpha"].command("echo still here")
        # The row count is the source's, which the viewer's loading thread grows; the cursor
        # follows when the app handles the growth, a message later: wait for both.
        await wait_for(
            pilot,
            lambda: timeline.row_count == 6 and timeline.cursor == 5,
            "the new steps, followed: the cursor stays on the last step",
        )


async def test_a_stuck_session_stands_out_and_can_be_shown_alone(tmp_path: Path) -> None:
    done = GrowingRun(tmp_path, "done")
    done.command("ls")
    done.finish("all good")
    GrowingRun(tmp_path, "stalled").command("sleep 600")
    app = FleetApp(Fleet(tmp_path, stuck_after=1), interval=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: _first_poll_shown(app), "the fleet screen")
        await wait_for(pilot, lambda: _table(app).row_count == 2, "two sessions")
        await wait_for(
            pilot, lambda: _cell(app, "stalled", "state") == "stuck", "the stalled session stuck"
        )
        assert _cell(app, "done", "state") == "finished"  # a finished session is never stuck
        await pilot.press("S")
        await wait_for(pilot, lambda: _table(app).row_count == 1, "stuck sessions only")
        assert _cell(app, "stalled", "session") == "stalled"
        await pilot.press("S")
        await wait_for(pilot, lambda: _table(app).row_count == 2, "every session again")


async def test_marked_runs_compare_side_by_side_with_the_first_divergence_highlighted(
    tmp_path: Path,
) -> None:
    for key, detour in (("run-a", False), ("run-b", True)):
        run = GrowingRun(tmp_path, key)
        run.command("ls")
        run.command("cat setup.cfg")
        if detour:
            run.command("grep -rn mean src")  # the third step: only run-b takes it
        run.command("python -m pytest")
        run.finish("done")
    app = FleetApp(Fleet(tmp_path), interval=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: _first_poll_shown(app), "the fleet screen")
        await wait_for(pilot, lambda: _table(app).row_count == 2, "two sessions")
        await pilot.press("equals_sign")  # nothing marked: a notice, no screen
        assert isinstance(app.screen, FleetScreen)
        for row in (0, 1):
            _table(app).move_cursor(row=row)
            await pilot.press("m")
        assert _cell(app, "run-a", "session") == "● run-a"
        await pilot.press("equals_sign")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen), "the comparison")
        grid = app.screen.query_one(DataTable)
        await wait_for(pilot, lambda: grid.row_count == 5, "the aligned rows")
        assert grid.cursor_row == 2  # on the first divergence
        assert str(grid.get_cell_at((2, 1))) == "partial"
        assert "grep -rn mean src" in str(grid.get_cell_at((2, 3)))
        assert str(grid.get_cell_at((2, 2))) == "·"
        summary = str(app.screen.query_one("#compare-summary", Static).render())
        assert "First divergence: row 3, a step not every run took." in summary
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), "back to the fleet")
