"""Issue 26's curation minors, driven as a curator does: the filter's alternatives, notes seen
in the table, export of accepted problems only, M asking before a worse harness replaces a
better one, an edited harness keeping its scores (marked stale), a surviving mutant marked
equivalent, a model regeneration recorded as the person's."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Checkbox, Input, Static

from simulator.dataset.readers import read_problems
from simulator.dataset.schema import CurationState
from simulator.session import Session
from tests.ui.helpers import wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.curation.app import CurationApp
from widgets.curation.dialogs import AskExportPath, AskText
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable


def _screen(app: CurationApp) -> CurationScreen:
    screen = app.screen
    assert isinstance(screen, CurationScreen)
    return screen


def _shown(screen: CurationScreen) -> list[str]:
    return [screen.rows[i].function for i in screen.shown]


def _table_text(screen: CurationScreen) -> list[str]:
    table = screen.query_one(TargetTable)
    return [table.render_line(y).text for y in range(table.size.height)]


async def test_the_filter_takes_alternatives(session: Session, tmp_path: Path) -> None:
    """clamp accepted, scale rejected, sign generated at 25%: `|` (or `or`) joins
    alternatives, spaces still join words that must all hold."""
    app = CurationApp(session, figured_problems(session), export_path=tmp_path / "x.jsonl")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = _screen(app)
        await pilot.press("slash", *"accepted | cov<50")
        await wait_for(pilot, lambda: screen.query_text == "accepted | cov<50", "the filter")
        assert _shown(screen) == ["clamp", "sign"]
        box = screen.query_one("#curation-filter", Input)
        box.value = "rejected or sign"
        await wait_for(pilot, lambda: _shown(screen) == ["sign", "scale"], "either")
        box.value = "generated cov<50 | accepted mut<50"  # the second alternative holds nowhere
        await wait_for(pilot, lambda: _shown(screen) == ["sign"], "both words of one")


async def test_a_note_shows_in_the_table_and_can_be_filtered_on(
    session: Session, tmp_path: Path
) -> None:
    app = CurationApp(session, figured_problems(session), export_path=tmp_path / "x.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = _screen(app)
        await wait_for(pilot, lambda: len(screen.shown) == 3, "the table")
        table = screen.query_one(TargetTable)
        sign = screen.shown.index(
            next(i for i in screen.shown if screen.rows[i].function == "sign")
        )
        table.move_cursor(sign)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, AskText), "the note box")
        await pilot.press(*"zero case missing", "enter")
        await wait_for(
            pilot, lambda: screen.problems[screen.shown[sign]].curation.notes, "the note"
        )
        await pilot.pause()
        [row] = [r for r in _table_text(screen) if "sign" in r]
        assert "✎" in row, row
        assert not any("✎" in r for r in _table_text(screen) if "clamp" in r or "scale" in r)
        await pilot.press("up", "down")  # the status line describes the selected target
        status = str(screen.query_one("#curation-status", Static).render())
        assert "✎ zero case missing" in status, status
        screen.query_one("#curation-filter", Input).value = "noted"
        await wait_for(pilot, lambda: _shown(screen) == ["sign"], "noted targets only")


async def test_export_accepted_only_without_stale_reasons(session: Session, tmp_path: Path) -> None:
    problems = figured_problems(session)
    sign = next(p for p in problems if p.target["qualname"] == "sign")
    sign.curation.mark(CurationState.GENERATED, reason="branch coverage 25% < 80%")
    saves = tmp_path / "tools-problems.jsonl"
    app = CurationApp(session, problems, export_path=saves, by="ada")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = _screen(app)
        await wait_for(pilot, lambda: len(screen.shown) == 3, "the table")
        screen.query_one(TargetTable).move_cursor(_shown(screen).index("sign"))
        await pilot.press("a")  # the person accepts sign despite the shortfall
        await wait_for(pilot, lambda: sign.curation.state == CurationState.ACCEPTED, "accepted")
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, AskExportPath), "the export box")
        box = app.screen
        out = tmp_path / "accepted.jsonl"
        box.query_one(Input).value = str(out)
        await pilot.press("tab", "space")  # the "accepted only" box
        assert box.query_one(Checkbox).value
        await pilot.press("enter")
        await wait_for(pilot, out.exists, "the export")
        exported = {p.target["qualname"]: p for p in read_problems(out)}
        assert sorted(exported) == ["clamp", "sign"]  # scale (rejected) is not in it
        assert exported["sign"].curation.reasons == []  # accepted: no stale shortfall
        assert "branch coverage 25% < 80%" in [e.reason for e in exported["sign"].curation.history]
        assert screen.export_path == saves  # decisions are still saved to the full file
        assert len(read_problems(saves)) == 3
