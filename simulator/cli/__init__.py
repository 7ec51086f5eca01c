"""The `reposim` command line. Each sub-command lives in its own module of this package."""

from __future__ import annotations

import importlib
import sys

import click

from simulator import __version__
from simulator.cli.common import run_cli

# Modules that each define `register(group)`; imported when the CLI starts.
COMMAND_MODULES = [
    "simulator.cli.exec_cmd",
    "simulator.cli.trajectory_cmd",
    "simulator.cli.ui_cmd",
    "simulator.cli.replay_cmd",
    "simulator.cli.docker_cmd",
    "simulator.cli.agent_cmd",
    "simulator.cli.extract_cmd",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", "-V", prog_name="reposim")
def cli() -> None:
    """RepoSim: any repository as an executable, recordable, replayable coding environment.

    Every command runs through a session that records a trajectory (JSONL) you can show,
    replay and export. The local backend works on a scratch copy of the repository; your
    checkout is never modified unless you pass --in-place.
    """


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def main() -> None:
    sys.exit(run_cli(cli))
