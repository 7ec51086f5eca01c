"""`reposim curate PATH|DATASET`: the harness curation screen (Textual loads in `run` only)."""

from __future__ import annotations

from pathlib import Path

import click

from reposim.cli.common import CliError, SessionFlags, backend_options, run_async
from reposim.cli.options import (
    folder_option,
    model_client,
    model_options,
    output_option,
    theme_option,
)
from reposim.ui import closing_after_ui
from simulator.session import Session


@click.command("curate")
@click.argument("source", type=click.Path(exists=False))
@output_option(
    "Where the problems and every decision are saved as they are made (default: DATASET "
    "itself, or a new ./<repository>-problems.jsonl for a repository); Ctrl+E saves elsewhere.",
)
@folder_option(
    "--repo",
    "repo_path",
    help="The repository a DATASET was made from (default: the source its problems name).",
)
@click.option("--by", help="Your name in the curation history (default: your login name).")
@click.option(
    "--target",
    "selectors",
    multiple=True,
    help="Only these targets: an id (path::name), a name, or a glob over ids; repeat for more. "
    "One that picks no target is an error.",
)
@theme_option
@model_options(
    "The model M regenerates harnesses with, as provider/name for litellm (default: "
    "$REPOSIM_MODEL, as for the agent)."
)
@backend_options
def curate_command(
    source: str,
    output: str | None,
    repo_path: str | None,
    by: str | None,
    selectors: tuple[str, ...],
    theme: str | None,
    model: str | None,
    api_base: str | None,
    flags: SessionFlags,
) -> None:
    """Curate test harnesses: SOURCE is a repository (its functions become targets without a
    harness) or a problems file made by `reposim harness` (JSON lines).

    In the screen: G generates traced harnesses for the shown targets, / filters (words that
    all hold: a state, cov<80, mut>=60, flaky, noted, a name; `|` or `or` between alternatives:
    `valid cov<80 | flaky`), r runs the selected harness again (after an edit), m runs its mutants,
    d shows its surviving mutants as diffs, M regenerates with the model (--model), a accepts,
    x rejects with a reason, n adds a note, Ctrl+E exports (it asks where), F1 lists every key.
    Every decision is recorded in the session's trajectory and saved to the problems file
    (--output) the moment it is made, as the problem's curation state: quitting loses none.
    """
    if flags.as_json:
        raise CliError("reposim curate is interactive; --json is for exec, test and replay.")
    if api_base and not model:
        raise CliError("--api-base needs --model provider/name.")
    client = None
    if model:  # an unknown model or a missing key is one sentence now, not on the first M
        client = model_client(model, api_base)
    from simulator.dataset.readers import DatasetError, read_problems
    from simulator.dataset.schema import Problem

    path = Path(source).expanduser()
    problems: list[Problem] | None = None
    if path.is_dir():
        from widgets.curation.model import default_export

        root = path.resolve()
        export = Path(output).resolve() if output else default_export(Path.cwd(), root.name)
    elif path.is_file():
        try:
            problems = read_problems(path)
        except DatasetError as exc:
            raise CliError(str(exc)) from None
        if not problems:
            raise CliError(f"{path} holds no problems to curate.")
        named = repo_path or problems[0].repo.get("source")
        if not named or not Path(named).is_dir():
            raise CliError(
                f"The repository of {path} ({named or 'not named'}) is not here; give it with "
                "--repo PATH."
            )
        root = Path(named).resolve()
        export = Path(output).resolve() if output else path.resolve()
    else:
        raise CliError(f"{source} is neither a repository directory nor a problems file.")

    async def run() -> Path:
        session: Session = await flags.open(root)
        async with closing_after_ui(session) as ending:
            from simulator.harness.target import TargetError
            from widgets.curation.app import CurationApp, select_problems, target_problems

            try:
                if problems is None:
                    chosen = target_problems(session, list(selectors) or None)
                else:
                    chosen = select_problems(problems, list(selectors), where=str(path))
            except TargetError as exc:
                raise CliError(str(exc)) from None
            if not chosen:
                raise CliError(f"{root} has no functions to make harnesses for.")
            app = CurationApp(
                session, chosen, export_path=export, by=by, theme_name=theme, client=client
            )
            await app.run_async()
            if app.saved_to is not None:
                click.echo(f"reposim: problems and decisions saved to {app.saved_to}", err=True)
            ending.ui_ended(app.return_code)
        return session.trajectory_path

    trajectory_path = run_async(run)
    click.echo(f"reposim: trajectory {trajectory_path}", err=True)


def register(group: click.Group) -> None:
    group.add_command(curate_command)
