"""Workflows started from the editor in `reposim open`: code generation, debugging, performance
comparison and the model harness generator, on the function under the cursor or the repository.

Each palette entry runs its workflow in the app's session, in a worker (the screen never
freezes). The workflow's `workflow.*` events reach the agent pane as progress cards and end with
a result card (widgets/workflow_cards.py); a notice says when there is no model, no function
under the cursor, or why the workflow failed. The model is the agent pane's (the same --model,
base URL or $REPOSIM_MODEL). In confirm mode every action a workflow takes waits for a / r in
a prompt in the agent pane (the engine's `approval_gate`; A approves the rest of the workflow);
a rejection stops the workflow and undoes what it changed (a checkpoint taken when it started).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input, Label, Static
from textual.worker import Worker, WorkerState

from simulator.events import Event, Kind, WorkflowStart, WorkflowStep
from simulator.session import Decision, Session, SessionError
from simulator.workflow import (
    ActionRejected,
    ActionRequest,
    ApprovalGate,
    WorkflowFailure,
    approval_gate,
)
from widgets.agent_pane import AgentPane, ApprovalPrompt
from widgets.keybindings import default_bindings
from widgets.palette import PaletteAction
from widgets.workspace_app import WorkspaceApp

if TYPE_CHECKING:  # the workflows' engines load when an entry is chosen, not with the app
    from simulator.agent import ModelClient
    from simulator.dataset.schema import Problem

GROUP = "workflow"
"""The worker group of workflows started from the UI: one at a time."""


@dataclass(frozen=True)
class EntryOptions:
    """How much work each entry does (tests make it small)."""

    codegen_n: int = 3  # samples
    codegen_ks: tuple[int, ...] = (1, 3)
    codegen_debug_rounds: int = 0
    debug_steps: int = 30  # the debugging agent's step budget
    harness_rounds: int = 3  # generate-execute rounds of the model harness generator
    derive_runs: int | None = None  # runs for derived cases (None: the engine's default)
    perf_rounds: int = 10  # interleaved pyperf rounds per side (see MeasureSettings)
    perf_min_time: float = 0.1  # seconds a timed value should last


OPTIONS = EntryOptions()


@dataclass(frozen=True)
class Entry:
    title: str
    help: str
    body: Callable[[WorkspaceApp], Awaitable[None]]  # reads the cursor when it starts


ENTRIES: dict[str, Entry] = {
    "codegen": Entry(
        "Generate this function with a model (codegen)",
        "Samples of the function under the cursor from the agent's model, each scored by its "
        "harness: pass@k (F9)",
        lambda app: _codegen(app, cursor_position(app)),
    ),
    "debug": Entry(
        "Debug the failing tests",
        "The agent's model fixes the failing tests; fixed or not, with the diff (F4)",
        lambda app: _debug(app),
    ),
    "perf": Entry(
        "Compare performance of this function between two commits",
        "pyperf times the function under the cursor at two revisions (HEAD~1 and HEAD by "
        "default); the performance table (Shift+F4)",
        lambda app: _perf(app, cursor_position(app)),
    ),
    "harness": Entry(
        "Generate a harness for the function under the cursor with a model",
        "The agent's model writes tests against the reference, with execution feedback; "
        "valid, coverage, mutation score (Shift+F9)",
        lambda app: _model_harness(app, cursor_position(app)),
    ),
}
"""The workflows started from the editor, by the name their key binding uses
(`app.workflow_<name>` in widgets/keymap.py)."""


def workflow_entries(app: WorkspaceApp) -> list[PaletteAction]:
    return [
        *(
            PaletteAction(entry.title, entry.help, lambda name=name: run_named(app, name))  # type: ignore[misc]
            for name, entry in ENTRIES.items()
        ),
        PaletteAction(
            "Stop the running workflow",
            "Cancel it: its running command is killed and the run ends as interrupted",
            lambda: stop(app),
        ),
    ]


# The curation screen's runs (tracing, validating, mutants, the model) are workflows too: Stop
# must find them, and a second workflow must not start in the session beside them.
CURATION_GROUPS = ("curation", "curation-model")


def _running(app: WorkspaceApp) -> list[Worker[None]]:
    return [
        w
        for w in app.workers
        if w.group in (GROUP, *CURATION_GROUPS)
        and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
    ]


def stop(app: WorkspaceApp) -> None:
    running = _running(app)
    if not running:
        app.notify("No workflow is running.")
        return
    for worker in running:
        worker.cancel()
    app.notify(f"The {running[0].name} workflow was stopped.", severity="warning")


def run_named(app: WorkspaceApp, name: str) -> None:
    """Start the entry called `name` (its palette entry and its key both come here)."""
    entry = ENTRIES[name]
    start(app, name, lambda: entry.body(app))


# -- running a workflow from the UI ----------------------------------------------------------


def start(app: WorkspaceApp, name: str, body: Callable[[], Awaitable[None]]) -> None:
    """Run `body` in a worker, gated in confirm mode; one workflow at a time."""
    running = _running(app)
    if running:
        app.notify(
            f"The {running[0].name} workflow is still running; wait for it to end.",
            severity="warning",
        )
        return
    app.run_worker(_guarded(app, name, body), group=GROUP, name=name)


async def _guarded(app: WorkspaceApp, name: str, body: Callable[[], Awaitable[None]]) -> None:
    gate = ui_gate(app)
    # In confirm mode a rejection stops the workflow: what it changed before that is undone,
    # back to the workspace as it was when it started.
    before = None
    try:
        if gate is not None:
            before = await app.session.checkpoint(f"before-{name}")
        with approval_gate(gate):
            await body()
    except ActionRejected as exc:
        undone = ""
        if before is not None:
            try:
                await app.session.restore(before.name)
                undone = " What it changed before that was undone."
            except SessionError as error:
                undone = f" Undoing what it changed before that failed: {error}"
        app.notify(
            f"The {exc.request.workflow} workflow stopped: you rejected "
            f"{exc.request.description} ({exc.reason or 'no reason given'}).{undone}",
            severity="warning",
            timeout=10,
        )
    except (WorkflowFailure, SessionError) as exc:
        app.notify(f"{name}: {exc}", severity="error", timeout=10)


def ui_gate(app: WorkspaceApp) -> ApprovalGate | None:
    """In confirm mode, the approval prompt in the agent pane; otherwise nothing asks.

    The mode when the workflow starts decides; switching to auto meanwhile lets the remaining
    actions through without asking."""
    pane = app.query_one(AgentPane)
    if not pane.confirming:
        return None
    trusted = False  # the person approved the rest of this workflow (A)

    async def gate(request: ActionRequest) -> Decision:
        nonlocal trusted
        if trusted:
            return Decision(True, "the rest of the workflow was approved", by="human")
        if not pane.confirming:
            return Decision(True, "confirm mode was switched off", by="human")
        decision, trusted = await (await _prompt(pane)).decide(request)
        return decision

    return gate


class WorkflowApproval(ApprovalPrompt):
    """The agent pane's a / r prompt, for an action of a workflow: the answer goes back to the
    workflow (its engine waits in `approval_gate`), never to the agent."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("workflow_approval"))
    # three keys: wrap in a narrow pane rather than lose "r reject" off its edge (80x24)
    DEFAULT_CSS = """
    WorkflowApproval #approval-keys { height: auto; }
    """
    asker = "The workflow"

    def __init__(self) -> None:
        super().__init__(id="workflow-approval")
        self._answer: asyncio.Future[tuple[Decision, bool]] | None = None
        self._keys_from: Widget | None = None  # where the keys were before the questions

    def on_mount(self) -> None:
        self.query_one("#approval-keys", Static).update(
            Text("a approve · A approve the rest · r reject with a reason", style="bold")
        )
        reason = self.query_one("#approval-reason", Input)
        reason.placeholder = "Why not? (Enter stops the workflow with this reason)"

    async def decide(self, request: ActionRequest) -> tuple[Decision, bool]:
        """The person's decision, and whether it covers the rest of the workflow (A)."""
        self.asker = f"The {request.workflow} workflow"
        if not self._has_keys():  # else they were not given back after the last question
            self._keys_from = self.screen.focused
        pane = self.app.query_one(AgentPane)
        pane.display = True  # the question must be seen (the pane starts hidden when narrow)
        self._answer = asyncio.get_running_loop().create_future()
        self.ask(request.description, request.diff)
        try:
            return await self._answer
        finally:
            self._answer = None
            self.close()
            self._give_keys_back()

    def _has_keys(self) -> bool:
        focused = self.screen.focused
        return focused is not None and self in focused.ancestors_with_self

    def _give_keys_back(self) -> None:
        """The keys go back where they were before the question (else to the agent pane's task
        input), at once and only while this prompt (or nothing) has them. A deferred `focus()`
        could land after the workflow's next question took them; left on this hidden prompt,
        they would be nobody's until Textual moved them on a later frame, perhaps from the
        next question."""
        screen = self.screen
        if screen.focused is not None and not self._has_keys():
            return  # the person moved them
        shown = screen.focus_chain
        task = self.app.query_one(AgentPane).query_one("#agent-task")
        back = next((w for w in (self._keys_from, task) if w is not None and w in shown), None)
        screen.set_focus(back)

    def action_approve_rest(self) -> None:
        approval = Decision(True, "approved with the rest of the workflow", by="human")
        self._answer_with(approval, rest=True)

    @on(ApprovalPrompt.Decided)
    def _decided(self, message: ApprovalPrompt.Decided) -> None:
        message.stop()  # the agent pane's handler would hand it to the agent
        reason = message.reason.strip() or ("" if message.approved else "no reason given")
        self._answer_with(Decision(message.approved, reason, by="human"), rest=False)

    def _answer_with(self, decision: Decision, *, rest: bool) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result((decision, rest))


async def _prompt(pane: AgentPane) -> WorkflowApproval:
    found = pane.query(WorkflowApproval)
    if found:
        return found.first()
    prompt = WorkflowApproval()
    await pane.mount(prompt, before=pane.query_one("#agent-task"))
    return prompt


# -- what the entries need -------------------------------------------------------------------


def cursor_position(app: WorkspaceApp) -> tuple[str, int] | None:
    """The open file and the cursor's line (1-based), or None when no file is open."""
    from widgets.editor_pane import EditorPane

    pane = app.query_one(EditorPane)
    editor = pane.current_editor
    if pane.current_path is None or editor is None:
        return None
    return pane.current_path, editor.cursor_location[0] + 1


def _under(problems: list[Problem], path: str, line: int) -> list[Problem]:
    inside = [
        p
        for p in problems
        if p.target.get("path") == path
        and int(p.target.get("start_line") or 0) <= line <= int(p.target.get("end_line") or 0)
    ]
    return inside[-1:]  # the innermost (targets are listed in file order)


async def problem_under(app: WorkspaceApp, cursor: tuple[str, int]) -> Problem | None:
    """The target function at the cursor (a problem without a harness yet), or None after
    saying why there is none."""
    from widgets.curation.app import target_problems

    problems = _under(await asyncio.to_thread(target_problems, app.session), *cursor)
    if not problems:
        app.notify(
            f"No target function at {cursor[0]}:{cursor[1]} (a documented module-level "
            "function or method with arguments and a return).",
            severity="warning",
        )
        return None
    return problems[0]


async def _problem_at(app: WorkspaceApp, cursor: tuple[str, int] | None) -> Problem | None:
    """The target function under the cursor, or None after saying why there is none."""
    if cursor is None:
        app.notify("Open a file and put the cursor inside a function first.", severity="warning")
        return None
    return await problem_under(app, cursor)


async def _client(app: WorkspaceApp) -> ModelClient | None:
    return await app.query_one(AgentPane).model_client()


async def _problem_and_client(
    app: WorkspaceApp, cursor: tuple[str, int] | None, starting: str
) -> tuple[Problem, ModelClient, str] | None:
    """The function under the cursor, the model to work on it and the function's name, after
    saying `starting` (with the function's {name} and the {model}) and where progress shows;
    None after saying why one of them is missing."""
    problem = await _problem_at(app, cursor)
    if problem is None:
        return None
    client = await _client(app)
    if client is None:
        return None
    name = _qualname(problem)
    app.notify(f"{starting.format(name=name, model=client.model)}: progress in the agent pane.")
    return problem, client, name


def _qualname(problem: Problem) -> str:
    return str(problem.target.get("qualname") or problem.id)


# -- the workflows -------------------------------------------------------------------------


async def _codegen(app: WorkspaceApp, cursor: tuple[str, int] | None) -> None:
    from simulator.codegen.run import codegen

    chosen = await _problem_and_client(app, cursor, "Codegen for {name} with {model}")
    if chosen is None:
        return
    problem, client, name = chosen
    if not await _with_harness(app, problem):
        return
    result = await codegen(
        app.session,
        problem,
        client,
        n=OPTIONS.codegen_n,
        ks=OPTIONS.codegen_ks,
        debug_rounds=OPTIONS.codegen_debug_rounds,
    )
    if result.withheld:
        app.notify(f"Codegen {name}: {result.withheld}", severity="warning", timeout=10)
        return
    scores = ", ".join(f"{k} {v:.0%}" for k, v in result.pass_at().items())
    app.notify(f"Codegen {name}: {result.correct_first} of {result.n} samples pass; {scores}.")


async def _with_harness(app: WorkspaceApp, problem: Problem) -> bool:
    """Give the problem the harness the workspace holds for its target (made in the curation
    screen or by an earlier entry), else a traced one from the repository's tests."""
    from simulator.dataset.schema import Harness
    from simulator.harness.format import harness_path
    from simulator.harness.target import Target
    from simulator.harness.workflow import HarnessOptions, make_problems

    session = app.session
    path = harness_path(Target.from_dict(problem.target))
    if await session.exists(path):
        text = (await session.read_bytes(path)).decode("utf-8")
        problem.harness = Harness("workspace", text, path=path)
        return True
    options = HarnessOptions()
    if OPTIONS.derive_runs is not None:
        options.derive_runs = OPTIONS.derive_runs
    [made] = await make_problems(session, [Target.from_dict(problem.target)], options)
    if made.harness is None:
        why = "; ".join(made.validation.reasons) if made.validation else ""
        app.notify(
            f"{_qualname(problem)} has no harness to score samples with"
            + (f" ({why})" if why else "")
            + ": generate one with a model first.",
            severity="warning",
            timeout=10,
        )
        return False
    problem.harness = made.harness
    problem.validation = made.validation  # codegen reports pass@k only from a valid one
    return True


async def _debug(app: WorkspaceApp) -> None:
    from simulator.agent import Budgets
    from simulator.codegen.debug import debug

    client = await _client(app)
    if client is None:
        return
    app.notify(f"Debugging the failing tests with {client.model}: progress in the agent pane.")
    result = await debug(app.session, client, budgets=Budgets(max_steps=OPTIONS.debug_steps))
    app.notify(
        f"Debug: {result.status} ({result.after}).",
        severity="warning" if result.status == "not fixed" else "information",
        timeout=10,
    )


async def _model_harness(app: WorkspaceApp, cursor: tuple[str, int] | None) -> None:
    from simulator.harness.target import Target
    from simulator.harness.workflow import HarnessOptions, make_problems

    chosen = await _problem_and_client(app, cursor, "A harness for {name} from {model}")
    if chosen is None:
        return
    problem, client, name = chosen
    options = HarnessOptions(generator="model", client=client, rounds=OPTIONS.harness_rounds)
    [made] = await make_problems(app.session, [Target.from_dict(problem.target)], options)
    v = made.validation
    if v is None:
        app.notify(f"No harness for {name}.", severity="warning")
        return
    coverage = f"{v.coverage_rate:.0%}" if v.coverage_rate is not None else "?"
    mutation = f"{v.mutation_score:.0%}" if v.mutation_score is not None else "?"
    app.notify(f"Harness for {name}: {v.verdict}, coverage {coverage}, mutation {mutation}.")


# -- performance ---------------------------------------------------------------------------


class RevisionsScreen(ModalScreen[tuple[str, str] | None]):
    """Which two revisions to compare: Enter compares, Esc cancels."""

    DEFAULT_CSS = """
    RevisionsScreen { align: center middle; }
    RevisionsScreen > Vertical {
        width: 70; height: auto; padding: 1 2; border: thick $accent; background: $surface;
    }
    RevisionsScreen Label { width: 100%; }
    RevisionsScreen Input { margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("workflow_revisions"))

    def __init__(self, what: str, a: str = "HEAD~1", b: str = "HEAD") -> None:
        super().__init__()
        self.what = what
        self.defaults = (a, b)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Compare the performance of {self.what}")
            yield Label("A (the baseline): a commit, tag or branch", classes="dim")
            yield Input(self.defaults[0], id="rev-a")
            yield Label("B (the revision measured against it)", classes="dim")
            yield Input(self.defaults[1], id="rev-b")
            yield Label("Enter compares · Tab next field · Esc cancels", classes="dim")

    @on(Input.Submitted)
    def _submitted(self, message: Input.Submitted) -> None:
        message.stop()
        a = self.query_one("#rev-a", Input).value.strip()
        b = self.query_one("#rev-b", Input).value.strip()
        if not a or not b:
            self.notify("Give both revisions.", severity="warning")
            return
        self.dismiss((a, b))

    def action_cancel(self) -> None:
        self.dismiss(None)


def project_environment(session: Session) -> dict[str, Any]:
    """Where the project's code runs in this session, as a comparison's request fields: the
    session's container image (docker), or the venv its commands run in (the repository's own
    or the one `reposim setup` left), else the setup workflow at each revision. Never
    RepoSim's own interpreter: the project's dependencies are not there."""
    description = session.description
    if description.kind == "docker" and description.image:
        return {"backend": "docker", "backend_options": {"image": description.image}}
    venv = description.extra.get("venv")
    if venv and (Path(str(venv)) / "bin" / "python").exists():
        return {"python": str(Path(str(venv)) / "bin" / "python")}
    return {"setup": True}


def _where(environment: dict[str, Any]) -> str:
    if "python" in environment:
        return f"in the project's venv ({Path(environment['python']).parent.parent})"
    if environment.get("backend") == "docker":
        return f"in the session's image ({environment['backend_options']['image']})"
    return "in an environment the setup workflow makes at each revision (no venv of its own)"


async def _perf(app: WorkspaceApp, cursor: tuple[str, int] | None) -> None:
    from dataclasses import replace

    from simulator.perf.compare import CompareRequest, MeasureSettings, NoTracedHarness, compare
    from simulator.workflow import StepStatus, WorkflowRun

    problem = await _problem_at(app, cursor)
    if problem is None:
        return
    module = problem.module or str(problem.target.get("module") or "")
    if not module:
        app.notify(f"The module of {problem.target.get('path')} is unknown.", severity="warning")
        return
    api = f"{module}.{_qualname(problem)}"
    session = app.session
    revisions = await app.push_screen_wait(RevisionsScreen(f"{api} in {session.source.name}"))
    if revisions is None:
        return
    a, b = revisions
    settings = replace(
        MeasureSettings(),
        rounds=OPTIONS.perf_rounds,
        processes=2,  # perf's default became 1 per round (adaptive); the UI keeps its rounds x 2
        min_time=OPTIONS.perf_min_time,
    )
    environment = project_environment(session)
    request = CompareRequest(session.source, a, b, api=api, settings=settings, **environment)
    app.notify(f"Timing {api} at {a} and {b} {_where(environment)}: progress in the agent pane.")
    params = {"repo": str(session.source), "a": a, "b": b, "api": api, "rounds": settings.rounds}
    params["environment"] = _where(environment)
    # Each side is its own recorded session; this run puts their steps and the table in the
    # session the person works in.
    with WorkflowRun(session, "perf.compare", params) as run:
        sides: dict[str, str] = {}

        def forward(event: Event) -> None:
            if event.kind == Kind.WORKFLOW_START:
                started = event.typed(WorkflowStart)
                sides[started.run] = str(started.params.get("side") or "?")
            elif event.kind == Kind.WORKFLOW_STEP and not session.closed:
                step = event.typed(WorkflowStep)
                run.step(
                    f"{sides.get(step.run, '?')} {step.step}",
                    StepStatus(step.status),
                    seconds=step.seconds,
                    **dict(step.detail or {}),
                )

        try:
            result = await compare(request, on_event=forward)
        except NoTracedHarness as exc:
            # the repository's tests give no harness: the agent's model writes one, as
            # `reposim perf compare --model` does (and without a model, say how to set one)
            run.step("traced harness", StepStatus.FAILED, reason=exc.why)
            client = await _client(app)
            if client is None:
                raise WorkflowFailure(
                    f"{exc.why}: no harness can be traced from them. Set the agent's model "
                    "(F2, Agent settings, or $REPOSIM_MODEL) and run this again: it writes one."
                ) from None
            app.notify(f"{exc.why}: {client.model} writes the harness instead.", timeout=10)
            result = await compare(request, on_event=forward, client=client)
        run.result(**perf_table(result.to_dict()))
    app.notify(f"{api}: {result.verdict.sentence()}.", timeout=10)


def perf_table(data: dict[str, Any]) -> dict[str, Any]:
    """What the result card shows of a comparison (the whole result stays in its files)."""

    def side(label: str) -> dict[str, Any]:
        stats = data[label]
        return {
            "rev": data[f"rev_{label}"],
            "commit": str(data[f"commit_{label}"])[:10],
            "mean": stats["mean"],
            "std": stats["std"],
            "runs": stats["runs"],
        }

    return {
        "target": data["target"],
        "a": side("a"),
        "b": side("b"),
        "verdict": data["verdict"],
        "noise": data["noise"],
        "result_file": data["files"].get("result"),
    }
