"""Keys typed in a burst on the fleet view are applied in order (issue 26: the key gate of major
8 on `reposim fleet`): `/` must open the filter before the letters after it are read, or they
fall on the table as one-key actions (`s` sorts, `m` marks a session)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from simulator.fleet import Fleet
from tests.fleet.helpers import GrowingRun
from tests.ui.helpers import key_burst, wait_for
from widgets.fleet import FleetApp, FleetScreen
from widgets.fleet.table import FleetTable


async def test_a_filter_typed_in_a_burst_lands_in_the_filter(tmp_path: Path) -> None:
    for key in ("alpha", "smoke"):
        GrowingRun(tmp_path, key).command("ls")
    app = FleetApp(Fleet(tmp_path), interval=0.05)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, FleetScreen)
                and app.screen.query_one(FleetTable).row_count == 2
            ),
            "two sessions",
        )
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        sort = screen.sort_index
        key_burst(app, "/", "s", "m", "o")
        box = screen.query_one("#fleet-filter", Input)
        await wait_for(pilot, lambda: box.value == "smo", "the filter typed")
        await pilot.pause()
        assert screen.sort_index == sort  # `s` was typed, not taken as Sort
        assert screen.marked == []  # nor `m` as Mark
        await wait_for(pilot, lambda: screen.query_one(FleetTable).row_count == 1, "one session")
