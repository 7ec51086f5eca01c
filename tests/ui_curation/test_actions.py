"""The curation screen's actions on fixed problems (no generator run): the filter holds after a
decision, marks clear after an action on them, export asks where, survivors show as diffs."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, Static, TextArea

from simulator.session import Session
from tests.ui.helpers import wait_for
from tests.ui_curation.conftest import figured_problems, math_line
from widgets.curation.app import CurationApp
from widgets.curation.dialogs import AskExportPath, AskText, SurvivorsScreen
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable


def _names(screen: CurationScreen) -> list[str]:
    return [screen.rows[i].function for i in screen.shown]


async def test_a_decision_reapplies_the_filter_and_clears_the_marks(
    session: Session, tmp_path: Path
) -> None:
    problems = figured_problems(session)
    for problem in problems:  # all three valid: the filter `valid` shows them all
        problem.curation.state = "valid"  # type: ignore[assignment]
    app = CurationApp(session, problems, export_path=tmp_path / "out.jsonl", by="ada")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        await pilot.press("slash", *"valid", "enter")
        assert _names(screen) == ["clamp", "sign", "scale"]
        table = screen.query_one(TargetTable)

        # accepting the highlighted one: it leaves the table, the next row takes its place
        table.move_cursor(1)
        await pilot.pause()
        assert screen.current is not None and screen.rows[screen.current].function == "sign"
        await pilot.press("a")
        await pilot.pause()
        assert _names(screen) == ["clamp", "scale"]
        assert screen.rows[screen.current].function == "scale"
        assert screen.query_one("#curation-source").lines  # type: ignore[attr-defined]

        # a note keeps the target (it still matches); marks go once the action is done
        table.move_cursor(0)
        await pilot.press("space", "down", "space")
        assert len(screen.marked) == 2
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, AskText), "the note prompt")
        await pilot.press(*"check boundaries", "enter")
        await wait_for(pilot, lambda: app.screen is screen, "the prompt to close")
        assert screen.marked == set()
        assert _names(screen) == ["clamp", "scale"]
        assert all(
            p.curation.notes == ["check boundaries"]
            for p in problems
            if p.target["qualname"] != "sign"
        )

        # a rejection cancelled with Escape keeps the marks; rejecting both empties the table
        await pilot.press("space", "up", "space", "x")
        await wait_for(pilot, lambda: isinstance(app.screen, AskText), "the reason prompt")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the prompt to close")
        assert len(screen.marked) == 2
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, AskText), "the reason prompt")
        await pilot.press(*"too few calls", "enter")
        await wait_for(pilot, lambda: screen.shown == [], "both to leave the table")
        assert screen.marked == set()
        title = str(screen.query_one("#curation-title", Static).render())
        assert "0 of 3 shown" in title

        # the cursor stays on its target when the filter changes and it is still shown
        screen.query_one("#curation-filter", Input).value = ""
        await pilot.pause()
        table.move_cursor(screen.shown.index(screen.current or 0))
        kept = screen.current
        screen.query_one("#curation-filter", Input).value = "a"  # clamp, scale, tools/math
        await pilot.pause()
        assert screen.current == kept


async def test_export_asks_where_and_does_not_replace_a_file_unasked(
    session: Session, tmp_path: Path
) -> None:
    problems = figured_problems(session)
    problems.reverse()  # generation order is not the export order
    default = tmp_path / "tools-problems.jsonl"
    app = CurationApp(session, problems, export_path=default, by="ada")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)

        # Escape cancels: nothing written
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, AskExportPath), "the path prompt")
        field = app.screen.query_one(Input)
        assert field.value == str(default)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the prompt to close")
        assert not default.exists()

        # Enter accepts the default; the problems are in file and line order
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, AskExportPath), "the path prompt")
        await pilot.press("enter")
        await wait_for(pilot, default.exists, "the export")
        names = [
            json.loads(line)["target"]["qualname"] for line in default.read_text().splitlines()
        ]
        assert names == ["clamp", "sign", "scale"]

        # an existing file: the first Enter says so, the second replaces it
        other = tmp_path / "kept.jsonl"
        other.write_text("precious\n")
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, AskExportPath), "the path prompt")
        prompt = app.screen
        prompt.query_one(Input).value = str(other)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is prompt and other.read_text() == "precious\n"
        hint = str(prompt.query_one("#ask-hint", Static).render())
        assert "kept.jsonl exists" in hint and "Enter again replaces it" in hint
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is screen, "the prompt to close")
        assert len(other.read_text().splitlines()) == 3

        # a folder that does not exist is said, not a traceback
        await pilot.press("ctrl+e")
        await wait_for(pilot, lambda: isinstance(app.screen, AskExportPath), "the path prompt")
        prompt = app.screen
        assert prompt.query_one(Input).value == str(other)  # the last place is the default
        prompt.query_one(Input).value = str(tmp_path / "nowhere" / "x.jsonl")
        await pilot.press("enter")
        await pilot.pause()
        assert "There is no folder" in str(prompt.query_one("#ask-hint", Static).render())
        await pilot.press("escape")


async def test_surviving_mutants_show_as_diffs(session: Session, tmp_path: Path) -> None:
    problems = figured_problems(session)
    app = CurationApp(session, problems, export_path=tmp_path / "out.jsonl", by="ada")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        table = screen.query_one(TargetTable)
        sign = next(i for i, p in enumerate(problems) if p.target["qualname"] == "sign")
        table.move_cursor(screen.shown.index(sign))
        await pilot.pause()
        status = str(screen.query_one("#curation-status", Static).render())
        assert "2 surviving mutant(s) (d shows them)" in status
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SurvivorsScreen), "the survivors")
        shown = app.screen
        text = "\n".join(str(w.render()) for w in shown.query(Static))
        assert "2 of 3 mutants survive" in text
        assert "-    if number < 0:" in text and "+    if number <= 0:" in text
        assert "+    if (not (number < 0)):" in text
        assert "never runs this line" not in text  # line 19 runs (partly covered)
        await pilot.press("n", "pagedown", "p")  # the keys scroll and jump without error
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the survivors to close")

        # a survivor on a line the harness never runs says so: nothing checks it at all
        coverage = problems[sign].validation.coverage  # type: ignore[union-attr]
        coverage["missed_lines"] = [math_line("    if number < 0:")]  # type: ignore[index]
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SurvivorsScreen), "the survivors")
        heads = [str(w.render()) for w in app.screen.query(".survivor-head")]
        assert len(heads) == 2 and all("the harness never runs this line" in h for h in heads)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the survivors to close")

        # a target whose mutants never ran says so instead of an empty dialog
        problems[sign].validation.mutation = None  # type: ignore[union-attr]
        await pilot.press("d")
        await pilot.pause()
        assert app.screen is screen
        assert "no mutants ran" in str(screen.query_one("#curation-status", Static).render())


async def test_the_first_target_is_in_view_when_the_screen_opens(
    session: Session, tmp_path: Path
) -> None:
    problems = figured_problems(session)
    for problem in problems:  # no harness yet: nothing marked, the view starts at the def
        problem.harness = None
        problem.validation = None
    app = CurationApp(session, problems, export_path=tmp_path / "out.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        await pilot.pause()
        view = screen.query_one("#curation-source")
        first = problems[screen.shown[0]].target
        assert first["qualname"] == "clamp"
        assert view.scroll_offset.y == first["start_line"] - 1
        harness = screen.query_one("#curation-harness", TextArea)
        assert harness.text == "" and "g generates one" in str(harness.placeholder)


async def test_the_harness_view_opens_at_its_cases(session: Session, tmp_path: Path) -> None:
    problems = figured_problems(session)
    header = "".join(f"# header line {n}\n" for n in range(30))
    for problem in problems:
        assert problem.harness is not None
        problem.harness.text = header + problem.harness.text + "\n" * 30
        problem.harness.notes = ["3 distinct calls recorded, 5 dropped"]
    app = CurationApp(session, problems, export_path=tmp_path / "out.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        await pilot.pause()
        harness = screen.query_one("#curation-harness", TextArea)
        cases = harness.text.splitlines().index("CASES = [")
        assert harness.scroll_offset.y == cases - 1
        # what the generator kept and dropped is above the harness; the file above the source
        assert harness.border_title == "harness (traced); 3 distinct calls recorded, 5 dropped"
        source = screen.query_one("#curation-source")
        assert source.border_title == "tools/math.py · clamp"
