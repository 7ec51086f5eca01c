"""`reposim setup` (one repository or a LIST) and `reposim env` (ready environment images)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import click

from reposim.cli.batch import BatchSettings, batch_options, run_batch_cli
from reposim.cli.common import CliError, json_printer, on_workflow_steps, run_async, step_seconds
from reposim.cli.options import (
    backend_kind_options,
    folder_option,
    json_option,
    model_options,
    number_option,
)


def _progress(as_json: bool) -> Any:
    """Stage lines on stderr (or every event as JSON on stdout)."""

    def show(step: dict[str, Any], detail: dict[str, Any]) -> None:
        if step["status"] == "running":
            extra = f" {detail.get('reason')}" if detail.get("reason") else ""
            click.echo(f"  {step['step']}…{extra}", err=True)
            return
        note = ""
        if step["step"] == "oracle" and detail.get("tier"):
            note = f" → {detail['tier']}"
            if detail.get("category"):
                note += f" [{detail['category']}]"
        elif detail.get("not_installed"):
            note = f" (not installed: {', '.join(detail['not_installed'])})"
        click.echo(f"  {step['step']} {step['status']}{step_seconds(step)}{note}", err=True)

    return json_printer() if as_json else on_workflow_steps(show)


@click.command("setup")
@click.argument("target")
@backend_kind_options(
    "backend_kind",
    default="docker",
    help="A fresh container with the network on (docker) or a scratch copy on this machine.",
    image_help="Base image (default: $REPOSIM_SETUP_IMAGE or reposim/base:bookworm-2).",
)
@model_options("A litellm provider/model that takes over when the ladder stops short.")
@click.option(
    "--model-rounds", type=int, default=6, show_default=True, help="Commands the model may run."
)
@click.option("--min-tests", type=int, default=10, show_default=True, help="Tests for ready+.")
@number_option(
    "--budget",
    minimum=1,
    default=1200.0,
    help="Seconds for the ladder: no repair round starts that would not end, with the "
    "whole-suite run that confirms it, within them.",
)
@click.option(
    "--save-env", is_flag=True, help="Commit a ready container to reposim/env/NAME:COMMIT."
)
@click.option("--name", "env_name", help="The environment's name (default: the directory's).")
@folder_option(
    "--trajectory-dir",
    help="Where the trajectories go (default: under ~/.local/share/reposim/trajectories).",
)
@json_option("Print events (or LIST records) as JSON lines.")
@batch_options(".reposim-setup-results.jsonl")
def setup_command(
    target: str,
    backend_kind: str,
    image: str | None,
    model: str | None,
    api_base: str | None,
    model_rounds: int,
    min_tests: int,
    budget: float,
    save_env: bool,
    env_name: str | None,
    trajectory_dir: str | None,
    as_json: bool,
    batch: BatchSettings,
) -> None:
    """Install a repository's dependencies until its tests run, and say why when they do not.

    TARGET is a directory, a git URL (optionally URL@COMMIT), or a LIST file with one path or URL
    per line (optionally pinned: `URL COMMIT` or `URL@COMMIT`). Each repository runs the install
    ladder in a fresh environment — detect, venv, project with test extras, requirement files,
    test runner and plugins, the import scan, the oracle, error-driven repairs — every step
    recorded in a trajectory. The verdict is one of none / installed / imports / collects /
    runs / ready / ready+; short of ready it names a category and the evidence line
    (docs/setup.md). Exit code 0 when ready, 1 when not, 2 on a usage error.

    A LIST runs in parallel workers (--jobs) with a progress line and a per-repository time
    limit (--timeout, default 1800 s), appends each result to the --results file and, when
    rerun, skips the repositories that already have a result.
    """
    from simulator.setup.batch import Entry, ListError, read_list
    from simulator.setup.runner import SetupRequest

    request = SetupRequest(
        backend=backend_kind,
        image=image,
        model=model,
        api_base=api_base,
        model_rounds=model_rounds,
        min_tests=min_tests,
        budget=budget,
        trajectory_dir=trajectory_dir,
        save_env=save_env,
        env_name=env_name,
    )
    if save_env and backend_kind != "docker":
        raise CliError("--save-env needs the docker backend.")
    path = Path(target).expanduser()
    if path.is_file():
        try:
            entries = read_list(path)
        except ListError as exc:
            raise CliError(str(exc)) from None
        _run_list(entries, request, batch, as_json)
        return
    if path.is_dir():
        entry = Entry(str(path.resolve()))
    elif "://" in target or target.startswith("git@"):
        source, _, commit = (
            target.rpartition("@") if "@" in target.split("/")[-1] else (target, "", "")
        )
        entry = Entry(source or target, commit or None)
    else:
        raise CliError(f"{target} is not a directory, a git URL or a LIST file.")
    sys.exit(_run_one(entry, request, as_json))


def _run_one(entry: Any, request: Any, as_json: bool) -> int:
    from simulator.batch import TaskFailure
    from simulator.setup.batch import checkout
    from simulator.setup.runner import setup_repository

    try:
        root = checkout(entry, Path.home() / ".cache" / "reposim" / "setup-clones")
    except TaskFailure as exc:
        raise CliError(f"{exc} ({exc.evidence}).") from None
    click.echo(f"reposim setup {root} ({request.backend})", err=True)
    outcome = run_async(lambda: setup_repository(root, request, subscriber=_progress(as_json)))
    verdict = outcome.result.verdict
    if not as_json:
        click.echo(f"{root.name}: {verdict.line()}")
        if verdict.test_command:
            click.echo(f"test command: {verdict.test_command}")
        for round_ in outcome.model_rounds:
            click.echo(f"model round {round_.get('round')}: {round_.get('command') or round_}")
        if outcome.image:
            click.echo(f"environment: {outcome.image} (Dockerfile: {outcome.dockerfile})")
        if outcome.venv:
            click.echo(
                f"venv: {outcome.venv} (later local sessions of {root} use it until its "
                "project or requirement files change)"
            )
        click.echo(f"trajectory: {outcome.trajectory}", err=True)
    return 0 if verdict.ready else 1


def _run_list(entries: list[Any], request: Any, batch: BatchSettings, as_json: bool) -> None:
    from simulator.setup.batch import setup_task, tasks_for

    if batch.timeout is None:
        batch = dataclasses.replace(batch, timeout=1800.0)
    tasks = tasks_for(entries, **request.to_payload())
    summary = run_batch_cli(tasks, setup_task, batch, label="setup")
    if as_json:
        for record in summary.records:
            click.echo(json.dumps(record.to_dict(), default=str))
        return
    width = max((len(Path(r.key).name) for r in summary.records), default=10)
    for record in summary.records:
        tier = (record.result.get("verdict") or {}).get("tier") or str(record.status)
        why = f" [{record.category}] {record.evidence}" if record.category else ""
        click.echo(f"{Path(record.key).name:{width}}  {tier:9} {record.seconds:7.1f}s{why}")


@click.group("env")
def env_group() -> None:
    """Ready environment images made by `reposim setup --save-env`."""


@env_group.command("list")
@json_option("One JSON object per image.")
def env_list(as_json: bool) -> None:
    """List ready environments: name, image, verdict, size, test command."""
    from simulator.setup.envimage import list_environments

    environments = list_environments()
    if as_json:
        for environment in environments:
            click.echo(json.dumps(environment.to_dict()))
        return
    if not environments:
        click.echo("No ready environments (make one with `reposim setup PATH --save-env`).")
    for e in environments:
        size = f"{e.size / 1024**2:.0f} MB"
        click.echo(f"{e.name:20} {e.tag:50} {e.verdict or '':8} {size:>8}  {e.test_command or ''}")


@env_group.command("prune")
@click.option("--name", "env_name", help="Only this environment's images.")
@click.option(
    "--max-size",
    default="20g",
    show_default=True,
    help="Keep env images within this total size (the newest of each name is kept unless 0).",
)
def env_prune(env_name: str | None, max_size: str) -> None:
    """Remove the oldest ready-environment images until their total is within --max-size."""
    from simulator.setup.envimage import prune_environments

    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    text = max_size.strip().lower()
    try:
        budget = int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)
    except ValueError:
        raise CliError(f"--max-size {max_size} is not a size like 500m or 20g.") from None
    removed = prune_environments(budget=budget, name=env_name)
    for e in removed:
        click.echo(f"removed {e.tag} ({e.size / 1024**2:.0f} MB)")
    click.echo(f"reposim env prune: removed {len(removed)} image(s).")


def register(group: click.Group) -> None:
    group.add_command(setup_command)
    group.add_command(env_group)
