"""The CLI imports a command's module only when that command runs (cold start of `reposim open`),
and `reposim --help` still lists every command."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
from click.testing import CliRunner

from reposim.cli import COMMAND_HOMES, COMMAND_MODULES, cli


def test_every_registered_command_has_its_home() -> None:
    for module in COMMAND_MODULES:
        group = click.Group()
        importlib.import_module(module).register(group)
        for name in group.commands:
            assert COMMAND_HOMES.get(name) == module, f"{name} ({module}) is not in COMMAND_HOMES"


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMAND_HOMES:
        assert f"  {name} " in result.output, name


def test_open_imports_only_its_own_module() -> None:
    probe = (
        "import json, sys\n"
        "from reposim.cli import cli\n"
        "try:\n"
        "    cli.main(['open', '--help'], standalone_mode=False)\n"
        "finally:\n"
        "    print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "reposim.cli.ui_cmd" in loaded
    for other in ("reposim.cli.agent_cmd", "reposim.cli.replay_cmd", "simulator.analysis"):
        assert other not in loaded, other
    assert "litellm" not in loaded
