"""What every sub-command shares: clear one-sentence errors, JSON event printing, options."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from backends.base import BackendError
from simulator.events import Event
from simulator.session import SessionError
from simulator.trajectory import TrajectoryError

T = TypeVar("T")

# Errors a user can cause; each prints as one sentence with exit code 2.
USER_ERRORS: tuple[type[Exception], ...] = (BackendError, SessionError, TrajectoryError)


class CliError(click.ClickException):
    """A user-facing error: one sentence, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"reposim: error: {self.format_message()}", err=True)


def run_cli(group: click.Group) -> int:
    try:
        group.main(standalone_mode=False, prog_name="reposim")
    except click.exceptions.Abort:
        click.echo("reposim: aborted.", err=True)
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except USER_ERRORS as exc:
        click.echo(f"reposim: error: {exc}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("reposim: interrupted.", err=True)
        return 130
    return 0


def run_async(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine; user errors become CliError, Ctrl-C a clean exit 130."""
    try:
        return asyncio.run(factory())
    except USER_ERRORS as exc:
        raise CliError(str(exc)) from None


def existing_dir(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.exists():
        raise CliError(f"{path} does not exist.")
    if not target.is_dir():
        raise CliError(f"{path} is not a directory.")
    return target.resolve()


def existing_file(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.exists():
        raise CliError(f"{path} does not exist.")
    if target.is_dir():
        raise CliError(f"{path} is a directory, not a file.")
    return target


def json_printer(stream: Any = None) -> Callable[[Event], None]:
    out = stream or sys.stdout

    def emit(event: Event) -> None:
        out.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
        out.flush()

    return emit


def backend_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--backend, --in-place, --trajectory and --json, shared by commands that open a session."""
    func = click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print every event as a JSON line on stdout instead of plain output.",
    )(func)
    func = click.option(
        "--trajectory",
        "trajectory",
        type=click.Path(dir_okay=False),
        help="Where to write the trajectory (default: under ~/.local/share/reposim/trajectories).",
    )(func)
    func = click.option(
        "--in-place",
        is_flag=True,
        help="Work on the repository itself instead of a scratch copy (local backend only).",
    )(func)
    func = click.option(
        "--backend",
        "backend_kind",
        type=click.Choice(["local", "docker"]),
        default="local",
        show_default=True,
        help="Where commands run: this machine (not a sandbox) or a container.",
    )(func)
    return func
