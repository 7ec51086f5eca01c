"""The fleet view: one row per session of a batch, updated live, filtered and sorted by key.

A thread polls the engine's `Fleet` (simulator/fleet.py) and posts the rows that changed; the
table (widgets/fleet/table.py) repaints those lines only, so 500 sessions cost what changed, not
a redraw of everything.
Enter attaches to a session: its trajectory opens in the replay viewer, following the file as
it grows (read-only). Stuck sessions (nothing written for a while) stand out in the state column.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.style import Style
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from simulator.fleet import Fleet, SessionRow, SessionState
from widgets.fleet.table import Column, FleetTable
from widgets.keybindings import default_bindings

# The last action takes the width the others leave: at 80 columns every other column still shows.
TABLE_COLUMNS = (
    Column("session", 28),
    Column("repo", 20),
    Column("state", 24),
    Column("steps", 6, right=True),
    Column("elapsed", 8, right=True),
    Column("tests", 24),
    Column("cost", 9, right=True),
    Column("last action", 60, flexible=True),
)
COLUMNS = tuple(column.name for column in TABLE_COLUMNS)
_STATE_COLUMN = COLUMNS.index("state")
SORTS = ("session", "state", "steps", "elapsed", "cost")
_STATE_STYLE = {
    SessionState.STARTING: Style(dim=True),
    SessionState.RUNNING: Style(),
    SessionState.STUCK: Style(bold=True, reverse=True, color="red"),
    SessionState.PAUSED: Style(bold=True, color="yellow"),
    SessionState.FINISHED: Style(color="green"),
    SessionState.FAILED: Style(color="red"),
    SessionState.ENDED: Style(color="yellow"),
}
# Stuck first when sorting by state: they are what a person is looking for.
_STATE_ORDER = {
    state: n
    for n, state in enumerate(
        (
            SessionState.STUCK,
            SessionState.PAUSED,
            SessionState.FAILED,
            SessionState.RUNNING,
            SessionState.STARTING,
            SessionState.ENDED,
            SessionState.FINISHED,
        )
    )
}


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}"


def _cells(row: SessionRow) -> tuple[str, ...]:
    cost = f"${row.cost:.3f}" if row.cost_known else (f"≥${row.cost:.3f}" if row.cost else "?")
    return (
        row.key,
        row.repo,
        str(row.state) + (f" · {row.verdict}" if row.verdict else ""),
        str(row.steps),
        _elapsed(row.elapsed),
        row.tests,
        cost,
        row.last_action,
    )


class FleetScreen(Screen[None]):
    CSS_PATH = "fleet.tcss"

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("fleet"))

    @dataclass
    class Changed(Message):
        rows: list[SessionRow]

    def __init__(self, fleet: Fleet, *, interval: float = 0.25) -> None:
        super().__init__()
        self.fleet = fleet
        self.interval = interval
        self.filter_text = ""
        self.only_stuck = False
        self.sort_index = 0
        self._rows: dict[str, SessionRow] = {}  # every session, as last posted
        self._shown: dict[str, int] = {}  # key -> the row version on screen
        self._stop = threading.Event()
        self.updates = 0  # Changed messages applied (tests and the benchmark wait on it)
        self.observer: Callable[[list[SessionRow]], None] | None = None
        """Called with the rows of each update once the table shows them (bench/fleet.py)."""
        self._sort_pending = False
        self.marked: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(f"Fleet: {self.fleet.folder}", id="fleet-title")
        yield Input(placeholder="filter: text any column holds (Esc clears)", id="fleet-filter")
        header = Static("", id="fleet-header")
        table = FleetTable(TABLE_COLUMNS, id="fleet-table")
        table.header = header
        yield header
        yield table
        yield Static("", id="fleet-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FleetTable).focus()
        self._poll()

    def on_unmount(self) -> None:
        self._stop.set()

    @work(thread=True, exclusive=True, group="fleet-poll")
    def _poll(self) -> None:
        while not self._stop.is_set():
            changed = self.fleet.poll()
            if changed:
                # Copies: the thread goes on updating its rows while the UI reads these.
                self.post_message(self.Changed([_copy(row) for row in changed]))
            self._stop.wait(self.interval)

    @on(Changed)
    def _changed(self, message: Changed) -> None:
        table = self.query_one(FleetTable)
        resort = False
        for row in message.rows:
            visible = self._visible(row)
            present = row.key in self._shown
            if visible and present:
                table.update_row(row.key, self._cells(row), _styles(row))
            elif visible:
                table.add_row(row.key, self._cells(row), _styles(row))
                resort = True
            elif present:
                table.remove_row(row.key)
                del self._shown[row.key]
            if visible:
                self._shown[row.key] = row.version
        self._rows.update({row.key: row for row in message.rows})
        # At most one re-sort a second: with 500 sessions sorting on every update would cost
        # more than the updates themselves.
        if resort and not self.updates:
            self._sort()  # the first rows: in order at once, before anyone moves the cursor
        elif (resort or SORTS[self.sort_index] != "session") and not self._sort_pending:
            self._sort_pending = True
            self.set_timer(1.0, self._sort_later)
        self.updates += 1
        self._status()
        if self.observer is not None:
            self.observer(message.rows)

    def _sort_later(self) -> None:
        self._sort_pending = False
        self._sort()

    def _visible(self, row: SessionRow) -> bool:
        if self.only_stuck and row.state not in (SessionState.STUCK, SessionState.FAILED):
            return False
        return not self.filter_text or self.filter_text in row.text()

    def _sort(self) -> None:
        table = self.query_one(FleetTable)
        column = SORTS[self.sort_index]
        rows = self._rows

        def key(session: str) -> object:
            row = rows.get(session)
            if row is None:
                return 0
            if column == "state":
                return (_STATE_ORDER[row.state], row.key)
            if column == "steps":
                return -row.steps
            if column == "elapsed":
                return -row.elapsed
            if column == "cost":
                return -row.cost
            return row.key

        table.sort(key)

    def _refilter(self) -> None:
        table = self.query_one(FleetTable)
        table.clear()
        self._shown.clear()
        for row in sorted(self._rows.values(), key=lambda r: r.key):
            if self._visible(row):
                table.add_row(row.key, self._cells(row), _styles(row))
                self._shown[row.key] = row.version
        self._sort()
        self._status()

    def _status(self) -> None:
        rows = self._rows.values()
        counts: dict[SessionState, int] = {}
        for row in rows:
            counts[row.state] = counts.get(row.state, 0) + 1
        parts = [
            f"{n} {state}" for state, n in sorted(counts.items(), key=lambda i: _STATE_ORDER[i[0]])
        ]
        shown = (
            f"{len(self._shown)} of {len(self._rows)} shown"
            if len(self._shown) != len(self._rows)
            else f"{len(self._rows)} session{'s' if len(self._rows) != 1 else ''}"
        )
        extra = []
        if self.filter_text:
            extra.append(f"filter {self.filter_text!r}")
        if self.only_stuck:
            extra.append("stuck and failed only")
        extra.append(f"sorted by {SORTS[self.sort_index]}")
        self.query_one("#fleet-status", Static).update(
            f"{shown}: {', '.join(parts) or 'none yet'} · {' · '.join(extra)}"
        )

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self._sort()
        self._status()

    def action_only_stuck(self) -> None:
        self.only_stuck = not self.only_stuck
        self._refilter()

    def action_filter(self) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#fleet-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip().casefold()
        self._refilter()

    @on(Input.Submitted, "#fleet-filter")
    def _filter_done(self) -> None:
        self.query_one(FleetTable).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.query_one(FleetTable).focus()

    @on(FleetTable.RowSelected, "#fleet-table")
    def _row_selected(self, event: FleetTable.RowSelected) -> None:
        # The table takes Enter itself (as row selection): attach from there.
        self._follow_session(event.key)

    def _cursor_key(self) -> str | None:
        return self.query_one(FleetTable).cursor_key

    def action_mark(self) -> None:
        key = self._cursor_key()
        if key is None:
            return
        if key in self.marked:
            self.marked.remove(key)
        else:
            self.marked.append(key)
        row = self._rows[key]
        self.query_one(FleetTable).update_row(key, self._cells(row), _styles(row))

    def _session_cell(self, row: SessionRow) -> str:
        return f"● {row.key}" if row.key in self.marked else row.key

    def _cells(self, row: SessionRow) -> tuple[str, ...]:
        return (self._session_cell(row), *_cells(row)[1:])

    def action_compare(self) -> None:
        paths = [self._rows[k].path for k in self.marked if self._rows[k].path is not None]
        if len(paths) < 2:
            self.notify("Mark two or more sessions with m first.", severity="warning")
            return
        self._compare([p for p in paths if p is not None])

    @work(thread=True, exclusive=True, group="fleet-compare")
    def _compare(self, paths: list[Path]) -> None:
        from simulator.compare import compare_files
        from simulator.trajectory import TrajectoryError

        try:
            comparison = compare_files(list(paths))
        except TrajectoryError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        from widgets.compare import CompareScreen

        self.app.call_from_thread(self.app.push_screen, CompareScreen(comparison))

    def action_attach(self) -> None:
        key = self.query_one(FleetTable).cursor_key
        if key is not None:
            self._follow_session(key)

    def _follow_session(self, key: str) -> None:
        row = self._rows.get(key)
        if row is None or row.path is None or not row.path.exists():
            self.notify("This session has no trajectory to attach to.", severity="warning")
            return
        from widgets.fleet.attached import AttachedScreen

        self.app.push_screen(AttachedScreen(row.path))

    def action_quit_fleet(self) -> None:
        self.app.exit()


def _styles(row: SessionRow) -> dict[int, Style]:
    return {_STATE_COLUMN: _STATE_STYLE[row.state]}


def _copy(row: SessionRow) -> SessionRow:
    from dataclasses import replace

    return replace(row)
