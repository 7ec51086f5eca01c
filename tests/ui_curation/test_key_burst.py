"""Keys typed in a burst on the curation screen are applied in order (issue 26: the key gate of
major 8 on `reposim curate`): `/` must open the filter before the letters after it are read, or
they fall on the table as one-key actions (`s` sorts, `a` accepts)."""

from __future__ import annotations

from pathlib import Path

from simulator.session import Session
from tests.ui.helpers import key_burst, wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.curation.app import CurationApp
from widgets.curation.screen import CurationScreen


async def test_a_filter_typed_in_a_burst_lands_in_the_filter(
    session: Session, tmp_path: Path
) -> None:
    problems = figured_problems(session)
    states = [str(p.curation.state) for p in problems]
    app = CurationApp(session, problems, export_path=tmp_path / "x.jsonl")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        await wait_for(pilot, lambda: len(screen.shown) == 3, "the table")
        key_burst(app, "/", "s", "c", "a", "enter", "down")
        await wait_for(pilot, lambda: screen.query_text == "sca", "the filter typed")
        await pilot.pause()
        assert [screen.rows[i].function for i in screen.shown] == ["scale"]
        assert screen.sort == "file"  # `s` was typed, not taken as Sort
        assert [str(p.curation.state) for p in problems] == states  # `a` accepted nothing
