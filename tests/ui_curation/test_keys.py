"""Every curation key is in F1 with its binding id and in the command palette, standalone
(`reposim curate`) and over `reposim open`; keymap.toml remaps them."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandPalette
from textual.widgets import DataTable

from simulator.session import Session
from tests.ui.helpers import palette_highlights, running, wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.app import RepoSimApp
from widgets.curation.app import CurationApp
from widgets.curation.commands import CurationCommands
from widgets.curation.keys import CURATION_BINDINGS, SURVIVORS_BINDINGS
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable
from widgets.help_screen import HelpScreen

IDS = {b.id for b in [*CURATION_BINDINGS, *SURVIVORS_BINDINGS]}


def _help_filled(app: CurationApp | RepoSimApp) -> bool:
    """F1 is up and its table has its columns and rows (filled after the screen mounts)."""
    if not isinstance(app.screen, HelpScreen):
        return False
    tables = app.screen.query(DataTable)
    if not tables:
        return False
    labels = {str(column.label) for column in tables.first().columns.values()}
    return {"Where", "Keys", "Action", "Id"} <= labels and tables.first().row_count > 0


def _help_rows(app: CurationApp | RepoSimApp) -> list[tuple[str, ...]]:
    """F1's rows as (where, keys, action, id), whatever order its columns are shown in."""
    table = app.screen.query_one(DataTable)
    labels = [str(column.label) for column in table.columns.values()]
    order = [labels.index(name) for name in ("Where", "Keys", "Action", "Id")]
    rows = [table.get_row_at(i) for i in range(table.row_count)]
    return [tuple(str(row[at]) for at in order) for row in rows]


async def test_f1_and_the_palette_list_every_curation_key(
    session: Session, tmp_path: Path, config_home: Path
) -> None:
    config_home.mkdir(parents=True, exist_ok=True)
    (config_home / "keymap.toml").write_text('"curation.accept" = "A"\n')
    problems = figured_problems(session)
    app = CurationApp(session, problems, export_path=tmp_path / "x.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        await pilot.press("f1")
        await wait_for(pilot, lambda: _help_filled(app), "F1's table")
        rows = _help_rows(app)
        assert {r[3] for r in rows if r[3].startswith("curation.")} == IDS
        accept = next(r for r in rows if r[3] == "curation.accept")
        assert accept[:3] == ("Curation", "A", "Accept the selection")  # remapped
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "F1 to close")

        # the remapped key works, the old one no longer does
        sign = next(i for i, p in enumerate(problems) if p.target["qualname"] == "sign")
        screen.query_one(TargetTable).move_cursor(screen.shown.index(sign))
        await pilot.press("a")
        assert problems[sign].curation.state == "generated"
        await pilot.press("A")
        assert problems[sign].curation.state == "accepted"

        # the palette: one entry per key, by what it does, with its key and id
        provider = CurationCommands(screen)
        titles = [hit.text async for hit in provider.discover()]
        assert len(titles) == len(CURATION_BINDINGS)
        assert "Curation: Show the surviving mutants as diffs" in titles
        hits = [hit async for hit in provider.search("regenerate model")]
        assert hits and "M  (curation.generate_model)" in str(hits[0].help)

        # chosen from the palette, an entry runs the screen's action
        app.action_command_palette()
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
        await pilot.press(*"sort by the next")
        await wait_for(pilot, lambda: palette_highlights(app, "sort"), "the palette's sort")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.sort == "function", "the sort to change")


async def test_f1_over_reposim_open_lists_the_curation_keys_first(session: Session) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        [entry] = [a for a in app.palette_actions() if a.title == "Curate harnesses"]
        entry.run()
        await wait_for(pilot, lambda: isinstance(app.screen, CurationScreen), "the screen")
        await pilot.press("f1")
        await wait_for(pilot, lambda: _help_filled(app), "F1's table")
        rows = _help_rows(app)
        assert {r[3] for r in rows if r[3].startswith("curation.")} == IDS
        assert rows[0][0] == "Curation" and rows[len(IDS) - 1][0] == "Survivors"
