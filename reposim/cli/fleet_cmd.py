"""`reposim fleet`: every session of a batch, live (Textual loads in the command only)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from reposim.cli.common import CliError
from reposim.cli.options import number_option, theme_option


def _locate(target: Path, *, wait: bool = False) -> tuple[Path, Path | None]:
    """(trajectory folder, results store) for a folder or a batch's results file. With `wait`,
    a results file not written yet is taken as a batch about to start (its folder is watched
    until it appears)."""
    if target.is_dir():
        return target, None
    folder = target.with_name(target.stem + ".trajectories")
    if wait and not target.exists() and target.suffix == ".jsonl":
        return folder, target
    if target.is_file():
        if not folder.is_dir():
            raise CliError(
                f"{target} is a results file, but its trajectory folder {folder} does not "
                "exist (pass the folder the batch's --trajectories named)."
            )
        return folder, target
    raise CliError(f"{target} is neither a folder of trajectories nor a batch's results file.")


@click.command("fleet")
@click.argument(
    "target",
    type=click.Path(path_type=Path),
    default=".reposim-agent-results.jsonl",
    required=False,
)
@number_option(
    "--stuck-after",
    minimum=1,
    default=60.0,
    help="Seconds without a new event after which a running session is shown as stuck.",
)
@theme_option
@click.option(
    "--once",
    is_flag=True,
    help="Print the sessions as JSON lines and exit, instead of opening the view.",
)
def fleet_command(target: Path, stuck_after: float, theme: str | None, once: bool) -> None:
    """Watch every session of a batch: one row each (repository, task, state, steps, last
    action, elapsed, tests, cost), updated live as their trajectories grow.

    TARGET is a batch's results file (default: .reposim-agent-results.jsonl, whose trajectories
    are in the folder beside it named after it, as `reposim agent --tasks` writes them) or any
    folder of trajectories; a results file not written yet is watched until its batch starts.
    Keys: Enter follows a session in the replay viewer, where `p` takes a running session over
    (pauses its agent, gives you its terminal; `r` lets it go on); `/` filters, `s` cycles the
    sort, `S` shows only stuck and failed sessions, `m` marks and `=` compares, q quits.
    """
    from simulator.fleet import Fleet

    folder, results = _locate(target, wait=not once)
    fleet = Fleet(folder, results=results, stuck_after=stuck_after)
    if once:
        rows = fleet.poll(time.time())
        for row in sorted(rows, key=lambda r: r.key):
            record = {
                "session": row.key,
                "repo": row.repo,
                "task": row.task,
                "state": str(row.state),
                "steps": row.steps,
                "last_action": row.last_action,
                "elapsed": row.elapsed,
                "tests": row.tests,
                "cost": row.cost if row.cost_known else None,
                "verdict": row.verdict,
                "trajectory": str(row.path) if row.path else None,
            }
            click.echo(json.dumps(record, ensure_ascii=False))
        return
    if not sys.stdout.isatty():
        raise CliError("the fleet view needs a terminal; use --once for JSON lines.")
    from widgets.fleet import FleetApp

    FleetApp(fleet, theme_name=theme).run()


def register(group: click.Group) -> None:
    group.add_command(fleet_command)
