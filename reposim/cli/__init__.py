"""The `reposim` command line. Each sub-command lives in its own module of this package."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from reposim.cli.common import run_cli

# Modules that each define `register(group)`; imported when a command of theirs runs, or all of
# them for --help (see LazyGroup).
COMMAND_MODULES = [
    "reposim.cli.exec_cmd",
    "reposim.cli.trajectory_cmd",
    "reposim.cli.ui_cmd",
    "reposim.cli.replay_cmd",
    "reposim.cli.docker_cmd",
    "reposim.cli.agent_cmd",
    "reposim.cli.extract_cmd",
    "reposim.cli.perf_cmd",
    "reposim.cli.harness_cmd",
    "reposim.cli.setup_cmd",
    "reposim.cli.curate_cmd",
    "reposim.cli.fleet_cmd",
]


# Where each top-level command lives, so that running one imports only its module (`reposim open`
# loads neither the analysis, agent nor replay code). A command missing here still works (the
# group then imports every module); tests/cli/test_lazy.py checks this against the modules.
COMMAND_HOMES = {
    "exec": "reposim.cli.exec_cmd",
    "test": "reposim.cli.exec_cmd",
    "trajectory": "reposim.cli.trajectory_cmd",
    "open": "reposim.cli.ui_cmd",
    "replay": "reposim.cli.replay_cmd",
    "export": "reposim.cli.replay_cmd",
    "import": "reposim.cli.replay_cmd",
    "gc": "reposim.cli.docker_cmd",
    "image": "reposim.cli.docker_cmd",
    "agent": "reposim.cli.agent_cmd",
    "demo": "reposim.cli.agent_cmd",
    "extract": "reposim.cli.extract_cmd",
    "perf": "reposim.cli.perf_cmd",
    "harness": "reposim.cli.harness_cmd",
    "codegen": "reposim.cli.harness_cmd",
    "debug": "reposim.cli.harness_cmd",
    "dataset": "reposim.cli.harness_cmd",
    "setup": "reposim.cli.setup_cmd",
    "env": "reposim.cli.setup_cmd",
    "curate": "reposim.cli.curate_cmd",
    "fleet": "reposim.cli.fleet_cmd",
}


class LazyGroup(click.Group):
    """A group whose command modules are imported on first use: a faster cold start."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()

    def load(self, module: str) -> None:
        if module not in self._loaded:
            self._loaded.add(module)
            importlib.import_module(module).register(self)

    def load_all(self) -> None:
        for module in COMMAND_MODULES:
            self.load(module)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_all()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        home = COMMAND_HOMES.get(cmd_name)
        if home is not None:
            self.load(home)
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self.load_all()
            command = super().get_command(ctx, cmd_name)
        return command


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_version(ctx) if value else None,
    help="Show the version and exit.",
)
def cli() -> None:
    """RepoSim: any repository as an executable, recordable, replayable coding environment.

    Every command runs through a session that records a trajectory (JSONL) you can show,
    replay and export. The local backend works on a scratch copy of the repository; your
    checkout is never modified unless you pass --in-place.
    """


def _print_version(ctx: click.Context) -> None:
    """`--version`: the version is looked up only here (importlib.metadata costs every other
    command ~20 ms of its start)."""
    from simulator import __version__

    click.echo(f"reposim, version {__version__}")
    ctx.exit()


def main() -> None:
    sys.exit(run_cli(cli))
