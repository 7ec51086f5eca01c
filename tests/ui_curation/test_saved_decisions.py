"""Curation decisions reach the problems file the moment they are made (issue 26, major 1):
a curator who quits with Ctrl+Q, Ctrl+C or a closed terminal loses none."""

from __future__ import annotations

from pathlib import Path

from simulator.dataset.readers import read_problems
from simulator.dataset.writers import write_jsonl
from simulator.session import Session
from tests.ui.helpers import wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.curation.app import CurationApp
from widgets.curation.model import default_export
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable


def _states(path: Path) -> dict[str, str]:
    return {str(p.target["qualname"]): str(p.curation.state) for p in read_problems(path)}


async def test_an_accept_is_in_the_dataset_before_ctrl_q(session: Session, tmp_path: Path) -> None:
    dataset = tmp_path / "problems.jsonl"
    write_jsonl(figured_problems(session), dataset)
    assert _states(dataset)["sign"] == "generated"
    app = CurationApp(session, read_problems(dataset), export_path=dataset, by="ada")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        table = screen.query_one(TargetTable)
        sign = next(i for i, r in enumerate(screen.rows) if r.function == "sign")
        table.move_cursor(table.shown.index(sign))
        await wait_for(pilot, lambda: screen.current == sign, "the cursor on sign")
        await pilot.press("a")
        # on disk already: a Ctrl+C, a kill or a closed terminal from here on loses nothing
        await wait_for(pilot, lambda: _states(dataset)["sign"] == "accepted", "sign saved")
        await pilot.press("ctrl+q")
    assert app.saved_to == dataset
    saved = {str(p.target["qualname"]): p for p in read_problems(dataset)}
    assert str(saved["sign"].curation.state) == "accepted"
    assert saved["sign"].curation.history[-1].by == "ada"
    assert _states(dataset)["scale"] == "rejected"  # the others as they were


def test_a_repository_never_replaces_an_earlier_sessions_file(tmp_path: Path) -> None:
    first = default_export(tmp_path, "tools")
    assert first == tmp_path / "tools-problems.jsonl"
    first.write_text("{}\n")
    assert default_export(tmp_path, "tools") == tmp_path / "tools-problems-2.jsonl"
