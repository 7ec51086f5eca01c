"""Curation from `reposim open`: palette entries that open the curation screen on the session.

The app lists `workflow_actions(app)` in its palette; each entry finds its targets in a thread
(the code index parses the repository) and pushes a CurationScreen over the workspace. The
other workflows started from the editor (codegen, debug, perf, the model harness generator)
are widgets/workflow_entries.py's, listed here too.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from widgets.palette import PaletteAction
from widgets.workflow_entries import cursor_position, problem_under, start, workflow_entries
from widgets.workspace_app import WorkspaceApp

if TYPE_CHECKING:  # the harness engine loads when an entry is chosen, not with the app
    pass


def workflow_actions(app: WorkspaceApp) -> list[PaletteAction]:
    return [
        PaletteAction(
            "Curate harnesses",
            "Generate, check, accept or reject test harnesses for the repository's functions",
            lambda: app.run_worker(_open(app, None), group="curation"),
        ),
        PaletteAction(
            "Generate a harness for the function under the cursor",
            "A traced harness for it, validated (coverage, mutation score), in the curation screen",
            lambda: app.run_worker(_open(app, cursor_position(app)), group="curation"),
        ),
        PaletteAction(
            "Set up this repository",
            "Install it and find its test command (the setup ladder); progress and the verdict "
            "as cards in the agent pane",
            lambda: start(app, "setup", lambda: _setup(app)),
        ),
        *workflow_entries(app),
    ]


async def _setup(app: WorkspaceApp) -> None:
    from simulator.setup.ladder import run_setup

    app.notify("Setting up the repository: progress in the agent pane.")
    result = await run_setup(app.session)  # failures are said by workflow_entries.start
    app.notify(f"Setup: {result.verdict.tier}.")


async def _open(app: WorkspaceApp, cursor: tuple[str, int] | None) -> None:
    from widgets.curation.app import target_problems
    from widgets.curation.model import default_export
    from widgets.curation.screen import CurationScreen

    session = app.session
    if cursor is not None:
        problem = await problem_under(app, cursor)
        if problem is None:
            return
        problems = [problem]
    else:
        problems = await asyncio.to_thread(target_problems, session)
    export = default_export(Path.cwd(), session.source.name)
    screen = CurationScreen(session, problems, export_path=export)
    await app.push_screen(screen)
    if cursor is not None:
        screen.action_generate()
