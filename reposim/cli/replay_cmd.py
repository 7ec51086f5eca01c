"""`reposim replay`, `reposim export`, `reposim import`: watch, re-execute, fork, convert."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click

from reposim.cli.batch import BatchSettings, batch_options, run_batch_cli
from reposim.cli.common import CliError, existing_dir, existing_file, run_async
from reposim.cli.options import json_option, output_option
from reposim.ui import run_ui
from simulator.interop import EXPORT_FORMATS, export_text
from simulator.replay.normalise import DEFAULT_RULES, Normaliser
from simulator.replay.reexec import (
    ReplayReport,
    StepResult,
    choose_backend,
    reexecute,
    untrusted_line,
    untrusted_reason,
)
from simulator.session import Session
from simulator.trajectory import (
    TrajectoryError,
    TrajectoryWriter,
    is_native,
    json_line,
    open_trajectory,
    readable,
    whole_event,
)


@dataclass(frozen=True)
class _Comparison:
    """How re-executed output is compared with the recording: --ignore, --keep, --strict."""

    ignore: tuple[str, ...]
    keep: tuple[str, ...]
    strict: bool

    def normaliser(self) -> Normaliser:
        """The normaliser these ask for; a bad --ignore pattern is a CliError."""
        base = Normaliser(rules=()) if self.strict else Normaliser()
        try:
            if self.keep and not self.strict:
                base = base.without(self.keep)
            return base.with_patterns(self.ignore)
        except ValueError as exc:
            raise CliError(str(exc)) from None


_COMPARISON_OPTIONS: list[tuple[str, dict[str, Any]]] = [
    (
        "--ignore",
        {
            "multiple": True,
            "metavar": "REGEX",
            "help": "Also ignore output matching REGEX when comparing (repeatable).",
        },
    ),
    (
        "--keep",
        {
            "multiple": True,
            "type": click.Choice([r.name for r in DEFAULT_RULES]),
            "help": "Compare this volatile part instead of ignoring it (repeatable).",
        },
    ),
    ("--strict", {"is_flag": True, "help": "Compare output byte for byte (no normalisation)."}),
]


def comparison_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--ignore, --keep and --strict; the command receives them as one `compare: _Comparison`."""

    @functools.wraps(func)
    def with_comparison(
        *args: Any, ignore: tuple[str, ...], keep: tuple[str, ...], strict: bool, **kwargs: Any
    ) -> Any:
        return func(*args, compare=_Comparison(ignore, keep, strict), **kwargs)

    wrapped: Callable[..., Any] = with_comparison
    for flag, settings in reversed(_COMPARISON_OPTIONS):
        wrapped = click.option(flag, **settings)(wrapped)
    return wrapped


def _print_step(as_json: bool) -> Any:
    def show(step: StepResult) -> None:
        if as_json:
            sys.stdout.write(json.dumps(step.as_dict(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        mark = {"match": "ok  ", "differ": "DIFF", "skipped": "skip"}[step.status]
        click.echo(f"{mark} {step.seq:5d} {step.actor:6} {step.action}")
        for difference in step.differences:
            click.echo(f"           {difference}")

    return show


def _fork_progress(path: Path, step: int) -> Callable[[StepResult], None]:
    """What a fork says while it rebuilds the workspace (a minute or more on a long run, when
    the terminal showed nothing): each recorded action up to `step` as it is run again."""
    click.echo(
        f"rebuilding the workspace of {path.name}: running its recorded actions up to step"
        f" {step} again …",
        err=True,
    )

    def show(result: StepResult) -> None:
        action = result.action if len(result.action) <= 70 else result.action[:69] + "…"
        status = {"match": "", "differ": "  (differs from the recording)"}.get(result.status, "")
        click.echo(f"  step {result.seq}/{step}  {action}{status}", err=True)

    return show


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        click.echo(f"note: {note}", err=True)


def _print_report(report: ReplayReport, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"summary": report.as_dict()}) + "\n")
        return
    click.echo("")
    click.echo(report.summary())
    click.echo(f"new trajectory: {report.trajectory}")
    if report.problem:
        click.echo(f"reposim: the recording stops early: {report.problem}", err=True)


@click.command("replay")
@click.argument("file")
@click.argument("others", nargs=-1)
@click.option("--verify", is_flag=True, help="Re-execute the actions and compare observations.")
@click.option(
    "--fork-at",
    "fork_at",
    type=int,
    metavar="N",
    help="Continue live from the state after step N (a new trajectory records its parent).",
)
@click.option(
    "--backend",
    "backend_kind",
    type=click.Choice(["local", "docker"]),
    default=None,
    help="Where the actions run again. Default: on this machine for a trajectory recorded here"
    " by you (its seal checks out under your key), in a container for any other (someone"
    " else's commands could do anything); --backend local runs those here after you confirm"
    " at a terminal.",
)
@click.option("--repo", type=str, help="Start from this repository instead of the recorded one.")
@click.option("--image", type=str, help="With --backend docker: the image (default: recorded).")
@click.option(
    "--current",
    is_flag=True,
    help="Use the repository as it is now instead of checking out the recorded commit.",
)
@comparison_options
@click.option(
    "--then-exec",
    "then_exec",
    multiple=True,
    metavar="CMD",
    help="With --fork-at: run CMD in the forked session (repeatable).",
)
@click.option(
    "--trajectory",
    type=click.Path(),
    help="Where to write the new one (a folder when FILE is a folder).",
)
@json_option("Print JSON lines instead of text.")
@batch_options(".reposim-verify-results.jsonl")
def replay(
    file: str,
    others: tuple[str, ...],
    verify: bool,
    fork_at: int | None,
    backend_kind: str | None,
    repo: str | None,
    image: str | None,
    current: bool,
    compare: _Comparison,
    then_exec: tuple[str, ...],
    trajectory: str | None,
    as_json: bool,
    batch: BatchSettings,
) -> None:
    """Watch, re-execute or fork a trajectory (RepoSim's, SWE-agent's or mini-swe-agent's).

    Without options it opens the replay view. --verify re-executes every recorded action from the
    recorded start and reports, step by step, whether each observation still matches (exit code 0:
    all match, 1: differences, 2: the start cannot be rebuilt). --fork-at N rebuilds the
    workspace after step N and continues in a new trajectory.

    With --verify, FILE may be a folder: every trajectory in it (and below) is re-executed as one
    task of the batch layer (--jobs, --timeout, and --results, which a rerun resumes from);
    --trajectory then names the folder for the re-executions' own trajectories.

    With two or more FILEs (`reposim replay A B [C ...]`), the runs open side by side, aligned
    step by step, the first divergence highlighted (`d` / `D`: next / previous difference);
    with --json the alignment and summary are printed instead (as `reposim trajectory compare`).
    """
    if others:
        _compare(file, others, as_json, verify or fork_at is not None)
        return
    if verify and Path(file).is_dir():
        compare.normaliser()  # a bad --ignore pattern is one sentence before any task
        options = {
            "backend": backend_kind,
            "image": image,
            "repo": repo,
            "current": current,
            "strict": compare.strict,
            "ignore": list(compare.ignore),
            "keep": list(compare.keep),
            "out_dir": str(Path(trajectory).resolve()) if trajectory else None,
        }
        _verify_folder(Path(file), options, batch)
        return
    if Path(file).expanduser().is_dir() and not (fork_at is not None or as_json):
        _view_folder(Path(file).expanduser(), existing_dir(repo) if repo else None)
        return
    path = existing_file(file)
    repo_path = existing_dir(repo) if repo else None
    out = Path(trajectory) if trajectory else None
    if verify and fork_at is not None:
        raise CliError("--verify and --fork-at cannot be used together.")
    if then_exec and fork_at is None:
        raise CliError("--then-exec needs --fork-at.")
    backend = "local"
    consent = False
    if verify or fork_at is not None:
        backend = _backend_for(path, backend_kind, fork_at)
        consent = host_consent(path, backend, fork_at)
    start = _Start(backend, repo_path, image, current, out, consent)
    if verify:
        normaliser = compare.normaliser()
        report, _ = run_async(
            lambda: reexecute(
                path,
                normaliser=normaliser,
                on_step=_print_step(as_json),
                on_notes=_print_notes,
                **asdict(start),
            )
        )
        _print_report(report, as_json)
        sys.exit(report.exit_code)
    if fork_at is not None:
        if not then_exec and not as_json and sys.stdin.isatty() and sys.stdout.isatty():
            # In a terminal, the forked session opens in the UI; with commands to run, or
            # --json, or no terminal, it runs headless.
            forked = run_async(lambda: _fork_into_ui(path, fork_at, start))
            click.echo(f"reposim: trajectory {forked}", err=True)
            return
        run_async(lambda: _fork(path, fork_at, start, then_exec, as_json))
        return
    if as_json:
        _dump(path)
        return
    _view(path)


@dataclass(frozen=True)
class _Start:
    """How a replay or a fork starts again: the backend, the repository and image to start from
    (None: the recorded ones), whether the repository is taken as it is now, where the new
    trajectory goes, and whether its commands may run on this machine."""

    backend_kind: str
    repo: Path | None = None
    image: str | None = None
    current: bool = False
    trajectory_path: Path | None = None
    host_consent: bool = False


async def _fork_into_ui(path: Path, step: int, start: _Start) -> Path:
    """Fork at `step` and open the forked session in the main UI; the new trajectory's path."""
    session = await run_ui(_forked(path, step, start))
    return session.trajectory_path


async def _forked(path: Path, step: int, start: _Start, *, progress: bool = True) -> Session:
    """The session forked at `step`; says on stderr where rebuilding differed from the recording
    and, with `progress`, each recorded action as it runs it again."""
    from simulator.replay.fork import fork

    result = await fork(
        path,
        step,
        on_step=_fork_progress(path, step) if progress else None,
        on_notes=_print_notes,
        **asdict(start),
    )
    _say_if_differed(result.report)
    return result.session


def _say_if_differed(report: ReplayReport) -> None:
    differing = report.first_difference
    if differing is not None:
        click.echo(
            f"note: rebuilding differed from the recording at step {differing.seq}"
            f" ({'; '.join(differing.differences)}); the state may not be the recorded one.",
            err=True,
        )


async def _fork(
    path: Path, step: int, start: _Start, commands: tuple[str, ...], as_json: bool
) -> None:
    session = await _forked(path, step, start, progress=not as_json)
    try:
        for command in commands:
            output = await session.exec(command)
            if as_json:
                sys.stdout.write(
                    json.dumps(
                        {
                            "command": command,
                            "exit_code": output.exit_code,
                            "output": output.output.decode("utf-8", "replace"),
                        }
                    )
                    + "\n"
                )
            else:
                sys.stdout.write(output.output.decode("utf-8", "replace"))
    finally:
        await session.close("closed")
    if as_json:
        sys.stdout.write(json.dumps({"trajectory": str(session.trajectory_path)}) + "\n")
    else:
        click.echo(f"forked at step {step}: {session.trajectory_path}")


def _compare(file: str, others: tuple[str, ...], as_json: bool, conflicting: bool) -> None:
    from simulator.compare import compare_files

    if conflicting:
        raise CliError("--verify and --fork-at take one trajectory, not several.")
    comparison = compare_files([existing_file(f) for f in (file, *others)])
    if as_json:
        click.echo(json.dumps(comparison.as_dict(), ensure_ascii=False))
        return
    if not sys.stdout.isatty():
        raise CliError("The side-by-side view needs a terminal; use --json.")
    from widgets.compare import CompareApp

    CompareApp(comparison).run()


def _dump(path: Path) -> None:
    source = open_trajectory(path)
    try:
        sys.stdout.write(json_line(source.header.to_dict()) + "\n")
        for event in source.events():
            sys.stdout.write(json_line(event.as_dict()) + "\n")
        if source.problem:
            click.echo(f"reposim: {path}: {source.problem}", err=True)
    finally:
        source.close()


def _verify_folder(folder: Path, options: dict[str, Any], batch: BatchSettings) -> None:
    """Re-execute every trajectory under `folder` as a batch task with `options` (their
    "repo" as given: checked here)."""
    from simulator.replay.batch import trajectories_in, verify_task, verify_trajectory

    files = trajectories_in(folder)
    if not files:
        raise CliError(f"{folder} holds no .jsonl trajectory.")
    repo = options["repo"]
    options = {**options, "repo": str(existing_dir(repo)) if repo else None}
    summary = run_batch_cli(
        [verify_task(path, options) for path in files], verify_trajectory, batch, label="verify"
    )
    for record in summary.records:
        if str(record.status) != "ok":
            click.echo(f"{record.key}: {record.status} ({record.category}): {record.evidence}")
    sys.exit(0 if all(str(r.status) == "ok" for r in summary.records) else 1)


def host_consent(path: Path, backend_kind: str, until: int | None = None) -> bool:
    """Whether the user agreed to run a foreign trajectory's commands (up to step `until`) on
    this machine: asked at a terminal when --backend local was given for a file whose lines are
    not all provably recorded here by them; without a terminal to ask at, one sentence that
    names the first untrusted line, and no run."""
    if backend_kind != "local":
        return False
    with open_trajectory(path) as source:
        line = untrusted_line(source, until)
    if line is None:
        return False
    reason = untrusted_reason(line, path.name)
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise CliError(
            f"{reason}, so its commands run here only after you confirm at a terminal;"
            " without --backend local they run in a container."
        )
    if not click.confirm(
        f"{reason}. Run its commands here, with your rights?",
        default=False,
        err=True,
    ):
        raise CliError("Not run: answer yes to run them here, or drop --backend local.")
    return True


def _backend_for(path: Path, requested: str | None, until: int | None = None) -> str:
    """The backend to re-execute `path` (up to step `until`) on (see choose_backend)."""
    with open_trajectory(path) as source:
        return choose_backend(source, requested, until=until)


def _view(path: Path) -> None:
    # Imported here: the engine and the headless commands never load Textual.
    source = open_trajectory(path)
    source.close()
    _run_view([path], None)


def _view_folder(folder: Path, repo: Path | None) -> None:
    """The trajectories of a folder (and its subfolders) in one viewer: H / L move between them."""
    from simulator.compare.search import trajectory_files

    files = trajectory_files(folder)
    if not files:
        raise CliError(
            f"{folder} holds no trajectory files (.jsonl, .traj, .json, .cast), here or below."
        )
    shown, skipped = _readable(files)
    for path, why in skipped:
        click.echo(f"skipped {path.relative_to(folder)}: {why}", err=True)
    if not shown:
        raise CliError(f"{folder} holds no trajectory RepoSim can read ({len(skipped)} skipped).")
    notice = None
    if skipped:
        names = ", ".join(str(p.relative_to(folder)) for p, _ in skipped[:3])
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        notice = f"skipped {len(skipped)} file(s) that are not trajectories: {names}{more}"
    _run_view(shown, repo, notice=notice)


def _readable(files: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files that open as trajectories (a .jsonl's header only), and why the others do not:
    a folder's viewer moves between the ones it can show."""
    readable: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in files:
        try:
            open_trajectory(path, lazy=True).close()
        except TrajectoryError as exc:
            skipped.append((path, str(exc)))
        else:
            readable.append(path)
    return readable, skipped


def _run_view(files: list[Path], repo: Path | None, *, notice: str | None = None) -> None:
    if not sys.stdout.isatty():
        raise CliError("The replay view needs a terminal; use --json, --verify or export.")
    from widgets.replay import ReplayApp

    path = files[0]
    at_step: int | None = None
    while True:
        choice = ReplayApp(path, at_step=at_step, notice=notice, repo=repo, files=files).run()
        if choice is None:
            return
        # "Fork here" (F) in the view: continue live from that step in the main UI.
        step, repo, path = choice.step, choice.repo, choice.path or path
        click.echo(f"forking at step {step} of {path.name} …", err=True)
        backend = _backend_for(path, None, step)
        try:
            forked = run_async(
                lambda: _fork_into_ui(path, step, _Start(backend, repo))  # noqa: B023
            )
        except CliError as exc:
            # The start could not be rebuilt after all (no container engine, a missing image):
            # back to the view at that step, saying why, rather than ending here.
            at_step, notice = step, f"Could not fork: {exc.format_message()}"
            continue
        click.echo(f"reposim: trajectory {forked}", err=True)
        return


@click.command("export")
@click.argument("file")
@click.option(
    "--to", "fmt", type=click.Choice(EXPORT_FORMATS), required=True, help="The format to write."
)
@output_option("Where (default: stdout).")
def export(file: str, fmt: str, output: str | None) -> None:
    """Write a trajectory in another tool's format.

    swe-agent (.traj), mini-swe-agent (its current form), openai-chat (one JSON line per
    conversation, for fine-tuning) or asciicast (v2: the terminal, playable by asciinema).
    """
    source = open_trajectory(existing_file(file))
    try:
        events = (whole_event(source, event) for event in source.events())
        # Other tools' formats hold text, not bytes: what is not UTF-8 shows as U+FFFD there.
        text = readable(export_text(source.header, events, fmt))
        problem = source.problem
    finally:
        source.close()
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)
    else:
        sys.stdout.write(text)
    if problem:
        click.echo(f"reposim: {file}: {problem} (exported the steps before it)", err=True)


@click.command("import")
@click.argument("file")
@output_option("The .jsonl to write.", required=True)
def import_(file: str, output: str) -> None:
    """Convert another tool's trajectory (SWE-agent, mini-swe-agent, OpenAI chat JSONL,
    asciicast) into a RepoSim trajectory."""
    path = existing_file(file)
    if is_native(path):
        raise CliError(f"{file} is already a RepoSim trajectory.")
    source = open_trajectory(path)
    writer = TrajectoryWriter(Path(output), source.header)
    count = 0
    try:
        for event in source.events():
            writer.write(event)
            count += 1
    finally:
        writer.close()
    click.echo(f"imported {count} events from {file} into {output}")


def register(group: click.Group) -> None:
    group.add_command(replay)
    group.add_command(export)
    group.add_command(import_, name="import")
