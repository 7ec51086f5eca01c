"""`reposim trajectory ...`: look at recorded trajectories."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from reposim.cli.common import CliError, existing_file
from reposim.cli.options import json_option, number_option
from simulator.describe import summarize
from simulator.trajectory import json_line, read_trajectory


@click.group("trajectory")
def trajectory_group() -> None:
    """Inspect recorded trajectories (reposim.trajectory/1 JSONL files)."""


@trajectory_group.command("show")
@click.argument("file")
@json_option("Print the header and events as JSON lines.")
def show(file: str, as_json: bool) -> None:
    """Summarise a trajectory (RepoSim's, or SWE-agent's, mini-swe-agent's, OpenAI chat JSONL,
    asciicast): where it came from, steps, actors, commands, edits, tests.

    A corrupt or truncated file is shown up to its last readable line, with a warning naming the
    line where reading stopped (exit code 1).
    """
    trajectory = read_trajectory(existing_file(file))
    if as_json:
        sys.stdout.write(json_line(trajectory.header.to_dict()) + "\n")
        for event in trajectory.events:
            sys.stdout.write(json_line(event.as_dict()) + "\n")
    else:
        click.echo(summarize(trajectory))
    if trajectory.problem:
        click.echo(f"reposim: {file}: {trajectory.problem}", err=True)
        sys.exit(1)


@trajectory_group.command("search")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.argument("text")
@json_option("Print each hit as a JSON line.")
@number_option("--max", "limit", minimum=1, default=200, help="Stop after this many hits.")
def search(folder: Path, text: str, as_json: bool, limit: int) -> None:
    """Find TEXT (case-insensitive) in every trajectory under FOLDER: commands, outputs, edits,
    test results and model messages, in RepoSim's files and SWE-agent / mini-swe-agent ones.

    Each hit is FILE:STEP, who acted, the event kind, where in it the text is, and a snippet;
    `reposim replay FILE` then jumps there with `/`. Exit code 0 when something was found, 1
    when nothing was. A file that cannot be read is named on stderr and skipped.
    """
    from simulator.compare import Unreadable, search_folder

    if not folder.is_dir():
        raise CliError(f"{folder} is not a folder of trajectories.")
    if not text.strip():
        raise CliError("the text to search for is empty.")
    found = 0
    for hit in search_folder(folder, text):
        if isinstance(hit, Unreadable):
            click.echo(f"reposim: skipped {hit.path}: {hit.reason}", err=True)
            continue
        found += 1
        if as_json:
            record = {
                "file": str(hit.path),
                "index": hit.index,
                "seq": hit.seq,
                "actor": hit.actor,
                "kind": hit.kind,
                "field": hit.field,
                "snippet": hit.snippet,
            }
            click.echo(json.dumps(record, ensure_ascii=False))
        else:
            where = hit.path.relative_to(folder) if hit.path.is_relative_to(folder) else hit.path
            click.echo(f"{where}:{hit.seq}  {hit.actor} {hit.kind} {hit.field}: {hit.snippet}")
        if found >= limit:
            click.echo(f"reposim: stopped after {limit} hits (--max).", err=True)
            break
    if not found:
        click.echo(f"No trajectory under {folder} contains {text!r}.", err=True)
        sys.exit(1)


@trajectory_group.command("compare")
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Show every aligned step, not only where the runs differ (with two steps of context).",
)
@json_option("Print the alignment and summary as JSON.")
def compare(files: tuple[str, ...], show_all: bool, as_json: bool) -> None:
    """Compare two or more runs of one task step by step (RepoSim, SWE-agent or mini-swe-agent
    files, mixed freely).

    Steps are aligned by their actions (commands, edits, test runs, searches), so one extra or
    missing step does not shift the rest: each row is `same`, `differs` (every run took the
    action, with another outcome or edit) or `partial` (only some runs took it). The summary
    gives the first divergence, the steps only one run took, the files whose final content
    differs and the tests whose outcome differs. Exit code 0 when the runs agree, 1 when they
    differ.
    """
    from simulator.compare import compare_files

    if len(files) < 2:
        raise CliError("compare needs at least two trajectories.")
    comparison = compare_files([existing_file(f) for f in files])
    if as_json:
        click.echo(json.dumps(comparison.as_dict(), ensure_ascii=False))
    else:
        click.echo(_comparison_text(comparison, show_all))
    sys.exit(0 if comparison.agree else 1)


def _comparison_text(comparison: Any, show_all: bool) -> str:
    from simulator.compare import RowState

    runs = comparison.runs
    names = [chr(ord("A") + i) if i < 26 else str(i) for i in range(len(runs))]
    width = shutil.get_terminal_size((120, 40)).columns
    cell = max(16, (width - 16) // len(runs) - 1)
    lines = [
        "  ".join(
            f"{name}: {run.path} ({len(run.steps)} steps)"
            for name, run in zip(names, runs, strict=True)
        )
    ]
    shown = {i for i, row in enumerate(comparison.rows) if show_all or row.state != RowState.SAME}
    if not show_all:
        shown |= {j for i in list(shown) for j in range(i - 2, i + 3)}
    lines.append(f"{'row':>5}  {'state':<8}" + "".join(f" {n:<{cell}}" for n in names))
    last = -1
    for i, row in enumerate(comparison.rows):
        if i not in shown or i < 0:
            continue
        if last >= 0 and i > last + 1:
            lines.append(f"{'…':>5}")
        last = i
        mark = "▶" if i == comparison.first_divergence else " "
        texts = [
            "·"
            if step is None
            else f"{step.index + 1}. {step.text}"
            + (f" → {step.observation}" if step.observation else "")
            for step in row.cells
        ]
        clipped = [t if len(t) <= cell else t[: cell - 1] + "…" for t in texts]
        lines.append(
            f"{mark}{i + 1:>4}  {row.state!s:<8}" + "".join(f" {t:<{cell}}" for t in clipped)
        )
    lines.append("")
    if comparison.first_divergence is None:
        lines.append("The runs take the same steps with the same outcomes.")
    else:
        row = comparison.rows[comparison.first_divergence]
        how = {
            RowState.DIFFERS: "the same action with a different outcome",
            RowState.PARTIAL: "a step not every run took",
        }[row.state]
        lines.append(f"First divergence: row {comparison.first_divergence + 1}, {how}.")
    for name, steps in zip(names, comparison.only_in, strict=True):
        if steps:
            listed = ", ".join(str(step.index + 1) for step in steps[:12])
            more = f" and {len(steps) - 12} more" if len(steps) > 12 else ""
            lines.append(f"Only in {name}: {len(steps)} steps ({listed}{more}).")
    if comparison.differing:
        lines.append(f"Same action, different outcome: {len(comparison.differing)} step(s).")
    for path, shas in comparison.files.items():
        states = ", ".join(
            f"{n}: {sha[:10] if sha else 'unchanged or deleted'}"
            for n, sha in zip(names, shas, strict=True)
        )
        lines.append(f"File differs at the end: {path} ({states}).")
    for test in comparison.tests:
        states = ", ".join(
            f"{n}: {o or 'not run'}" for n, o in zip(names, test.outcomes, strict=True)
        )
        lines.append(f"Test outcome differs: {test.test} ({states}).")
    return "\n".join(lines)


def register(group: click.Group) -> None:
    group.add_command(trajectory_group)
