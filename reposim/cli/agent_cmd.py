"""`reposim agent` (an agent on a task, headless) and `reposim demo` (the bundled example)."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from reposim.cli.batch import BatchSettings, batch_options, run_batch_cli
from reposim.cli.common import (
    CliError,
    SessionFlags,
    backend_options,
    existing_dir,
    json_printer,
    run_async,
)
from reposim.cli.options import (
    budget_options,
    folder_option,
    mode_option,
    model_client,
    model_options,
)
from reposim.ui import run_ui
from simulator.agent import (
    Agent,
    AgentConfig,
    Budgets,
    Mode,
    ModelClient,
    ModelConfigError,
    ReplayClient,
    RunResult,
)
from simulator.describe import describe_event
from simulator.events import TRANSIENT_KINDS, Event, Kind
from simulator.session import Session, open_session


class StepPrinter:
    """Prints a run as readable lines: the agent's thoughts, its actions and what came back."""

    def __init__(self, stream: Any = None) -> None:
        self.out = stream or sys.stdout

    def __call__(self, event: Event) -> None:
        if event.kind in TRANSIENT_KINDS or event.kind in (Kind.LLM_CALL, Kind.CHECKPOINT):
            return
        if event.kind == Kind.LLM_RESPONSE:
            thought = str(event.payload.get("content") or "").strip()
            if thought:
                self._line(f"  thinks: {thought}")
            return
        if event.kind == Kind.TOOL_RESULT:
            return  # its effect is shown by the session event it caused
        if event.kind == Kind.TOOL_CALL and event.payload.get("name") == "finish":
            return
        if event.kind == Kind.AGENT_FINISH:
            p = event.payload
            cost = p.get("cost")
            priced = f"${cost:.4f}" if cost is not None else "cost unknown"
            self._line(
                f"agent {p.get('reason')}: {p.get('summary')}\n"
                f"  {p.get('steps')} model calls, {p.get('tokens')} tokens, {priced}, "
                f"{p.get('format_errors')} format errors, {float(p.get('elapsed', 0)):.1f}s"
            )
            return
        self._line(f"{event.actor!s:6} {describe_event(event)}")

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


def _prompt_approvals(agent: Agent) -> None:
    """Confirm mode on a terminal: ask on stderr for each action the agent wants to take."""

    async def ask(request_id: int) -> None:
        pending = agent.pending
        if pending is None:
            return
        answer = await asyncio.to_thread(
            click.prompt,
            f"approve {pending.description}? [a]pprove / [r]eject",
            type=click.Choice(["a", "r"]),
            err=True,
        )
        if agent.pending is None or id(agent.pending) != request_id:
            return
        if answer == "a":
            agent.approve()
        else:
            reason = await asyncio.to_thread(click.prompt, "reason", err=True)
            agent.reject(str(reason))

    def listener(changed: Agent) -> None:
        if changed.state == "approval" and changed.pending is not None:
            asyncio.get_running_loop().create_task(ask(id(changed.pending)))

    agent.listeners.append(listener)


async def _run_headless(session: Session, agent: Agent, task: str, as_json: bool) -> RunResult:
    session.subscribe(json_printer() if as_json else StepPrinter())
    return await agent.run(task)


@click.command("agent")
@click.argument("path", required=False)
@click.option("--task", "-t", help="What the agent should do (with PATH or a LIST).")
@click.option(
    "--tasks",
    "tasks_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="A JSONL file of tasks in the Gym task format (repo, instruction, tests, ...): "
    "one recorded session each, as a batch.",
)
@model_options("Any model litellm accepts, as provider/name (default: $REPOSIM_MODEL).")
@mode_option(
    "confirm asks you on the terminal before each action that changes something "
    "(one repository only; a batch runs in auto).",
)
@click.option(
    "--trajectories",
    "trajectory_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A batch's trajectory folder, one file per task, written live (default: beside "
    "--results, named after it). `reposim fleet` watches it.",
)
@budget_options()
@backend_options
@batch_options(".reposim-agent-results.jsonl")
def agent_command(
    path: str | None,
    task: str | None,
    tasks_file: Path | None,
    model: str | None,
    api_base: str | None,
    mode: str,
    trajectory_dir: Path | None,
    budgets: Budgets,
    flags: SessionFlags,
    batch: BatchSettings,
) -> None:
    """Run an LLM agent on the repository at PATH until it finishes the task or a budget runs
    out. Every model call, tool call and decision is recorded in the trajectory.

    PATH may also be a LIST file (one repository path a line; every one gets --task), or give
    --tasks FILE.jsonl instead: then each task is a batch task in its own recorded session, on
    local worker processes or Ray (--jobs, --executor, --ray-address), resumable from --results.
    Each task runs its tests before and after the agent; the results say finished / budget /
    error, the tests on both sides, steps, tokens and cost.
    """
    if tasks_file is not None or (path is not None and Path(path).is_file()):
        _run_batch(path, task, tasks_file, model, api_base, trajectory_dir, budgets, flags, batch)
        return
    if path is None:
        raise CliError("give a repository PATH, a LIST file, or --tasks FILE.jsonl.")
    if not task:
        raise CliError("--task is required with a repository PATH.")
    root = existing_dir(path)
    client = model_client(model, api_base)

    async def run() -> tuple[RunResult, Path]:
        # No subscribers here: _run_headless prints the events (as JSON with --json).
        session = await flags.open(
            root, subscribers=[], agent={"model": client.model, "mode": mode}
        )
        async with session:
            agent = Agent(session, client, mode=Mode(mode), budgets=budgets)
            if mode == "confirm":
                _prompt_approvals(agent)
            result = await _run_headless(session, agent, task, flags.as_json)
        return result, session.trajectory_path

    result, path_written = run_async(run)
    click.echo(f"reposim: trajectory {path_written}", err=True)
    if result.reason != "finished":
        sys.exit(1)


def _run_batch(
    path: str | None,
    task: str | None,
    tasks_file: Path | None,
    model: str | None,
    api_base: str | None,
    trajectory_dir: Path | None,
    budgets: Budgets,
    flags: SessionFlags,
    batch: BatchSettings,
) -> None:
    from simulator.agent.batch import agent_task, agent_tasks
    from simulator.gym import GymTask, TaskError, load_tasks

    if tasks_file is not None and path is not None:
        raise CliError("give a LIST or --tasks, not both.")
    # Checked here, in one sentence, rather than once per task in the workers.
    client = model_client(model, api_base)
    try:
        if tasks_file is not None:
            gym_tasks = load_tasks(tasks_file)
        else:
            if not task:
                raise CliError("--task is required with a LIST of repositories.")
            assert path is not None
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            repos = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
            gym_tasks = [
                GymTask(
                    repo=repo,
                    instruction=task,
                    backend=flags.backend_kind,
                    image=flags.backend_options.get("image"),
                )
                for repo in repos
            ]
    except TaskError as exc:
        raise CliError(str(exc)) from None
    if not gym_tasks:
        raise CliError("there are no tasks to run.")
    folder = trajectory_dir or batch.results.with_name(batch.results.stem + ".trajectories")
    tasks = agent_tasks(
        gym_tasks,
        model=client.model,
        api_base=api_base,
        budgets=budgets,
        trajectories=folder.resolve(),
        backend_options=flags.backend_options,
    )
    click.echo(f"reposim agent: {len(tasks)} tasks; trajectories in {folder}", err=True)
    summary = run_batch_cli(tasks, agent_task, batch, label="agent")
    if flags.as_json:
        for record in summary.records:
            click.echo(json.dumps(record.to_dict(), default=str))
    else:
        width = max((len(r.key) for r in summary.records), default=10)
        for record in summary.records:
            res = record.result
            outcome = res.get("outcome") or str(record.status)
            after = res.get("tests_after") or {}
            tests = f"{after.get('passed', '?')} passed {after.get('failed', '?')} failed"
            why = f"  [{record.category}] {record.evidence}" if record.category else ""
            click.echo(
                f"{record.key:{width}}  {outcome:9} {res.get('steps', '-')!s:>4} steps  "
                f"{tests}{why}"
            )
    if any(r.status != "ok" for r in summary.records):
        sys.exit(1)


@click.command("demo")
@model_options("Run the task live with this model (litellm provider/name) instead of the replay.")
@click.option(
    "--headless",
    is_flag=True,
    help="Print the steps instead of opening the UI (for CI and a quick look).",
)
@click.option(
    "--pace",
    type=float,
    default=None,
    help="Seconds between replayed model turns (default: 1.5 in the UI, 0 headless).",
)
@mode_option(
    "confirm waits for your approval (a / r) before each change the agent makes.",
)
@folder_option(
    "--dir",
    "directory",
    help="Where to put the demo workspace (default: a new temporary directory).",
)
@click.option("--trajectory", type=click.Path(dir_okay=False), help="Where to write the run.")
def demo_command(
    model: str | None,
    api_base: str | None,
    headless: bool,
    pace: float | None,
    mode: str,
    directory: str | None,
    trajectory: str | None,
) -> None:
    """Watch an agent fix a bug in a small bundled project, in the RepoSim UI.

    Without --model the agent's turns are replayed from a bundled trajectory (a scripted
    demonstration, not a model's work); the tools really run. In the agent pane, p pauses it
    (mode human): take over in the editor, the terminal or with `$ command` in the pane's input,
    then g lets it go on. With --model the same task runs live. In a terminal narrower than
    120 columns the file tree gives way to the agent pane (Ctrl+B brings it back).
    """
    from simulator.demo import DEMO_TASK, bundled_trajectory, prepare_workspace, test_command

    if pace is not None and pace < 0:
        raise CliError("--pace cannot be negative.")
    client: ModelClient
    if model:
        client = model_client(model, api_base)
        title = f"demo ({client.model})"
    else:
        delay = pace if pace is not None else (0.0 if headless else 1.5)
        try:
            client = ReplayClient(bundled_trajectory(), delay=delay)
        except ModelConfigError as exc:
            raise CliError(str(exc)) from None
        title = "demo (scripted replay)"
    if directory:
        base = Path(directory).expanduser().resolve()
        base.mkdir(parents=True, exist_ok=True)
    else:
        base = Path(tempfile.mkdtemp(prefix="reposim-demo-"))
    workspace = prepare_workspace(base)
    agent_info = {"model": client.model, "mode": mode, "demo": True}
    budgets = Budgets(max_steps=30)

    async def run() -> tuple[RunResult | None, Path]:
        session = await open_session(
            workspace,
            trajectory_path=Path(trajectory).resolve() if trajectory else None,
            agent=agent_info,
            test_command=test_command(),
        )
        if not headless:
            config = AgentConfig(
                client=client, mode=Mode(mode), budgets=budgets, task=DEMO_TASK, title=title
            )
            await run_ui(session, agent_config=config)
            return None, session.trajectory_path
        reason = "closed"
        try:
            agent = Agent(session, client, mode=Mode(mode), budgets=budgets)
            if mode == "confirm":
                _prompt_approvals(agent)
            click.echo(f"reposim demo: {title}; workspace {workspace}", err=True)
            result = await _run_headless(session, agent, DEMO_TASK, as_json=False)
        except BaseException:
            reason = "interrupted"
            raise
        finally:
            await session.close(reason)
        return result, session.trajectory_path

    result, path_written = run_async(run)
    click.echo(f"reposim: workspace {workspace}", err=True)
    click.echo(f"reposim: trajectory {path_written}", err=True)
    if result is not None and result.reason != "finished":
        sys.exit(1)


def register(group: click.Group) -> None:
    group.add_command(agent_command)
    group.add_command(demo_command)
