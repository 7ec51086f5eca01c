"""The curation table at 80x24 (issue 26, major 6): every column on screen (short headers,
narrow figures, the file's name kept) and about half the screen's rows for targets."""

from __future__ import annotations

from pathlib import Path

from simulator.session import Session
from tests.ui.helpers import wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.curation.app import CurationApp
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable


def _screen_text(table: TargetTable) -> list[str]:
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_every_column_fits_at_80x24_and_more_rows_show(
    session: Session, tmp_path: Path
) -> None:
    base = figured_problems(session)
    problems = []
    for n in range(12):  # a longer path and more targets than fit the fixture's three
        for problem in base:
            copy = type(problem).from_dict(problem.as_dict())
            copy.target["path"] = f"src/tools/deeply/nested/package_{n}/math_helpers.py"
            copy.target["qualname"] = f"{problem.target['qualname']}_variant_{n}"
            copy.id = f"{copy.id}-{n}"
            problems.append(copy)
    app = CurationApp(session, problems, export_path=tmp_path / "out.jsonl", by="ada")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, CurationScreen), "the screen")
        table = app.screen.query_one(TargetTable)
        await wait_for(pilot, lambda: table.size.width == 80, "the layout")
        await wait_for(
            pilot,
            lambda: sum(1 for r in _screen_text(table)[1:] if "sign_variant" in r) > 0,
            "the rows to be drawn",
        )
        header, *rows = _screen_text(table)
        for name in ("function", "file", "state", "cov", "mut", "!", "run", "par", "npk", "why"):
            assert name in header, header
        visible = [r for r in rows if r.strip()]
        assert len(visible) >= 8, visible  # was 4
        sign = next(r for r in visible if "sign_variant" in r)
        # coverage, mutation, flaky (none here) and the last run's seconds are on screen
        assert "25%" in sign and "33%" in sign and "1.5s" in sign, sign
        assert "helpers.py" in sign, sign  # the file's name, not the folder's start
        assert all(len(r.rstrip()) <= 80 for r in [header, *visible])
        assert table.virtual_size.width <= 80
