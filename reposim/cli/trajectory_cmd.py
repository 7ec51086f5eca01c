"""`reposim trajectory ...`: look at recorded trajectories."""

from __future__ import annotations

import json
import sys

import click

from reposim.cli.common import existing_file
from simulator.describe import summarize
from simulator.trajectory import read_trajectory


@click.group("trajectory")
def trajectory_group() -> None:
    """Inspect recorded trajectories (reposim.trajectory/1 JSONL files)."""


@trajectory_group.command("show")
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="Print the header and events as JSON lines.")
def show(file: str, as_json: bool) -> None:
    """Summarise a trajectory (RepoSim's, or SWE-agent's, mini-swe-agent's, OpenAI chat JSONL,
    asciicast): where it came from, steps, actors, commands, edits, tests.

    A corrupt or truncated file is shown up to its last readable line, with a warning naming the
    line where reading stopped (exit code 1).
    """
    trajectory = read_trajectory(existing_file(file))
    if as_json:
        sys.stdout.write(json.dumps(trajectory.header.to_dict(), ensure_ascii=False) + "\n")
        for event in trajectory.events:
            sys.stdout.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
    else:
        click.echo(summarize(trajectory))
    if trajectory.problem:
        click.echo(f"reposim: {file}: {trajectory.problem}", err=True)
        sys.exit(1)


def register(group: click.Group) -> None:
    group.add_command(trajectory_group)
