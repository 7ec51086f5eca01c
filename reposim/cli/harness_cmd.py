"""`reposim harness`, `reposim codegen`, `reposim debug` and `reposim dataset`."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reposim.cli.batch import BatchSettings, batch_options, run_batch_cli
from reposim.cli.common import (
    CliError,
    SessionFlags,
    backend_options,
    existing_dir,
    json_printer,
    on_workflow_steps,
    run_async,
    step_seconds,
)
from reposim.cli.options import (
    budget_options,
    choice_option,
    model_client,
    model_options,
    number_option,
    output_option,
    threshold_options,
)

if TYPE_CHECKING:
    from simulator.agent import Budgets
    from simulator.harness.validate import Thresholds


def _progress(label: str) -> Any:
    """Workflow steps as readable lines on stderr."""

    def show(step: dict[str, Any], detail: dict[str, Any]) -> None:
        if step["status"] == "running" and step["step"] != "trace":
            return
        what = detail.get("target") or detail.get("problem") or ""
        extra = ""
        if step["step"] == "target" and step["status"] != "running":
            cov, mut = detail.get("coverage"), detail.get("mutation")
            extra = (
                f" {detail.get('state')}"
                + (f" cov {cov:.0%}" if cov is not None else "")
                + (f" mut {mut:.0%}" if mut is not None else "")
            )
        elif step["step"] == "sample":
            extra = f" #{detail.get('index')} {'pass' if detail.get('passed') else 'fail'}"
        took = step_seconds(step)
        click.echo(f"{label}: {step['step']} {what}{extra} [{step['status']}{took}]", err=True)

    return on_workflow_steps(show)


def _dist(values: dict[str, Any] | None) -> str:
    if not values:
        return "-"
    return (
        f"median {values['median']:.0%} (q1 {values['q1']:.0%}, q3 {values['q3']:.0%}, "
        f"min {values['min']:.0%}, n {values['n']})"
    )


def _reasons(reasons: dict[str, int] | None) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in (reasons or {}).items()) or "-"


def _summary_lines(summary: dict[str, Any]) -> list[str]:
    cases = summary.get("cases") or 0
    readable = f"{summary.get('readable_cases', 0) / cases:.0%}" if cases else "-"
    return [
        f"targets {summary['targets']}, harnesses {summary['harnesses']} "
        f"({summary.get('with_cases', '-')} with a case), valid {summary['valid']}",
        "figures over harnesses with at least one case:",
        f"branch coverage: {_dist(summary.get('coverage'))}",
        f"mutation score:  {_dist(summary.get('mutation'))}",
        f"suite parity:    {_dist(summary.get('parity'))}",
        f"cases with no pickle: {readable} of {cases} "
        f"({summary.get('derived_cases', 0)} derived from recorded calls, the rest recorded)",
        f"outcome per target: {_reasons(summary.get('reasons'))}",
    ]


def _repositories(path: str) -> list[Path]:
    """A repository, or a text file listing one repository path per line."""
    target = Path(path).expanduser()
    if target.is_dir():
        return [target.resolve()]
    if target.is_file():
        repos = []
        for line in target.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                repos.append(existing_dir(str((target.parent / line).expanduser())))
        if not repos:
            raise CliError(f"{path} lists no repositories.")
        return repos
    raise CliError(f"{path} does not exist.")


@click.command("harness")
@click.argument("path")
@click.argument("selectors", nargs=-1)
@choice_option(
    "--generator",
    choices=["traced", "model"],
    default="traced",
    help="traced: from the repository's own tests, no model; model: --model writes them.",
)
@model_options("litellm provider/model for --generator model.")
@number_option(
    "--rounds", minimum=1, default=3, help="Generate-execute rounds of the model generator."
)
@threshold_options
@number_option(
    "--derive-runs",
    minimum=0,
    default=300,
    help="Changed copies of recorded calls tried on the reference per traced harness below "
    "--min-cov (kept as derived cases when they reach new branches; 0: none).",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Target filters as in reposim extract (default: r2e).",
)
@click.option(
    "--python",
    "python",
    default=None,
    help="The project's Python in the backend (default: python on the PATH).",
)
@click.option("--test-args", default="", help="Extra arguments for the traced test-suite run.")
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    default=None,
    help="Problems JSONL (default: PROJECT.problems.jsonl; a directory of them "
    "for a list of repositories).",
)
@batch_options(".reposim-harness-results.jsonl")
@backend_options
def harness_command(
    path: str,
    selectors: tuple[str, ...],
    generator: str,
    model: str | None,
    api_base: str | None,
    rounds: int,
    thresholds: Thresholds,
    derive_runs: int,
    filters: tuple[str, ...],
    python: str | None,
    test_args: str,
    output: str | None,
    batch: BatchSettings,
    flags: SessionFlags,
) -> None:
    """Make and validate test harnesses for the functions of the repository at PATH.

    PATH is a repository, or a text file listing repositories (one path per line) to run as a
    batch (--jobs, --timeout, resumable from --results). SELECTORS pick targets by id
    (path::qualname), qualname or glob; default: every function the filters keep.

    Each harness is a plain pytest file (docs/harness.md); it is validated on the reference
    (--repeats runs, branch coverage of the target only, mutation score) and the problems are
    written as reposim.problem/1 JSONL (docs/dataset.md).
    """
    from simulator.harness.batch import options_payload, run_repo
    from simulator.harness.env import DEFAULT_PYTHON, PythonEnv
    from simulator.harness.workflow import HarnessOptions

    if generator == "model" and not model:
        raise CliError("--generator model needs --model provider/name.")
    if flags.in_place:
        raise CliError("reposim harness writes into the workspace; it cannot run --in-place.")
    repos = _repositories(path)
    options = HarnessOptions(
        generator=generator,
        env=PythonEnv(python or DEFAULT_PYTHON),
        thresholds=thresholds,
        rounds=rounds,
        test_args=test_args,
        client=model_client(model, api_base) if model else None,
        derive_runs=derive_runs,
    )
    if len(repos) == 1 and Path(path).expanduser().is_dir():
        repo = repos[0]
        out = Path(output or f"{repo.name}.problems.jsonl").resolve()

        from simulator.batch import TaskFailure

        try:
            summary = run_async(
                lambda: run_repo(
                    repo,
                    out,
                    options,
                    selectors=list(selectors) or None,
                    filters=list(filters) or None,
                    backend=flags.backend_kind,
                    backend_options=flags.backend_options,
                    trajectory=flags.trajectory,
                    on_event=json_printer() if flags.as_json else _progress("harness"),
                )
            )
        except TaskFailure as exc:
            raise CliError(str(exc)) from None
        if not summary["targets"]:
            raise CliError("no target matches (see reposim extract --list-filters).")
        for line in _summary_lines(summary):
            click.echo(line, err=flags.as_json)
        click.echo(f"problems: {out}", err=flags.as_json)
        click.echo(f"trajectory: {summary['trajectory']}", err=True)
        return
    from simulator.batch import Task
    from simulator.harness.batch import repo_task

    outdir = Path(output or "problems").resolve()
    payload = options_payload(options, model=model, api_base=api_base)
    tasks = [
        Task(
            str(repo),
            {
                "repo": str(repo),
                "out": str(outdir / f"{repo.name}.problems.jsonl"),
                "options": payload,
                "selectors": list(selectors) or None,
                "filters": list(filters) or None,
                "backend": flags.backend_kind,
            },
        )
        for repo in repos
    ]
    batch_summary = run_batch_cli(tasks, repo_task, batch, label="harness")
    results = [r.result for r in batch_summary.records if r.result.get("targets") is not None]
    reasons: dict[str, int] = {}
    for result in results:
        for kind, count in (result.get("reasons") or {}).items():
            reasons[kind] = reasons.get(kind, 0) + count
    click.echo(
        f"targets {sum(r['targets'] for r in results)}, harnesses "
        f"{sum(r['harnesses'] for r in results)}, valid {sum(r['valid'] for r in results)} "
        f"in {len(results)} repositories; problems under {outdir}",
        err=True,
    )
    click.echo(f"outcome per target: {_reasons(reasons)}", err=True)


def _load(path: str) -> list[Any]:
    from simulator.dataset.readers import DatasetError, read_problems

    try:
        return read_problems(Path(path).expanduser())
    except DatasetError as exc:
        raise CliError(str(exc)) from None


@click.command("codegen")
@click.argument("problems")
@click.argument("selectors", nargs=-1)
@model_options("litellm provider/model that writes the samples.")
@number_option("-n", "samples", minimum=1, default=1, help="Samples per problem.")
@number_option(
    "-k",
    "ks",
    minimum=1,
    whole=True,
    multiple=True,
    help="pass@k to report (repeatable; default 1 and n).",
)
@number_option(
    "--debug-rounds",
    minimum=0,
    default=0,
    help="Feed a failing sample's harness output back this many times.",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every problem with a harness, not only valid or accepted ones.",
)
@click.option(
    "--repo",
    "repo_override",
    default=None,
    help="The repository to run in (default: where each problem was made).",
)
@click.option("--python", "python", default=None, help="The project's Python in the backend.")
@output_option("Write the per-problem results (samples, pass@k) as JSON here.")
@backend_options
@batch_options(".reposim-codegen-results.jsonl")
def codegen_command(
    problems: str,
    selectors: tuple[str, ...],
    model: str | None,
    api_base: str | None,
    samples: int,
    ks: tuple[int, ...],
    debug_rounds: int,
    every: bool,
    repo_override: str | None,
    python: str | None,
    output: str | None,
    flags: SessionFlags,
    batch: BatchSettings,
) -> None:
    """Mask each problem's target, sample implementations from --model, splice each in and
    score it with the problem's harness: pass@k (unbiased estimator), before and after
    --debug-rounds. PROBLEMS is a file written by reposim harness (or dataset export).

    Each problem is one task of the batch layer, in its own session: --results keeps what is
    scored (a rerun skips it), --jobs runs several problems at once, --timeout bounds each."""
    import fnmatch

    model_client(model, api_base)  # a missing model or key is one sentence before any task starts
    chosen = [
        p
        for p in _load(problems)
        if p.harness is not None
        and (every or str(p.curation.state) in ("valid", "accepted"))
        and (
            not selectors
            or any(
                fnmatch.fnmatchcase(p.target["id"], s)
                or s in (p.target["id"], p.target["qualname"])
                for s in selectors
            )
        )
    ]
    if not chosen:
        raise CliError("no problem with a valid or accepted harness matches (--all for any).")
    ks_list = sorted(set(ks or (1, samples)))
    if max(ks_list) > samples:
        raise CliError(f"-k {max(ks_list)} is more than the {samples} samples (-n).")
    from simulator.codegen.batch import codegen_task, run_codegen_task

    options = {
        "model": model,
        "api_base": api_base,
        "n": samples,
        "ks": ks_list,
        "debug_rounds": debug_rounds,
        "python": python,
        "repo": str(existing_dir(repo_override)) if repo_override else None,
        "backend": flags.backend_kind,
        "backend_options": dict(flags.backend_options),
        "in_place": flags.in_place,
        "trajectory_dir": str(flags.trajectory_path) if flags.trajectory else None,
    }
    summary = run_batch_cli(
        [codegen_task(problem, options) for problem in chosen],
        run_codegen_task,
        batch,
        label="codegen",
    )
    results = [
        {"problem": record.key, **record.result}
        for record in summary.records
        if str(record.status) == "ok"
    ]
    for outcome in results:
        if outcome.get("withheld"):
            click.echo(f"{outcome['problem']}: {outcome['withheld']}", err=flags.as_json)
    scored = [r for r in results if not r.get("withheld")]  # pass@k means nothing for the rest
    for outcome in scored:
        line = ", ".join(f"{k} {v:.2f}" for k, v in outcome["pass_at"].items())
        debugged = ", ".join(f"{k} {v:.2f}" for k, v in outcome["pass_at_debug"].items())
        click.echo(
            f"{outcome['problem']}: {outcome['correct_first']}/{samples} correct; {line}"
            + (f"; after debug rounds {debugged}" if debug_rounds else ""),
            err=flags.as_json,
        )
    if scored:
        for key in ("pass_at", "pass_at_debug") if debug_rounds else ("pass_at",):
            means = {k: statistics.fmean(r[key][k] for r in scored) for k in scored[0][key]}
            label = "mean over problems" + (
                " (after debug rounds)" if key == "pass_at_debug" else ""
            )
            click.echo(
                f"{label}: " + ", ".join(f"{k} {v:.3f}" for k, v in means.items()),
                err=flags.as_json,
            )
    if flags.as_json:
        for outcome in results:
            click.echo(json.dumps(outcome))
    if output:
        Path(output).write_text(json.dumps(results, indent=1) + "\n")
    if len(results) < len(summary.records) or len(summary.records) < len(chosen):
        sys.exit(1)


@click.command("debug")
@click.argument("path")
@click.argument("selector", required=False)
@model_options("litellm provider/model for the agent.")
@click.option(
    "--command",
    "test_command",
    default=None,
    help="The test command (default: pytest); SELECTOR is appended to it.",
)
@budget_options(max_steps=30, names=("max_steps", "max_time"))
@backend_options
def debug_command(
    path: str,
    selector: str | None,
    model: str | None,
    api_base: str | None,
    test_command: str | None,
    budgets: Budgets,
    flags: SessionFlags,
) -> None:
    """Let the agent fix the failing tests of the repository at PATH (all of them, or those
    SELECTOR picks: a file, a node id, a harness). Prints fixed / not fixed and the diff; the
    exit code is 0 when fixed (or already passing), 1 when not."""
    from simulator.codegen.debug import debug

    repo = existing_dir(path)
    client = model_client(model, api_base)

    async def run() -> Any:
        session = await flags.open(repo, test_command=test_command)
        try:
            return await debug(session, client, selector, budgets=budgets)
        finally:
            await session.close()

    result = run_async(run)
    out = sys.stderr if flags.as_json else sys.stdout
    print(f"{result.status}: tests {result.before} -> {result.after}", file=out)
    if result.summary:
        print(f"agent ({result.agent}): {result.summary}", file=out)
    if result.diff:
        print(result.diff, file=out, end="" if result.diff.endswith("\n") else "\n")
    sys.exit(0 if result.status in ("fixed", "already passing") else 1)


@click.group("dataset")
def dataset_group() -> None:
    """Problems as data: export to RepoSim JSONL, R2E or RepoST shapes; import them back."""


@dataset_group.command("export")
@click.argument("problems")
@choice_option("--to", "fmt", choices=["reposim", "r2e", "repost"], default="reposim")
@output_option(required=True)
@click.option(
    "--state",
    "states",
    multiple=True,
    help="Only problems in this curation state (repeatable), e.g. valid, accepted.",
)
@click.option(
    "--no-round-trip",
    is_flag=True,
    help="Leave out the embedded RepoSim problem of R2E/RepoST records.",
)
@click.option(
    "--keep-unharnessed",
    is_flag=True,
    help="R2E/RepoST: keep problems without a harness (left out by default), as errored records.",
)
def export_command(
    problems: str,
    fmt: str,
    output: str,
    states: tuple[str, ...],
    no_round_trip: bool,
    keep_unharnessed: bool,
) -> None:
    """Write PROBLEMS (reposim.problem/1 JSONL) in another shape (docs/dataset.md)."""
    from simulator.dataset.writers import write

    chosen = [p for p in _load(problems) if not states or str(p.curation.state) in states]
    count = write(
        chosen,
        Path(output),
        fmt,
        round_trip=not no_round_trip,
        keep_unharnessed=keep_unharnessed,
    )
    click.echo(f"{count} problem(s) written to {output} ({fmt}).", err=True)


@dataset_group.command("import")
@click.argument("source")
@output_option(required=True)
def import_command(source: str, output: str) -> None:
    """Read problems from a RepoSim export (any shape) and write them as RepoSim JSONL."""
    from simulator.dataset.writers import write_jsonl

    count = write_jsonl(_load(source), Path(output))
    click.echo(f"{count} problem(s) written to {output}.", err=True)


def register(group: click.Group) -> None:
    group.add_command(harness_command)
    group.add_command(codegen_command)
    group.add_command(debug_command)
    group.add_command(dataset_group)
