"""`reposim open`: the interactive UI on a recorded session (Textual is imported only here)."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path

import click

from simulator.backend_factory import BACKEND_KINDS, make_backend
from simulator.cli.common import CliError, existing_dir, run_async
from simulator.session import Session
from themes import theme_names


@click.command("open")
@click.argument("path")
@click.option(
    "--backend",
    "backend_kind",
    type=click.Choice(list(BACKEND_KINDS)),
    default="local",
    show_default=True,
    help="Where commands run: this machine (a scratch copy, not a sandbox) or a container.",
)
@click.option(
    "--in-place",
    is_flag=True,
    help="Work on the repository itself instead of a scratch copy (local backend only).",
)
@click.option(
    "--trajectory",
    type=click.Path(dir_okay=False),
    help="Where to write the trajectory (default: under ~/.local/share/reposim/trajectories).",
)
@click.option(
    "--theme",
    help="Colour theme (default: [ui] theme in ~/.config/reposim/config.toml, else reposim-dark).",
)
def open_command(
    path: str, backend_kind: str, in_place: bool, trajectory: str | None, theme: str | None
) -> None:
    """Open the repository at PATH in the RepoSim UI (file tree, editor, terminal, agent pane).

    Everything you do in it is recorded in the session's trajectory; quit with Ctrl+Q.
    """
    root = existing_dir(path)
    if theme is not None and theme not in theme_names():
        raise CliError(
            f"There is no theme named {theme!r}; choose one of {', '.join(theme_names())}."
        )

    async def run() -> Path:
        backend = make_backend(backend_kind, root, in_place=in_place)
        session = Session(
            backend,
            source=root,
            trajectory_path=Path(trajectory).resolve() if trajectory else None,
        )
        # The UI's modules load in a thread while the backend starts (mostly waiting on
        # processes), which takes a good part off the cold start.
        ui_loading = asyncio.create_task(asyncio.to_thread(importlib.import_module, "widgets.app"))
        try:
            await session.start()
        finally:
            ui = await ui_loading
        reason = "closed"
        try:
            await ui.RepoSimApp(session, theme_name=theme).run_async()
        except BaseException:
            reason = "interrupted"
            raise
        finally:
            await session.close(reason)
        return session.trajectory_path

    trajectory_path = run_async(run)
    click.echo(f"reposim: trajectory {trajectory_path}", err=True)


def register(group: click.Group) -> None:
    group.add_command(open_command)
