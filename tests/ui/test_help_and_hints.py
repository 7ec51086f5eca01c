"""F1 lists every key with its id — the editor's undo / redo and Tab between panes too — scrolls
with the keyboard and shows ids on a narrow screen; the agent's task hint fits its pane
(issue 18, minor item 15)."""

from __future__ import annotations

from textual.widgets import DataTable, Input

from simulator.session import Session
from tests.ui.helpers import running, wait_for
from widgets.help_screen import HelpScreen


def help_rows(table: DataTable[str]) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(index)] for index in range(table.row_count)]


async def test_f1_lists_undo_redo_and_tab_and_scrolls_at_80x24(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        table = app.screen.query_one(DataTable)
        await wait_for(pilot, lambda: table.row_count > 0, "the rows")
        rows = help_rows(table)
        by_action = {row[3]: row for row in rows}
        assert by_action["Undo"][:2] == ["Editor", "Ctrl+z"]
        assert by_action["Redo"][:2] == ["Editor", "Ctrl+y"]
        assert any(row[1] == "Tab / Shift+Tab" for row in rows)
        assert ["Editor", "Ctrl+f", "editor.find"] in [row[:3] for row in rows]
        # The id is on screen at 80 columns (the description is what gets cut).
        id_column = list(table.columns.values())[2]
        widths = [column.get_render_width(table) for column in table.columns.values()]
        assert str(id_column.label) == "Id"
        assert sum(widths[:3]) <= table.size.width
        assert table.max_scroll_y > 0
        await pilot.press(*["down"] * (table.size.height + 2))
        await wait_for(pilot, lambda: table.scroll_y > 0, "Down to scroll the list")
        scrolled = table.scroll_y
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: table.scroll_y > scrolled, "PageDown to scroll on")
        # The highlighted row in full below the table, the description the table cuts included.
        _, keys, _, what = help_rows(table)[table.cursor_row]
        detail = str(app.screen.query_one("#help-detail").render())
        assert what in detail.replace("\n", " ") and keys in detail
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), "Esc to close")


async def test_the_task_hint_fits_the_agent_pane_at_80_and_160_columns(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await pilot.press("ctrl+j")
        task = app.query_one("#agent-task", Input)
        for size in ((80, 24), (160, 48), (120, 30)):
            await pilot.resize_terminal(*size)
            await wait_for(pilot, lambda s=size: app.size.width == s[0], "the resize")
            await wait_for(
                pilot,
                lambda: (
                    task.placeholder.startswith("Task")
                    and len(task.placeholder) < task.content_size.width
                ),
                f"the hint to fit at {size}",
            )
            if size[0] >= 120:  # a 40-column pane: more than the shortest hint
                assert task.placeholder == "Task for the agent, or $ command"
