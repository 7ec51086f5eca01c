"""Runs of one task side by side (`reposim replay A B [C ...]`, or `=` on marked runs in the
fleet view): one column per run, one row per aligned step, the first divergence highlighted
and the cursor on it, and the summary under the table (simulator/compare says how rows align)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from simulator.compare import Comparison, RowState
from widgets.keybindings import default_bindings

_STYLE = {RowState.SAME: "", RowState.DIFFERS: "yellow", RowState.PARTIAL: "cyan"}


def _label(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else str(index)


def summary_lines(comparison: Comparison) -> list[str]:
    """The comparison's summary, one finding a line (the CLI's text compare says the same)."""
    names = [_label(i) for i in range(len(comparison.runs))]
    lines = []
    if comparison.first_divergence is None:
        lines.append("The runs take the same steps with the same outcomes.")
    else:
        row = comparison.rows[comparison.first_divergence]
        how = (
            "the same action with a different outcome"
            if row.state == RowState.DIFFERS
            else "a step not every run took"
        )
        lines.append(f"First divergence: row {comparison.first_divergence + 1}, {how}.")
    for name, steps in zip(names, comparison.only_in, strict=True):
        if steps:
            lines.append(f"Only in {name}: {len(steps)} step(s).")
    if comparison.differing:
        lines.append(f"Same action, different outcome: {len(comparison.differing)} step(s).")
    for path in comparison.files:
        lines.append(f"File differs at the end: {path}.")
    for test in comparison.tests:
        states = ", ".join(
            f"{n}: {o or 'not run'}" for n, o in zip(names, test.outcomes, strict=True)
        )
        lines.append(f"Test outcome differs: {test.test} ({states}).")
    return lines


class CompareScreen(Screen[None]):
    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    #compare-title { height: auto; padding: 0 1; background: $panel; }
    #compare-table { height: 1fr; }
    #compare-summary { height: auto; max-height: 8; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("compare"))

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        runs = self.comparison.runs
        title = "   ".join(
            f"[b]{_label(i)}[/] {run.label} ({len(run.steps)} steps)" for i, run in enumerate(runs)
        )
        yield Static(title, id="compare-title", markup=True)
        yield DataTable(id="compare-table", cursor_type="row")
        yield Static("\n".join(summary_lines(self.comparison)), id="compare-summary")
        yield Footer()

    def on_mount(self) -> None:
        grid: DataTable[str | Text] = self.query_one(DataTable)
        grid.add_column("row", key="row")
        grid.add_column("state", key="state")
        for i in range(len(self.comparison.runs)):
            grid.add_column(_label(i), key=_label(i))
        first = self.comparison.first_divergence
        for number, row in enumerate(self.comparison.rows):
            style = _STYLE[row.state]
            if number == first:
                style = "bold reverse " + (style or "red")
            cells: list[str | Text] = [
                Text(f"{'▶' if number == first else ' '}{number + 1}", style=style),
                Text(str(row.state), style=style),
            ]
            for step in row.cells:
                text = "·" if step is None else f"{step.index + 1}. {step.text}"
                if step is not None and step.observation:
                    text += f" → {step.observation}"
                cells.append(Text(text, style=style, no_wrap=True, overflow="ellipsis"))
            grid.add_row(*cells)
        grid.focus()
        if first is not None:
            grid.move_cursor(row=first)

    def _differences(self) -> list[int]:
        return [i for i, row in enumerate(self.comparison.rows) if row.state != RowState.SAME]

    def action_next_difference(self) -> None:
        grid = self.query_one(DataTable)
        later = [i for i in self._differences() if i > grid.cursor_row]
        if later:
            grid.move_cursor(row=later[0])

    def action_previous_difference(self) -> None:
        grid = self.query_one(DataTable)
        earlier = [i for i in self._differences() if i < grid.cursor_row]
        if earlier:
            grid.move_cursor(row=earlier[-1])

    def action_close(self) -> None:
        self.dismiss()


class CompareApp(App[None]):
    """`reposim replay A B [C ...]` on its own."""

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison

    def on_mount(self) -> None:
        self.push_screen(CompareScreen(self.comparison), lambda _: self.exit())
