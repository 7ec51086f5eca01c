"""The curation screen: go through generated harnesses, fix the weak ones, accept the good ones.

It talks to the harness workflow's engine functions only (simulator.harness.workflow); every
run and every decision is recorded in the session's trajectory, and the export carries each
problem's curation state and reasons.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.command import Provider
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Input, Static, TextArea

from simulator.dataset.schema import CurationEntry, CurationState, Problem
from simulator.dataset.writers import write_jsonl
from simulator.harness.branches import BranchCoverage
from simulator.harness.target import Target
from simulator.harness.workflow import (
    HarnessOptions,
    accept,
    carry_curation,
    edit,
    make_problems,
    mark_equivalent,
    note,
    record_decision,
    regenerate,
    reject,
    remutate,
    revalidate,
)
from simulator.session import Session
from simulator.workflow import WorkflowFailure
from widgets.curation.commands import CurationCommands
from widgets.curation.dialogs import (
    AskExportPath,
    AskText,
    AskYesNo,
    ExportChoice,
    SurvivorsScreen,
)
from widgets.curation.gutter import CoverageView
from widgets.curation.keys import CURATION_BINDINGS
from widgets.curation.model import FilterError, Row, select
from widgets.curation.table import TargetTable
from widgets.footer import CoalescedFooter

if TYPE_CHECKING:
    from simulator.agent.models import ModelClient

SORTS = ("file", "function", "state", "coverage", "mutation")
__all__ = ["AskText", "CurationScreen", "ModelHost"]


def _scores(problem: Problem) -> tuple[float, float]:
    """(branch coverage, mutation score), 0 where there is none."""
    v = problem.validation
    return (v.coverage_rate or 0.0, v.mutation_score or 0.0) if v else (0.0, 0.0)


def _scores_text(problem: Problem) -> str:
    coverage, mutation = _scores(problem)
    return f"{coverage:.0%} coverage, {mutation:.0%} mutation"


def _worse(fresh: Problem, old: Problem) -> bool:
    """Whether a new harness scores lower than a validated one on either figure."""
    if old.validation is None:
        return False
    return any(new < before for new, before in zip(_scores(fresh), _scores(old), strict=True))


class ModelHost(Protocol):
    """An app that can hand out the model its agent uses (RepoSimApp, CurationApp)."""

    async def model_client(self) -> ModelClient:
        """The configured model; ModelConfigError (one sentence) when there is none."""
        ...


def export_order(problems: list[Problem]) -> list[Problem]:
    """Problems by file, then line: the same file for the same problems, whatever the order
    they were generated or sorted in."""
    return sorted(
        problems,
        key=lambda p: (
            str(p.target.get("path") or ""),
            int(p.target.get("start_line") or p.target.get("def_line") or 0),
            p.id,
        ),
    )


class CurationScreen(Screen[None]):
    """A table of targets; the selected one's source with coverage in the gutter and its
    harness, editable; run, regenerate, mutants, accept, reject, note, export."""

    CSS_PATH = str(Path(__file__).with_name("curation.tcss"))

    BINDINGS: ClassVar[list[BindingType]] = list(CURATION_BINDINGS)
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {CurationCommands}
    HELP_FIRST: ClassVar[tuple[str, ...]] = ("Curation", "Survivors")  # F1 in reposim open

    def __init__(
        self,
        session: Session,
        problems: list[Problem],
        *,
        export_path: Path,
        options: HarnessOptions | None = None,
        by: str | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.problems = problems
        self.rows = [Row.of(p) for p in problems]
        self.export_path = export_path
        self.options = options or HarnessOptions()
        self.by = by or getpass.getuser()
        self.query_text = ""
        self.sort = "file"
        self.shown: list[int] = []
        self.marked: set[int] = set()
        self.current: int | None = None
        self.busy = 0
        self._lock = asyncio.Lock()
        self._sources: dict[str, str] = {}
        self.survivors: list[str] = []  # the selected target's surviving mutants, last run
        self.saved = False  # whether anything was written to export_path this session

    # -- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("", id="curation-title")
        yield Input(
            placeholder="/ filter: valid  cov<80  mut<60  flaky  noted  name;  a | b: either",
            id="curation-filter",
        )
        yield TargetTable(id="curation-table")
        with Horizontal(id="curation-detail"):
            yield CoverageView(id="curation-source")
            # no soft wrap: a pickled value is one long line, its readable form the comment above
            yield TextArea(
                "",
                language="python",
                id="curation-harness",
                show_line_numbers=True,
                soft_wrap=False,
                placeholder="No harness yet: g generates one from the repository's tests, "
                "M with the model.",
            )
        yield Static("", id="curation-status")
        yield CoalescedFooter()

    def on_mount(self) -> None:
        self._fill()
        self.query_one(TargetTable).focus()

    def on_resize(self) -> None:
        self.set_class(self.size.height < 32, "-short")

    # -- the table ----------------------------------------------------------------------------

    def _fill(self) -> None:
        """Select and sort the rows again; the cursor stays on its target while that is
        shown, else on the row that took its place."""
        try:
            self.shown = select(self.rows, self.query_text, self.sort)
        except FilterError as exc:
            self._status(str(exc))
            return
        table = self.query_one(TargetTable)
        table.marked = self.marked
        table.set_rows(self.rows, self.shown, keep=table.current)
        self._title()

    def _refilter(self, acted_on: list[int]) -> None:
        """After an action: the filter holds again (a target that no longer matches leaves
        the table) and the marks it acted on are cleared."""
        if self.marked:
            self.marked.clear()
        before = set(self.shown)
        self._fill()
        now = set(self.shown)
        gone = [i for i in acted_on if i in before and i not in now]
        if gone and self.query_text.strip():
            names = ", ".join(self.rows[i].function for i in gone[:3])
            more = f" and {len(gone) - 3} more" if len(gone) > 3 else ""
            self.notify(
                f"{names}{more} no longer match{'es' if len(gone) == 1 else ''} "
                f"{self.query_text.strip()!r}: left the table.",
                timeout=4,
            )

    def _refresh_row(self, index: int) -> None:
        self.rows[index] = Row.of(self.problems[index])
        self.query_one(TargetTable).refresh_row(index)
        self._title()

    def _title(self) -> None:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.state] = counts.get(row.state, 0) + 1
        parts = " · ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        shown = f"{len(self.shown)} of {len(self.rows)} shown" if self.query_text else ""
        self.query_one("#curation-title", Static).update(
            f" Curation  {self.session.source.name}  {parts}  {shown}  sort: {self.sort}"
            f"  saves to {self.export_path.name}"
        )

    @on(Input.Changed, "#curation-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self._fill()

    @on(Input.Submitted, "#curation-filter")
    def _filter_done(self) -> None:
        self.query_one(TargetTable).focus()

    @on(TargetTable.Highlighted)
    def _highlighted(self, event: TargetTable.Highlighted) -> None:
        if event.index != self.current:
            self._show(event.index)

    def _cursor_index(self) -> int | None:
        return self.query_one(TargetTable).current

    def _selection(self) -> list[int]:
        if self.marked:
            return sorted(self.marked)
        index = self._cursor_index()
        return [] if index is None else [index]

    # -- the detail: source with coverage, harness -------------------------------------------

    def _source(self, path: str) -> str:
        if path not in self._sources:
            try:
                self._sources[path] = (self.session.source / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self._sources[path] = ""
        return self._sources[path]

    def _show(self, index: int) -> None:
        self.current = index
        problem = self.problems[index]
        target = problem.target
        view = self.query_one("#curation-source", CoverageView)
        span = (int(target.get("start_line") or 0), int(target.get("end_line") or -1))
        marks = self.marks(problem)
        view.show(self._source(str(target.get("path") or "")), marks, span)
        self._scroll_source(index)
        view.border_title = f"{target.get('path')} · {self.rows[index].function}"
        harness = self.query_one("#curation-harness", TextArea)
        harness.border_title = self._harness_title(problem)
        text = problem.harness.text if problem.harness else ""
        harness.load_text(text)
        # the cases (or the first test) are what a person reads, not the header above them
        lines = text.splitlines()
        first = next(
            (n for n, line in enumerate(lines) if line.startswith(("CASES = [", "def test"))), 0
        )
        harness.scroll_to(y=max(0, first - 1), animate=False, force=True)
        self._status(self._describe(problem))

    def _scroll_source(self, index: int) -> None:
        """Bring the target into view: the first line the harness misses (or partly covers)
        is what a person looks for, and a long docstring would push it below the fold if the
        view started at the def. Before the first layout the view has no height to scroll in,
        so that waits for the first refresh."""
        view = self.query_one("#curation-source", CoverageView)
        if view.size.height == 0:
            self.call_after_refresh(self._scroll_source, index)
            return
        if index != self.current:
            return
        target = self.problems[index].target
        start = int(target.get("start_line") or 0)
        marks = view.marks
        weak = [n for n, mark in marks.items() if mark != "covered"]
        focus = min(weak) if weak else min(marks, default=start)
        top = start if focus - start < view.size.height - 2 else focus - 3
        # force: before its first layout the view does not yet know it has a scrollbar
        view.scroll_to(y=max(0, top - 1), animate=False, force=True)

    @staticmethod
    def marks(problem: Problem) -> dict[int, str]:
        v = problem.validation
        if v is None or v.coverage is None:
            return {}
        return BranchCoverage.from_dict(v.coverage).line_marks()

    @staticmethod
    def _harness_title(problem: Problem) -> str:
        """The harness's generator and what it kept or dropped (why coverage may be low)."""
        harness = problem.harness
        if harness is None:
            return "no harness"
        return "; ".join([f"harness ({harness.generator})", *harness.notes])

    @staticmethod
    def _describe(problem: Problem) -> str:
        c = problem.curation
        parts = [f"{problem.target.get('id')}: {c.state}"]
        if c.reasons:
            parts.append(f"— {c.reasons[-1]}")
        if c.notes:
            more = f" (+{len(c.notes) - 1} more)" if len(c.notes) > 1 else ""
            parts.append(f"· ✎ {c.notes[-1]}{more}")
        v = problem.validation
        if v and v.stale:
            parts.append("· the figures are from before the edit (r validates it again)")
        if v and v.mutation and v.mutation.get("survivors"):
            parts.append(f"· {len(v.mutation['survivors'])} surviving mutant(s) (d shows them)")
        if v and v.mutation and v.mutation.get("marked_equivalent"):
            marked = len(v.mutation["marked_equivalent"])
            parts.append(f"· {marked} marked equivalent (not counted)")
        return " ".join(parts)

    def _status(self, text: str) -> None:
        busy = f"[working: {self.busy}] " if self.busy else ""
        self.query_one("#curation-status", Static).update(busy + text)

    # -- actions ------------------------------------------------------------------------------

    def action_close(self) -> None:
        self.dismiss(None)

    def action_focus_filter(self) -> None:
        self.query_one("#curation-filter", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one(TargetTable).focus()

    def action_toggle_mark(self) -> None:
        index = self._cursor_index()
        if index is None:
            return
        self.marked.symmetric_difference_update({index})
        self._refresh_row(index)

    def action_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._fill()

    def _names(self, chosen: list[int]) -> str:
        """`sign`, `sign and clamp`, `sign, clamp and 3 more`: what an action is about."""
        names = [self.rows[i].function for i in chosen[:2]]
        if len(chosen) > 2:
            return f"{', '.join(names)} and {len(chosen) - 2} more"
        return " and ".join(names)

    def _after_refill(self, text: str) -> None:
        """Say what an action did once the refill's new selection has shown its own line."""
        self.call_after_refresh(self._status, text)

    def _decide(self, index: int, action: str, reason: str = "") -> None:
        record_decision(self.session, self.problems[index], action, by=self.by, reason=reason)
        self._refresh_row(index)
        self._save()

    def _save(self) -> None:
        """Write every problem to the dataset now (atomically). A decision is on disk the
        moment it is made, so no way of leaving (Ctrl+Q, Ctrl+C, a closed terminal, a crash)
        loses one; a quit prompt would still lose them to a kill or a closed terminal."""
        try:
            write_jsonl(export_order(self.problems), self.export_path)
        except OSError as exc:
            self.notify(
                f"Saving the decisions to {self.export_path} failed: {exc}", severity="error"
            )
            return
        self.saved = True

    def action_accept(self) -> None:
        chosen = self._selection()
        for index in chosen:
            accept(self.problems[index], by=self.by)
            self._decide(index, "accept")
        self._refilter(chosen)
        self._after_refill(f"accepted {self._names(chosen)}")

    def action_reject(self) -> None:
        chosen = self._selection()
        if not chosen:
            return

        def done(reason: str | None) -> None:
            if not reason:
                return
            for index in chosen:
                reject(self.problems[index], by=self.by, reason=reason)
                self._decide(index, "reject", reason)
            self._refilter(chosen)
            self._after_refill(f"rejected {self._names(chosen)}: {reason}")

        self.app.push_screen(AskText(f"Why reject {self._names(chosen)}?"), done)

    def action_note(self) -> None:
        chosen = self._selection()

        def done(text: str | None) -> None:
            if not text:
                return
            for index in chosen:
                note(self.problems[index], text)
                self._decide(index, "note", text)
            self._refilter(chosen)
            self._after_refill(f"noted on {self._names(chosen)}: {text}")

        if chosen:
            self.app.push_screen(AskText(f"Note on {self._names(chosen)}:"), done)

    def action_save_harness(self) -> None:
        if self._save_harness():
            self._refilter([] if self.current is None else [self.current])

    def _save_harness(self) -> bool:
        """Keep the edited harness text in the problem (validated again on the next run)."""
        index = self.current
        if index is None:
            return False
        problem = self.problems[index]
        text = self.query_one("#curation-harness", TextArea).text
        if problem.harness is not None and text == problem.harness.text:
            return True
        try:
            edit(problem, text, by=self.by, reason="edited in the curation screen")
        except ValueError as exc:
            self._status(str(exc))
            return False
        self._decide(index, "edit", "edited in the curation screen")
        return True

    def action_export(self) -> None:
        """Ask where (the last place is the default) and whether only the accepted problems,
        then write them by file and line; an existing file is replaced only once the person
        said so. A full export becomes where later decisions are saved; an accepted-only one
        is a copy (saving every problem there later would undo the choice)."""

        def chosen(choice: ExportChoice | None) -> None:
            if choice is None:
                self._status("export cancelled")
                return
            path = choice.path
            problems = export_order(self.problems)
            if choice.accepted_only:
                problems = [p for p in problems if p.curation.state == CurationState.ACCEPTED]
            try:
                count = write_jsonl(problems, path)
            except OSError as exc:
                self.notify(f"The export failed: {exc}", severity="error")
                return
            if choice.accepted_only:
                self._status(
                    f"exported {count} accepted problems to {path}; decisions are still saved "
                    f"to {self.export_path.name}"
                )
                self.notify(f"Exported {count} accepted problems to {path}")
                return
            self.export_path = path  # and every later decision is saved there
            self.saved = True
            self._title()
            self._status(f"exported {count} problems to {path}; decisions are saved there now")
            self.notify(f"Exported {count} problems to {path}")

        accepted = sum(p.curation.state == CurationState.ACCEPTED for p in self.problems)
        self.app.push_screen(AskExportPath(self.export_path, len(self.problems), accepted), chosen)

    def action_survivors(self) -> None:
        """The selected target's surviving mutants, each as the diff the harness let through;
        `e` there marks one equivalent (recorded, saved, left out of the score)."""
        index = self.current
        if index is None:
            return
        problem = self.problems[index]
        v = problem.validation
        figures = (v.mutation or {}) if v else {}
        name = self.rows[index].function
        if not figures.get("survivors") and not figures.get("marked_equivalent"):
            ran = bool(figures.get("total"))
            self._status(f"{name}: " + ("no mutant survived" if ran else "no mutants ran (m)"))
            return
        never_run = {n for n, mark in self.marks(problem).items() if mark == "missed"}

        def equivalent(mutant: dict[str, Any]) -> dict[str, Any]:
            marked = mark_equivalent(problem, mutant, by=self.by, options=self.options)
            what = "equivalent" if marked else "not equivalent"
            self._decide(index, "equivalent", f"{mutant.get('description')}: {what}")
            self._show(index)
            return (problem.validation.mutation if problem.validation else None) or {}

        self.app.push_screen(SurvivorsScreen(name, figures, never_run, equivalent))

    def action_run(self) -> None:
        if self.current is not None and not self._save_harness():
            return
        chosen = [i for i in self._selection() if self.problems[i].harness is not None]
        self._start("run", chosen, self._run_one)

    def action_generate(self) -> None:
        self._start_generate(self._selection())

    def action_generate_all(self) -> None:
        """Generate a harness for every shown target that has none yet."""
        self._start_generate([i for i in self.shown if self.problems[i].harness is None])

    def action_generate_model(self) -> None:
        """Regenerate the selection's harnesses with the model the agent uses (the harness
        workflow's model generator: k generate-execute rounds); says so when none is set."""
        chosen = self._selection()
        if not chosen:
            self._status("nothing to regenerate in the selection")
            return
        self._regenerate_with_model(chosen)

    async def _model(self) -> ModelClient | None:
        """The model: the one in the options, else the app's (as its agent is configured)."""
        from simulator.agent.models import ModelConfigError

        if self.options.client is not None:
            return self.options.client
        host = cast(ModelHost, self.app)
        why = "this app has no model to lend"
        if hasattr(host, "model_client"):
            try:
                return await host.model_client()
            except ModelConfigError as exc:
                why = str(exc)
        self.notify(f"Regenerating with a model needs one. {why}", severity="warning", timeout=10)
        self._status("no model is configured: M needs one (see the notice)")
        return None

    @work(group="curation-model", exclusive=True, name="model harness")
    async def _regenerate_with_model(self, chosen: list[int]) -> None:
        self._status(f"model: connecting for {len(chosen)} target(s)…")
        client = await self._model()
        if client is None:
            return
        options = replace(self.options, generator="model", client=client)
        why = f"with the model {client.model}"

        async def one(index: int) -> None:
            old = self.problems[index]
            # the person asked for it: their decision, recorded before RepoSim's run
            record_decision(self.session, old, "regenerate", by=self.by, reason=why)
            fresh = await regenerate(self.session, old, options)
            fresh.curation.history.append(
                CurationEntry(fresh.curation.state, self.by, f"regenerated {why}")
            )
            if _worse(fresh, old) and not await self.app.push_screen_wait(
                AskYesNo(
                    f"The model's harness for {self.rows[index].function} scores "
                    f"{_scores_text(fresh)}; the current one {_scores_text(old)}. Replace it?",
                    "y replaces it · n or Esc keeps the current one",
                )
            ):
                record_decision(
                    self.session,
                    old,
                    "keep",
                    by=self.by,
                    reason=f"the model's scored lower ({_scores_text(fresh)})",
                )
                self.notify(f"Kept the current harness of {self.rows[index].function}.")
                return
            self.problems[index] = fresh

        self._start(f"model ({client.model})", chosen, one)

    def action_mutants(self) -> None:
        chosen = [i for i in self._selection() if self.problems[i].validation is not None]
        self._start("mutants", chosen, self._mutants_one)

    async def _run_one(self, index: int) -> None:
        await revalidate(self.session, self.problems[index], self.options)

    def _start_generate(self, chosen: list[int]) -> None:
        """One harness run for all of `chosen` (the repository's tests are traced once), each
        row updated as its target is done."""
        if not chosen:
            self._status("nothing to generate in the selection")
            return
        self.busy += len(chosen)
        self._clear_marks()
        self._generate(chosen)

    def _clear_marks(self) -> None:
        if self.marked:
            self.marked.clear()
            self.query_one(TargetTable).refresh()

    @work(group="curation", exclusive=False, name="harness generation")
    async def _generate(self, chosen: list[int]) -> None:
        pending = list(chosen)

        def done(fresh: Problem) -> None:
            index = pending.pop(0)
            carry_curation(self.problems[index], fresh, self.options)
            self.problems[index] = fresh
            self.busy -= 1
            self._refresh_row(index)
            self._save()
            if index == self.current:
                self._show(index)
            if pending:
                name = self.rows[pending[0]].function
                self._status(f"generate {len(chosen) - len(pending) + 1}/{len(chosen)}: {name}…")

        async with self._lock:
            targets = [Target.from_dict(self.problems[i].target) for i in chosen]
            self._status(f"generate: tracing the repository's tests for {len(chosen)} target(s)…")
            stopped = False
            try:
                await make_problems(self.session, targets, self.options, on_problem=done)
            except WorkflowFailure as exc:
                self.notify(str(exc), severity="error")
            except asyncio.CancelledError:  # Stop the running workflow
                stopped = True
                raise
            finally:
                self.busy -= len(pending)
                if stopped:
                    self._status(f"generate: stopped, {len(chosen) - len(pending)} done")
            self._refilter(chosen)
            self._status(f"generate: {len(chosen) - len(pending)} done")

    async def _mutants_one(self, index: int) -> None:
        figures = await remutate(self.session, self.problems[index], self.options)
        survivors = figures.get("survivors") or []
        if index == self.current:
            self.survivors = [str(s.get("description")) for s in survivors]

    def _start(self, what: str, chosen: list[int], one: Callable[[int], Awaitable[None]]) -> None:
        if not chosen:
            self._status(f"nothing to {what} in the selection")
            return
        self.busy += len(chosen)
        self._clear_marks()
        self._work(what, chosen, one)

    @work(group="curation", exclusive=False, name="curation")
    async def _work(
        self, what: str, chosen: list[int], one: Callable[[int], Awaitable[None]]
    ) -> None:
        async with self._lock:
            if what == "mutants":
                self.survivors = []
            for number, index in enumerate(chosen, start=1):
                name = self.rows[index].function
                self._status(f"{what} {number}/{len(chosen)}: {name}…")
                try:
                    await one(index)
                except WorkflowFailure as exc:
                    self.notify(str(exc), severity="error")
                except asyncio.CancelledError:  # Stop the running workflow
                    self.busy -= len(chosen) - number  # the ones it will not reach
                    self._status(f"{what}: stopped, {number - 1} done")
                    raise
                finally:
                    self.busy -= 1
                self._refresh_row(index)
                self._save()
                if index == self.current:
                    self._show(index)
            self._refilter(chosen)
            done = f"{what}: {len(chosen)} done"
            if what == "mutants" and self.survivors:
                done += f" · {len(self.survivors)} surviving (d shows the diffs): "
                done += "; ".join(self.survivors[:3]) + (" …" if len(self.survivors) > 3 else "")
            self._status(done)
