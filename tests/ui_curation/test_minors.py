"""Issue 26's curation minors, driven as a curator does: the filter's alternatives, notes seen
in the table, export of accepted problems only, M asking before a worse harness replaces a
better one, an edited harness keeping its scores (marked stale), a surviving mutant marked
equivalent, a model regeneration recorded as the person's."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import Checkbox, Input, Label, Static, TextArea

from simulator.dataset.readers import read_problems
from simulator.dataset.schema import CurationState
from simulator.dataset.writers import write_jsonl
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems, remutate
from simulator.session import Session
from tests.agent.fake_llm import FakeLLM, Reply, fake_client
from tests.conftest import SessionOn
from tests.ui.helpers import WAIT, recorded, wait_for
from tests.ui_curation.conftest import figured_problems
from widgets.curation.app import CurationApp
from widgets.curation.dialogs import AskExportPath, AskText, AskYesNo, SurvivorsScreen
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


WEAK_SIGN = """Only the positive case:
```python
def test_positive():
    assert same(candidate(7), reference(7))
```"""


async def test_m_asks_before_a_worse_harness_replaces_a_better_one(
    session: Session, tmp_path: Path
) -> None:
    """sign's harness scores 100%/100%; the model's scores lower: M asks, n keeps the current
    one, and the trajectory says the person asked for the regeneration and kept theirs."""
    problems = figured_problems(session)
    sign = next(i for i, p in enumerate(problems) if p.target["qualname"] == "sign")
    validation = problems[sign].validation
    assert validation is not None and validation.coverage and validation.mutation
    validation.coverage["rate"] = 1.0
    validation.mutation.update(score=1.0, killed=3, survivors=[])
    before = problems[sign]
    server = FakeLLM([Reply(WEAK_SIGN)]).start()
    client = fake_client(server)
    options = HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=8), rounds=1)
    app = CurationApp(
        session,
        problems,
        export_path=tmp_path / "x.jsonl",
        options=options,
        client=client,
        by="ada",
    )
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            screen = _screen(app)
            await wait_for(pilot, lambda: len(screen.shown) == 3, "the table")
            screen.query_one(TargetTable).move_cursor(_shown(screen).index("sign"))
            await pilot.press("M")
            # the model's harness is validated first (its tests, then mutants): minutes at load 25
            deadline = time.monotonic() + 300
            while not isinstance(app.screen, AskYesNo) and screen.busy:
                assert time.monotonic() < deadline, "no question within 300 s"
                await pilot.pause(0.1)
            status = str(screen.query_one("#curation-status", Static).render())
            assert isinstance(app.screen, AskYesNo), (status, screen.problems[sign].validation)
            # The dialog is pushed before its question is mounted (CI run 20 at load ~10 found
            # no Label yet): wait for it.
            dialog = app.screen
            await wait_for(pilot, lambda: bool(dialog.query(Label)), "the question")
            question = str(dialog.query_one(Label).render())
            assert "scores" in question and "100% coverage, 100% mutation" in question
            await pilot.press("n")
            await wait_for(pilot, lambda: screen.busy == 0, "the regeneration to end")
            assert screen.problems[sign] is before  # the better harness stays
            assert screen.rows[sign].coverage == 1.0
    finally:
        server.close()
    events = recorded(session.trajectory_path)
    starts = [e for e in events if e["kind"] == "workflow.start"]
    asked = [e for e in starts if e["payload"]["params"].get("action") == "regenerate"]
    assert asked and asked[0]["actor"] == "human", starts
    steps = [e["payload"] for e in events if e["kind"] == "workflow.step"]
    by = {(s["step"], s["detail"].get("by")) for s in steps}
    assert {("regenerate", "ada"), ("keep", "ada")} <= by, by


USABLE = (
    "candidate = load_candidate(TARGET)\n\n\n"
    "def test_positive():\n    assert same(candidate(7), reference(7))\n"
)


async def test_a_saved_edit_keeps_the_figures_marked_stale(
    session: Session, tmp_path: Path
) -> None:
    problems = figured_problems(session)
    sign = next(i for i, p in enumerate(problems) if p.target["qualname"] == "sign")
    harness = problems[sign].harness
    assert harness is not None
    harness.text = USABLE
    app = CurationApp(session, problems, export_path=tmp_path / "x.jsonl", by="ada")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = _screen(app)
        await wait_for(pilot, lambda: len(screen.shown) == 3, "the table")
        screen.query_one(TargetTable).move_cursor(_shown(screen).index("sign"))
        await wait_for(pilot, lambda: screen.current == sign, "sign selected")
        box = screen.query_one("#curation-harness", TextArea)
        box.focus()
        box.insert("# the zero case next\n", box.document.end)
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: screen.rows[sign].state == "edited",
            "the edit saved: " + str(screen.query_one("#curation-status", Static).render()),
        )
        row = screen.rows[sign]
        assert (row.coverage, row.mutation, row.stale) == (0.25, 0.33, True)  # not cleared
        await pilot.press("escape", "up", "down")
        status = str(screen.query_one("#curation-status", Static).render())
        assert "from before the edit" in status, status
    saved = {p.target["qualname"]: p for p in read_problems(tmp_path / "x.jsonl")}
    validation = saved["sign"].validation
    assert validation is not None and validation.stale and validation.coverage_rate == 0.25


async def test_a_surviving_mutant_marked_equivalent_leaves_the_score(
    session: Session, tmp_path: Path
) -> None:
    """`e` on a surviving mutant's diff marks it equivalent: the person's decision, in the
    trajectory and the dataset; the score no longer counts it (said in the dialog and the
    status line), a second `e` takes the mark back, and a mutant run afterwards keeps
    excluding it. The harness is traced from the fixture's tests (sign(7) only, so the
    mutants of the `< 0` branch survive) and its mutants really run."""
    [target] = find_targets(session.source, selectors=["sign"])
    # recorded cases only: cases derived from sign(7) would reach the `< 0` branch and kill
    # the mutants this test marks
    [problem] = await make_problems(session, [target], HarnessOptions(derive_runs=0))
    figures = problem.validation.mutation if problem.validation else None
    assert figures and len(figures["survivors"]) >= 2, figures
    total, killed = figures["total"], figures["killed"]
    first = figures["survivors"][0]
    dataset = tmp_path / "x.jsonl"
    app = CurationApp(session, [problem], export_path=dataset, by="ada")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = _screen(app)
        await wait_for(pilot, lambda: screen.current == 0, "sign selected")
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, SurvivorsScreen), "the survivors")
        dialog = app.screen
        await pilot.press("e")
        marked = round(killed / (total - 1), 4)
        await wait_for(pilot, lambda: screen.rows[0].mutation == marked, "one fewer counted")
        heads = [str(w.render()) for w in dialog.query(".survivor-head")]
        assert "equivalent" in heads[0] and "not counted" in heads[0], heads
        assert "marked equivalent" not in heads[1], heads
        title = str(dialog.query_one("#survivors-title", Static).render())
        survive = f"{len(figures['survivors']) - 1} of {total - 1} mutants survive"
        assert survive in title and "1 marked equivalent, not counted" in title, title
        [saved] = read_problems(dataset)
        assert [m["description"] for m in saved.curation.equivalent] == [first["description"]]
        assert saved.validation and saved.validation.mutation_score == marked
        assert saved.curation.history[-1].by == "ada"
        # nor does it count as a mutant that should have run
        assert not [r for r in saved.validation.reasons if "mutant(s) ran" in r], saved.validation
        await pilot.press("e")  # taken back
        before = round(killed / total, 4)
        await wait_for(pilot, lambda: screen.rows[0].mutation == before, "counted again")
        await pilot.press("e")
        await wait_for(pilot, lambda: screen.rows[0].mutation == marked, "marked again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the survivors to close")
        status = str(screen.query_one("#curation-status", Static).render())
        assert "1 marked equivalent (not counted)" in status, status

        # the mutants run again: the marked one still survives and is still left out
        await pilot.press("m")
        await wait_for(
            pilot,
            lambda: "mutants: 1 done" in str(screen.query_one("#curation-status").render()),
            "the mutant run",
            within=4 * WAIT,
        )
        again = problem.validation.mutation if problem.validation else None
        assert again and "marked_equivalent" in again, again
        assert [m["description"] for m in again["marked_equivalent"]] == [first["description"]]
        assert first["description"] not in [m["description"] for m in again["survivors"]]
        assert (again["total"], again["score"]) == (total - 1, marked)
    events = recorded(session.trajectory_path)
    steps = [e for e in events if e["kind"] == "workflow.step"]
    marks = [s for s in steps if s["payload"]["step"] == "equivalent"]
    assert len(marks) == 3 and all(s["actor"] == "human" for s in marks), marks
    assert [s["payload"]["detail"]["by"] for s in marks] == ["ada"] * 3


async def test_m_on_a_problem_read_from_a_file_runs_in_a_new_session(
    tools_repo: Path, session_on: SessionOn, tmp_path: Path
) -> None:
    """`reposim curate problems.jsonl` then `m`: the mutants run in a session that did not
    make the harness (the reference snapshot is written there too); a harness that fails in
    the mutant runner reads as "no mutation score", not a crash."""
    first = await session_on(tools_repo, "first.jsonl")
    [target] = find_targets(first.source, selectors=["sign"])
    [made] = await make_problems(first, [target], HarnessOptions())
    assert made.validation and made.validation.mutation_score is not None
    dataset = tmp_path / "sign.jsonl"
    write_jsonl([made], dataset)
    later = await session_on(tools_repo, "later.jsonl")
    [problem] = read_problems(dataset)
    figures = await remutate(later, problem, HarnessOptions())
    assert not figures.get("error") and figures["total"] > 0, figures
    assert problem.validation and problem.validation.mutation_score == figures["score"]

    assert problem.harness is not None
    problem.harness.text = problem.harness.text.replace("returns=1", "returns=2")
    broken = await remutate(later, problem, HarnessOptions())
    assert broken.get("error") and broken["score"] is None, broken
    assert problem.validation and problem.validation.mutation_score is None
    assert any("no mutation score" in r for r in problem.validation.reasons)
