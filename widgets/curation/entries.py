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
from widgets.workflow_entries import start, workflow_entries

if TYPE_CHECKING:  # the harness engine loads when an entry is chosen, not with the app
    from simulator.dataset.schema import Problem
    from widgets.app import RepoSimApp


def workflow_actions(app: RepoSimApp) -> list[PaletteAction]:
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


async def _setup(app: RepoSimApp) -> None:
    from simulator.setup.ladder import run_setup

    app.notify("Setting up the repository: progress in the agent pane.")
    result = await run_setup(app.session)  # failures are said by workflow_entries.start
    app.notify(f"Setup: {result.verdict.tier}.")


def cursor_position(app: RepoSimApp) -> tuple[str, int] | None:
    """The open file and the cursor's line (1-based), or None when no file is open."""
    from widgets.editor_pane import EditorPane

    pane = app.query_one(EditorPane)
    editor = pane.current_editor
    if pane.current_path is None or editor is None:
        return None
    return pane.current_path, editor.cursor_location[0] + 1


def _under(problems: list[Problem], path: str, line: int) -> list[Problem]:
    inside = [
        p
        for p in problems
        if p.target.get("path") == path
        and int(p.target.get("start_line") or 0) <= line <= int(p.target.get("end_line") or 0)
    ]
    return inside[-1:]  # the innermost (targets are listed in file order)


async def problem_under(app: RepoSimApp, cursor: tuple[str, int]) -> Problem | None:
    """The target function at the cursor (a problem without a harness yet), or None after
    saying why there is none."""
    from widgets.curation.app import target_problems

    problems = _under(await asyncio.to_thread(target_problems, app.session), *cursor)
    if not problems:
        app.notify(
            f"No target function at {cursor[0]}:{cursor[1]} (a documented module-level "
            "function or method with arguments and a return).",
            severity="warning",
        )
        return None
    return problems[0]


async def _open(app: RepoSimApp, cursor: tuple[str, int] | None) -> None:
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
