"""`reposim open`: the interactive UI on a recorded session (Textual loads in `run_ui` only)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from reposim.cli.common import (
    CliError,
    SessionFlags,
    backend_options,
    existing_dir,
    existing_file,
    run_async,
)
from reposim.cli.options import model_client, model_options, theme_option
from reposim.ui import run_ui

if TYPE_CHECKING:
    from simulator.session import Session  # loads as the session opens, after the first frame


@click.command("open")
@click.argument("path", required=False)
@click.option(
    "--resume",
    "resume_file",
    type=click.Path(dir_okay=False),
    help="Continue a trajectory (crashed or closed): its actions are replayed into a new "
    "session, then the UI opens on it. PATH, if given, is the repository to start from.",
)
@theme_option
@click.option(
    "--test-command",
    help="The command F5 runs for this repository, remembered for next time (an empty one "
    "forgets it). Default: the remembered one, else detected (ctest, meson test, make test, "
    "unittest), else pytest.",
)
@model_options(
    "The model of the agent pane and of the workflows started from the palette "
    "(codegen, debug, model harnesses), a litellm provider/name. Default: $REPOSIM_MODEL."
)
@backend_options
def open_command(
    path: str | None,
    resume_file: str | None,
    theme: str | None,
    test_command: str | None,
    model: str | None,
    api_base: str | None,
    flags: SessionFlags,
) -> None:
    """Open the repository at PATH in the RepoSim UI (file tree, editor, terminal, agent pane).

    Everything you do in it is recorded in the session's trajectory; quit with Ctrl+Q.
    """
    if flags.as_json:
        raise CliError("reposim open is interactive; --json is for exec, test and replay.")
    if path is None and resume_file is None:
        raise click.UsageError("Give the repository to open, or --resume FILE.")
    root = existing_dir(path) if path is not None else None
    resume_from = existing_file(resume_file) if resume_file is not None else None
    if resume_from is not None and flags.in_place:
        raise CliError("--in-place cannot be combined with --resume.")
    if api_base is not None and model is None:
        raise CliError("--api-base goes with --model.")
    agent_config = None
    if model is not None:
        from simulator.agent import AgentConfig

        agent_config = AgentConfig(client=model_client(model, api_base))

    backend_kind = flags.backend_kind
    consent = False
    if resume_from is not None:
        # Resuming re-runs the recorded commands: someone else's run in a container unless
        # --backend local is given (see choose_backend).
        from simulator.replay.reexec import choose_backend
        from simulator.trajectory import open_trajectory

        source = click.get_current_context().get_parameter_source("backend_kind")
        asked = None if source is click.core.ParameterSource.DEFAULT else backend_kind
        with open_trajectory(resume_from) as recorded:
            backend_kind = choose_backend(recorded, asked)
        from reposim.cli.replay_cmd import host_consent

        consent = host_consent(resume_from, backend_kind)

    async def start() -> Session:
        if resume_from is not None:
            from simulator.replay import resume

            return await resume(
                resume_from,
                backend_kind=backend_kind,
                trajectory_path=flags.trajectory_path,
                repo=root,
                host_consent=consent,
            )
        assert root is not None
        from simulator.test_command import choose

        # A command given is remembered now; else it is chosen when first asked for, after
        # the first frame (detection walks the repository).
        chosen = choose(root, test_command) if test_command is not None else None
        # The UI is showing when this runs (after its first frame): it says a stale venv.
        return await flags.open(
            root, test_command=chosen or (lambda: choose(root, None)), say_stale=False
        )

    async def run() -> Path:
        # Not resuming: the workspace starts as `root`, whose tree the first frame shows
        # while the session opens.
        session = await run_ui(
            start(),
            theme=theme,
            agent_config=agent_config,
            source=root if resume_from is None else None,
        )
        return session.trajectory_path

    trajectory_path = run_async(run)
    click.echo(f"reposim: trajectory {trajectory_path}", err=True)


def register(group: click.Group) -> None:
    group.add_command(open_command)
