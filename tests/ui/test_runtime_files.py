"""RepoSim's own files in the workspace (`.reposim/`: the harness runtime, the tracer, a copy of
coverage.py, mutants) are never the person's changes (issue 26, major 2): not in the status
bar's count, the Changes view, a checkpoint's diff or the patch kept at exit."""

from __future__ import annotations

from pathlib import Path

from reposim.ui import keep_changes
from simulator.events import Actor
from simulator.session import Session
from tests.ui.helpers import running, wait_for
from widgets.agent_pane import EventCard
from widgets.app import kept_changes_path
from widgets.changes_view import ChangesView
from widgets.status_bar import StatusBar

RUNTIME = [
    ".reposim/runtime/site/coverage/__init__.py",
    ".reposim/runtime/reposim_tracer.py",
    ".reposim/harness/test_calc_ops_mean.py",
]


async def test_runtime_files_are_not_changes(session: Session) -> None:
    async with running(session, (160, 48)) as (app, pilot):
        # what a harness run leaves: helper uploads, and files its commands write
        for path in RUNTIME[:2]:
            await session.write_helper(path, b"# RepoSim's own\n" * 50)
        await session.exec(
            "mkdir -p .reposim/harness .reposim-perf && echo 'def test_x(): pass' > "
            f"{RUNTIME[2]} && echo tools > .reposim-perf/pyperf.txt",
            actor=Actor.SYSTEM,
        )
        # a workflow's own writes there (a trace spec) are plumbing, not cards
        await session.write(".reposim/trace_spec.json", "{}", actor=Actor.SYSTEM)
        await session.edit("calc/ops.py", "(len(values) - 1)", "len(values)", actor=Actor.AGENT)
        status = app.query_one(StatusBar)
        await wait_for(pilot, lambda: status.changed == 1, "one changed file")
        shown = [card.event.payload.get("path") for card in app.query(EventCard)]
        assert "calc/ops.py" in shown and ".reposim/trace_spec.json" not in shown, shown
        await pilot.press("f7")
        changes = app.query_one(ChangesView)
        assert app.focused is changes.query_one("#changes-files")  # F7 lands in the list
        await wait_for(pilot, lambda: [c.path for c in changes.changes] == ["calc/ops.py"], "list")
        checkpoint = await session.checkpoint("after")
        assert checkpoint.tree
        assert ".reposim" not in await session.diff()
        kept = await keep_changes(session)
        assert kept is not None
        path = kept_changes_path(session)
        assert path is not None
        patch = Path(path).read_text()
        assert "calc/ops.py" in patch and ".reposim" not in patch, patch[:2000]
        # still there for the workflows that use them: excluded, not removed
        await session.restore("start")
        assert (Path(session.workspace_path) / RUNTIME[0]).exists()
