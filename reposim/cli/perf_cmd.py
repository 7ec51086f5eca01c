"""`reposim perf`: time an API or a command at two revisions; mine history for speed-ups."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import click

from reposim.cli.common import (
    CliError,
    existing_dir,
    existing_file,
    on_workflow_steps,
    run_async,
    step_seconds,
)
from reposim.cli.options import (
    Decorator,
    backend_kind_options,
    json_option,
    model_options,
    number_option,
)


def _settings(
    quick: bool,
    rounds: int | None,
    processes: int | None,
    affinity: str | None,
    timer: str,
    budget: float | None = None,
    precision: float | None = None,
) -> Any:
    from simulator.perf import MeasureSettings

    base = MeasureSettings.quick() if quick else MeasureSettings()
    changes: dict[str, Any] = {"timer": timer}
    if budget is not None:
        changes["budget"] = budget
    if precision is not None:
        changes["precision"] = precision
    if rounds is not None:
        changes["rounds"] = rounds
    if processes is not None:
        changes["processes"] = processes
    if affinity is not None:
        changes["affinity"] = affinity
    return MeasureSettings(**{**base.to_dict(), **changes})


class Progress:
    """Progress lines on stderr: every line on a terminal; when stderr is a file or a pipe (a
    log, CI), at most one line every `every` seconds (the latest) when what it says changed,
    once every `unchanged` seconds when only its ETA moved, and the last one at the end."""

    def __init__(self, every: float = 10.0, unchanged: float = 60.0) -> None:
        import time

        self.clock = time.monotonic
        self.every = every
        self.unchanged = unchanged
        self.terminal = sys.stderr.isatty()
        self.last = -max(every, unchanged)
        self.shown: str | None = None  # what the last printed line said, its ETA aside
        self.pending: str | None = None

    def __call__(self, line: str) -> None:
        import re

        now = self.clock()
        state = re.sub(r"\s+ETA \S+$", "", line)
        wait = self.unchanged if state == self.shown else self.every
        if self.terminal or now - self.last >= wait:
            click.echo(line, err=True)
            self.last, self.shown, self.pending = now, state, None
        else:
            self.pending = line

    def flush(self) -> None:
        if self.pending is not None:
            click.echo(self.pending, err=True)
            self.pending = None


def _progress(show: Progress) -> Any:
    def line(step: dict[str, Any], detail: dict[str, Any]) -> None:
        """Workflow steps as they happen."""
        where = f" {detail['round']}/{detail['of']}" if "round" in detail else ""
        show(f"{step['workflow']}: {step['step']}{where} {step['status']}{step_seconds(step)}")

    return on_workflow_steps(line)


class Duration(click.ParamType[float]):
    """90, 90s, 2m, 1h30m: seconds."""

    name = "duration"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        import re

        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip().lower()
        parts = re.fullmatch(
            r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?", text
        )
        if not text or parts is None:
            self.fail(f"{value!r} is not a duration such as 90s, 2m or 1h.", param, ctx)
        hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
        total = hours * 3600 + minutes * 60 + seconds
        if total <= 0:
            self.fail(f"{value!r} is not a duration of more than zero.", param, ctx)
        return total


measure_options: list[Decorator] = [
    click.option("--quick", is_flag=True, help="Rough answers quickly: 2 rounds x 2 workers."),
    number_option(
        "--rounds",
        minimum=1,
        whole=True,
        help="Exactly this many interleaved A/B rounds (default: adaptive, see --budget).",
    ),
    click.option(
        "--budget",
        type=Duration(),
        help="Adaptive rounds stop when the measuring would take longer (default 2m).",
    ),
    click.option(
        "--precision",
        type=click.FloatRange(min=0.001, max=0.5),
        help="Adaptive rounds stop when the 95% CI is within +-this of the speed-up (0.02).",
    ),
    number_option(
        "--processes",
        minimum=1,
        whole=True,
        help="pyperf worker processes per side and round (default 1).",
    ),
    click.option(
        "--affinity", metavar="CPUS", help="CPU list for pyperf's workers (default: one CPU)."
    ),
    click.option(
        "--timer",
        type=click.Choice(["auto", "wall", "cpu"]),
        default="auto",
        show_default=True,
        help="wall: elapsed time; cpu: CPU time of the code (robust on a busy machine); auto: "
        "wall, or cpu when the machine is busy (the result says so).",
    ),
    click.option(
        "--python",
        "python",
        metavar="EXE",
        help="Interpreter that runs the harness (default: RepoSim's own).",
    ),
]


def with_measure_options(func: Any) -> Any:
    """The measuring options; the command receives them as one `measure: MeasureSettings`
    (and `python`, the interpreter, on its own)."""

    @functools.wraps(func)
    def with_settings(
        *args: Any,
        quick: bool,
        rounds: int | None,
        budget: float | None,
        precision: float | None,
        processes: int | None,
        affinity: str | None,
        timer: str,
        **kwargs: Any,
    ) -> Any:
        measure = _settings(quick, rounds, processes, affinity, timer, budget, precision)
        return func(*args, measure=measure, **kwargs)

    wrapped: Any = with_settings
    for option in reversed(measure_options):
        wrapped = option(wrapped)
    return wrapped


def with_run_options(func: Any) -> Any:
    """What mining and a batch of comparisons share: `--timeout` of one comparison and
    `--setup` of each revision."""
    func = click.option(
        "--setup",
        "setup",
        is_flag=True,
        help="Set up each revision (shared setup ladder); environments are kept and reused.",
    )(func)
    return click.option(
        "--timeout", type=float, help="Seconds per comparison before it is stopped."
    )(func)


@click.group("perf")
def perf_group() -> None:
    """Compare performance between revisions with pyperf, and mine history for speed-ups."""


@perf_group.command("compare")
@click.argument("path")
@click.option("--a", "rev_a", required=True, metavar="REV", help="The baseline revision.")
@click.option("--b", "rev_b", required=True, metavar="REV", help="The revision to compare.")
@click.option("--api", metavar="DOTTED.NAME", help="The function to time (pkg.module.func).")
@click.option("--harness", metavar="FILE", help="A harness file defining bench() (with --api).")
@click.option("--command", "command", metavar="CMD", help="Time a shell command instead.")
@click.option(
    "--cwd",
    metavar="DIR",
    help="Where --command runs, relative to the checkout's root (default: the root).",
)
@model_options("Let this litellm model write the harness (with --api).")
@number_option(
    "--fix-rounds",
    minimum=0,
    default=3,
    help="Repairs of a model-written harness that fails its quickcheck.",
)
@backend_kind_options(
    "backend",
    default="local",
    help="Where the two environments run (docker: one container per side, pinned to the CPU).",
    image_help="Container image for --backend docker.",
)
@click.option(
    "--setup",
    "setup",
    is_flag=True,
    help="Run the setup workflow at each revision and time in the environment it makes.",
)
@click.option(
    "--python-a", "python_a", metavar="EXE", help="Interpreter for side A (an env you made)."
)
@click.option(
    "--python-b", "python_b", metavar="EXE", help="Interpreter for side B (an env you made)."
)
@click.option(
    "--env-a",
    "env_a",
    metavar="ENV",
    help="Side A's environment you made: a venv directory (local) or an image (docker).",
)
@click.option("--env-b", "env_b", metavar="ENV", help="Side B's environment, like --env-a.")
@click.option("--out", "out", metavar="DIR", help="Where results, pyperf JSON and trajectories go.")
@json_option("Print the result as JSON.")
@with_measure_options
def compare_command(
    path: str,
    rev_a: str,
    rev_b: str,
    api: str | None,
    harness: str | None,
    command: str | None,
    cwd: str | None,
    model: str | None,
    api_base: str | None,
    fix_rounds: int,
    backend: str,
    image: str | None,
    setup: bool,
    python_a: str | None,
    python_b: str | None,
    env_a: str | None,
    env_b: str | None,
    out: str | None,
    as_json: bool,
    measure: Any,
    python: str | None,
) -> None:
    """Time an API (or a command) at revisions A and B of the repository at PATH.

    Two sessions check out A and B; the harness (traced from the repository's tests, written by
    --model, or --harness FILE) is quickchecked at both, then pyperf measures: calibration,
    interleaved A/B rounds of fresh worker processes with warm-ups, pinned to one CPU. Prints
    both times, the speed-up with its 95% confidence interval, whether it is significant, and the
    machine's state (a noisy machine is said). Results are kept as pyperf JSON in --out.
    """
    from simulator.agent.models import ModelError
    from simulator.perf import CompareRequest, compare
    from simulator.workflow import WorkflowFailure

    sides: dict[str, dict[str, str | None]] = {}
    for label, exe, env in (("a", python_a, env_a), ("b", python_b, env_b)):
        sides[label] = _side_environment(label, exe, env, backend)
    request = CompareRequest(
        repo=existing_dir(path),
        a=rev_a,
        b=rev_b,
        api=api,
        harness=existing_file(harness) if harness else None,
        command=command,
        cwd=cwd,
        model=model,
        api_base=api_base,
        fix_rounds=fix_rounds,
        out_dir=Path(out) if out else None,
        settings=measure,
        backend=backend,
        backend_options={"image": image} if image else {},
        python=python,
        setup=setup,
        python_a=sides["a"]["python"],
        python_b=sides["b"]["python"],
        image_a=sides["a"]["image"],
        image_b=sides["b"]["image"],
    )
    try:
        show = Progress()
        try:
            result = run_async(lambda: compare(request, on_event=_progress(show)))
        finally:
            show.flush()
    except (WorkflowFailure, ModelError) as exc:
        raise CliError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(result.summary())


def _side_environment(
    label: str, exe: str | None, env: str | None, backend: str
) -> dict[str, str | None]:
    """--python-X / --env-X as an interpreter (local) or an image (docker), checked here."""
    if exe and env:
        raise CliError(f"Give --python-{label} or --env-{label}, not both.")
    if env and backend == "docker":
        return {"python": exe, "image": env}
    if env:
        python = Path(env).expanduser() / "bin" / "python"
        if not python.exists():
            raise CliError(f"--env-{label} {env} is not a venv (it has no bin/python).")
        # the venv's own path, not its interpreter resolved through symlinks (that drops
        # the venv's site-packages)
        return {"python": str(python.absolute()), "image": None}
    return {"python": exe, "image": None}


@perf_group.command("mine")
@click.argument("path")
@click.option("--since", help="Only commits after this date (anything git log --since takes).")
@number_option("--max", "limit", minimum=1, whole=True, help="At most N candidate commits.")
@click.option(
    "--threshold",
    type=float,
    default=1.2,
    show_default=True,
    help="Keep a commit when its significant speed-up is at least this.",
)
@click.option("--out", "out", metavar="DIR", required=True, help="Results, table and problems.")
@with_run_options
@with_measure_options
def mine_command(
    path: str,
    since: str | None,
    limit: int | None,
    threshold: float,
    out: str,
    timeout: float | None,
    setup: bool,
    measure: Any,
    python: str | None,
) -> None:
    """Find commits in PATH's history that made code faster.

    Candidates: commits whose message talks of speed (faster, optimise, perf, cache...) or whose
    diff changes hot code (functions with loops). Each is compared with its parent on the
    function it changed most; a commit is kept when the speed-up is significant and at least
    --threshold. Writes table.md, table.json and problems.jsonl to --out; a rerun resumes.
    """
    from simulator.perf.mine import Candidate, mine
    from simulator.workflow import WorkflowFailure

    def announce(found: list[Candidate]) -> None:
        click.echo(f"perf: {len(found)} candidate commit(s)", err=True)
        for candidate in found:
            click.echo(
                f"  {candidate.commit[:10]} {candidate.subject[:60]} -> {candidate.api} "
                f"({'; '.join(candidate.reasons)}){candidate.revert_note()}",
                err=True,
            )

    show = Progress()
    try:
        result = mine(
            existing_dir(path),
            Path(out),
            since=since,
            limit=limit,
            threshold=threshold,
            settings=measure,
            timeout=timeout,
            on_candidates=announce,
            on_progress=lambda p: show(f"perf: {p.line()}"),
            python=python,
            setup=setup,
        )
    except WorkflowFailure as exc:
        raise CliError(str(exc)) from None
    finally:
        show.flush()
    for candidate, verdict in result.verdicts():
        click.echo(f"{candidate.commit[:10]} {candidate.api}: {verdict}", err=True)
    click.echo(result.files["markdown"].read_text(), nl=False)
    click.echo(f"perf: {len(result.kept)} kept; {result.files['markdown']}", err=True)


@perf_group.command("batch")
@click.argument("rows")
@click.option("--out", "out", metavar="DIR", required=True, help="Results store and tables.")
@with_run_options
@with_measure_options
def batch_command(
    rows: str,
    out: str,
    timeout: float | None,
    setup: bool,
    measure: Any,
    python: str | None,
) -> None:
    """Compare every (repo, api, a, b) row of ROWS (CSV with a header, or JSONL).

    Rows run one at a time (timings must not compete for the CPU), with progress on stderr; the
    results store (--out/results.jsonl) lets a rerun resume where the last one stopped.
    """
    from simulator.batch import TaskStatus
    from simulator.perf.batch import RowsError, read_rows, run_rows
    from simulator.perf.compare import CompareResult
    from simulator.perf.table import Row, write_outputs

    try:
        table = read_rows(existing_file(rows))
    except RowsError as exc:
        raise CliError(str(exc)) from None
    show = Progress()
    summary = run_rows(
        table,
        Path(out),
        settings=measure,
        timeout=timeout,
        on_progress=lambda p: show(f"perf: {p.line()}"),
        python=python,
        setup=setup,
    )
    show.flush()
    done = [
        Row.of(CompareResult.from_dict(r.result))
        for r in summary.records
        if r.status is TaskStatus.OK
    ]
    files = write_outputs(Path(out), done)
    click.echo(files["markdown"].read_text(), nl=False)
    click.echo(summary.table(), err=True)
    if len(done) < len(summary.records) or len(summary.records) < summary.total:
        sys.exit(1)


@perf_group.command("gc")
@number_option(
    "--older-than",
    "days",
    minimum=0.0,
    default=30.0,
    help="Remove trees and environments no comparison used for this many days.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@json_option("Print the report as JSON.")
def gc_command(days: float, dry_run: bool, as_json: bool) -> None:
    """Remove from the perf cache (revision trees, environments, old tools) what no running
    comparison holds and none used for --older-than days; what is held is kept and listed."""
    from simulator.perf.envcache import cache_root, collect_garbage
    from simulator.perf.environment import current_tools

    report = collect_garbage(days * 86400, keep_tools=current_tools(), dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    for path in report.removed:
        click.echo(f"{verb} {path}")
    for path in report.in_use:
        click.echo(f"kept (in use by a running comparison) {path}")
    for image in report.images:
        click.echo(f"no longer referenced: image {image} (docker image rm {image} removes it)")
    click.echo(
        f"perf gc: {verb} {len(report.removed)} entries ({report.freed / 1e6:.1f} MB) "
        f"under {cache_root()}",
        err=True,
    )


def register(group: click.Group) -> None:
    group.add_command(perf_group)
