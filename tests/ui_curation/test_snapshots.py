"""The look of the curation screen, fixed at 80x24 and 160x48 in both themes.

The problems are the fixture repository's targets with fixed validation figures (a generator's
timings and a model's text would not be deterministic); the low-coverage target is selected, so
the gutter shows covered, partial and missed lines. Update after an intended change with
`pytest tests/ui_curation --snapshot-update` and look at the report before committing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.ui.helpers import every_theme_at_both_sizes, settled_frame, unstarted_session, wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.curation.app import CurationApp
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable


@every_theme_at_both_sizes
def test_curation_screen_with_a_low_coverage_target(
    snap_compare: Any, tools_repo: Path, tmp_path: Path, size: tuple[int, int], theme: str
) -> None:
    session = unstarted_session(tools_repo, tmp_path / "trajectory.jsonl")
    problems = figured_problems(session)
    app = CurationApp(
        session, problems, export_path=tmp_path / "out.jsonl", by="ada", theme_name=theme
    )

    async def run_before(pilot: Any) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, CurationScreen), "the screen")
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        table = screen.query_one(TargetTable)
        sign = next(i for i, p in enumerate(problems) if p.target["qualname"] == "sign")
        table.move_cursor(screen.shown.index(sign))
        await wait_for(pilot, lambda: screen.current == sign, "the selection")
        await settled_frame(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
