"""The look of the app, fixed at 80x24 and 160x48 in both themes.

The frame is deterministic: a fixed repository, the workspace's basename (never the temporary
path), the Changes tab in the bottom panel (no shell prompt, no durations), focus on the tree (no
blinking cursor). Update after an intended change with `pytest tests/ui --snapshot-update` and
look at the report before committing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulator.events import Actor
from tests.ui.helpers import (
    StartingApp,
    every_theme_at_both_sizes,
    settled_frame,
    unstarted_session,
    wait_for,
)
from widgets.changes_view import ChangesView
from widgets.editor_pane import EditorPane
from widgets.file_tree import FileTree
from widgets.status_bar import StatusBar
from widgets.terminal_pane import TerminalPane


def terminal_settled(app: Any) -> bool:
    """The shell redrew its prompt at the pane's final width (wider than the 10 columns it may
    start at) and that output is recorded."""
    panes = app.query(TerminalPane)
    if not panes:
        return False
    pane = panes.first()
    rows = [row.rstrip() for row in pane.screen_text()]
    redrawn = any(len(row) > 10 and row.endswith("#") for row in rows)
    return pane.pty is not None and redrawn and not pane.pty.output_pending


# The agent's card shows the edit's step number, the trajectory's. Before it come the session's
# checkpoint, the editor's read and the shell's start, which records 2 events on a quiet machine
# (its size, its prompt) and more under load (the prompt read in two batches, a first size before
# the final layout). The test tops the trajectory up to this many steps with reads, so the edit's
# number does not depend on how the load split the shell's start.
STEPS_BEFORE_THE_EDIT = 12


@every_theme_at_both_sizes
def test_workspace_with_an_agent_change(
    snap_compare: Any, sample_repo: Path, tmp_path: Path, size: tuple[int, int], theme: str
) -> None:
    session = unstarted_session(sample_repo, tmp_path / "trajectory.jsonl")
    steps: list[int] = []
    session.subscribe(lambda event: steps.append(event.seq) if event.seq else None)
    app = StartingApp(session, theme_name=theme)

    async def run_before(pilot: Any) -> None:
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: "calc" in tree.nodes_by_path, "the root listing")
        tree.nodes_by_path["calc"].expand()
        await wait_for(pilot, lambda: "calc/ops.py" in tree.nodes_by_path, "calc/ listed")
        app.open_path("calc/ops.py")
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "calc/ops.py", "the editor")
        # The shell's prompt at the panel's final width, recorded: its events come before the
        # agent's edit, whose step number the Changes tab shows.
        await wait_for(pilot, lambda: terminal_settled(app), "the terminal's prompt recorded")
        assert max(steps) <= STEPS_BEFORE_THE_EDIT, f"{max(steps)} steps before the edit"
        for _ in range(STEPS_BEFORE_THE_EDIT - max(steps)):
            await session.read("calc/__init__.py")
        await session.edit("calc/ops.py", "(len(values) - 1)", "len(values)", actor=Actor.AGENT)
        area = editor.current_editor
        assert area is not None
        await wait_for(pilot, lambda: "/ len(values)\n" in area.text, "the buffer reload")
        area.move_cursor((0, 0))  # where a reload leaves the cursor is the editor's business
        await pilot.press("f7")
        changes = app.query_one(ChangesView)
        diff = app.query_one("#changes-diff")
        await wait_for(pilot, lambda: len(changes.changes) == 1, "the changes list")
        await wait_for(pilot, lambda: "+    return" in str(diff.render()), "the diff")
        await wait_for(pilot, lambda: tree.status.get("calc/ops.py") == "M", "the tree mark")
        await wait_for(pilot, lambda: app.query_one(StatusBar).changed == 1, "the count")
        app.clear_notifications()  # toasts expire on a clock; keep them out of the frame
        tree.focus()
        tree.move_cursor(tree.nodes_by_path["calc/ops.py"])
        await settled_frame(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
