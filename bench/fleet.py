"""The fleet view with 500 live sessions: first frame, update lag, key latency (issue 27).

500 trajectories (the real writer) sit in a folder; the fleet app opens on it headless
(App.run_test, 160x48). Then a writer thread appends commands to random sessions at 20 events
a second in total, each command carrying the wall-clock time it was written; the lag of an
update is the time from that write to the moment the table applied the row that shows it.
Keys: a cursor move and a re-sort, pressed while the fleet updates, each timed from the key
entering the app (as the terminal driver hands it over) to the end of the first screen refresh
after the table changed — what a person waits for. (`pilot.press` is not used: it also waits
for the whole process to go idle, which the poll thread never lets it do.) Reference, same run:
a bare Textual app showing a 500-row DataTable filled in one go — its first frame, and the same
two keys timed the same way while 20 of its cells a second are updated through `update_cell`
(what the fleet view did before it drew its own table).

Targets (DESIGN.md): first frame <= 1 s; update lag p95 <= 500 ms; a key <= 50 ms.

    uv run python bench/fleet.py [--sessions 500] [--seconds 20] [--rate 20]
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from bench._report import arguments, ms, percentile, table
from simulator.events import Actor, Event
from simulator.fleet import Fleet, SessionRow
from simulator.trajectory import RepoInfo, TrajectoryHeader, TrajectoryWriter
from widgets.fleet import FleetApp, FleetScreen
from widgets.fleet.table import FleetTable


class BareTable(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [("s", "sort_grid", "Sort")]

    def __init__(self, rows: int) -> None:
        super().__init__()
        self.rows = rows
        self.sorted_by = "session"

    def action_sort_grid(self) -> None:
        self.sorted_by = "steps" if self.sorted_by == "session" else "session"
        self.query_one(DataTable).sort(self.sorted_by)

    def compose(self) -> ComposeResult:
        yield DataTable()

    def on_mount(self) -> None:
        grid = self.query_one(DataTable)
        for name in ("session", "repo", "state", "steps", "last", "elapsed", "tests", "cost"):
            grid.add_column(name, key=name)
        for n in range(self.rows):
            grid.add_row(f"s{n}", "repo", "running", "1", "$ ls", "0:01", "", "$0.000")


async def timed_key(app: App[Any], key: str, changed: Callable[[], object]) -> float:
    """Seconds from handing `key` to the app to the refresh that shows its effect."""
    assert app._driver is not None
    before = changed()
    shown = asyncio.Event()
    start = time.perf_counter()
    app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    while changed() == before:  # noqa: ASYNC110 - the app changes it; we only look
        await asyncio.sleep(0.0005)
    app.call_after_refresh(shown.set)
    await shown.wait()
    return time.perf_counter() - start


async def bare_table(rows: int, seconds: float, rate: float) -> tuple[float, list[float]]:
    """The reference: first frame of a bare 500-row DataTable, then its keys under updates."""
    start = time.perf_counter()
    app = BareTable(rows)
    keys: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        first = time.perf_counter() - start
        grid = app.query_one(DataTable)
        grid.focus()
        rng = random.Random(5)
        deadline = time.perf_counter() + seconds
        next_update = time.perf_counter()
        while time.perf_counter() < deadline:
            for key in ("down", "down", "up", "s"):
                while time.perf_counter() >= next_update:
                    grid.update_cell_at(Coordinate(rng.randrange(rows), 3), str(rng.randrange(99)))
                    next_update += 1 / rate
                keys.append(await timed_key(app, key, lambda: (grid.cursor_row, app.sorted_by)))
            await pilot.pause(0.2)
    return first, keys


def make_sessions(folder: Path, count: int) -> list[TrajectoryWriter]:
    writers = []
    for n in range(count):
        header = TrajectoryHeader.new(f"s{n}", repo=RepoInfo(source=f"/src/repo{n % 37}"))
        writer = TrajectoryWriter(folder / f"session-{n:04d}.jsonl", header)
        writer.write(Event(1, 0.1, Actor.AGENT, "exec", {"command": "ls"}))  # type: ignore[arg-type]
        writers.append(writer)
    return writers


async def measure(sessions: int, seconds: float, rate: float) -> dict[str, list[float]]:
    folder = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    writers = make_sessions(folder, sessions)
    seqs = [1] * sessions
    written: dict[str, float] = {}
    lags: list[float] = []
    stop = threading.Event()

    def writer_thread() -> None:
        rng = random.Random(5)
        count = 0
        while not stop.is_set():
            n = rng.randrange(sessions)
            count += 1
            stamp = f"w{count}"
            seqs[n] += 1
            written[stamp] = time.perf_counter()
            writers[n].write(
                Event(seqs[n], seqs[n] * 0.1, Actor.AGENT, "exec", {"command": f"echo {stamp}"})  # type: ignore[arg-type]
            )
            stop.wait(1 / rate)

    start = time.perf_counter()
    app = FleetApp(Fleet(folder, stuck_after=3600))
    first = 0.0
    keys: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        while not (isinstance(app.screen, FleetScreen) and app.screen.updates):
            await pilot.pause(0.01)
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        grid = screen.query_one(FleetTable)
        while grid.row_count < sessions:
            await pilot.pause(0.01)
        first = time.perf_counter() - start

        def timed(rows: list[SessionRow]) -> None:
            now = time.perf_counter()
            for row in rows:
                stamp = row.last_action.rpartition(" ")[2]
                if stamp in written:
                    lags.append(now - written.pop(stamp))

        screen.observer = timed
        thread = threading.Thread(target=writer_thread, daemon=True)
        thread.start()
        grid.focus()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            for key in ("down", "down", "up", "s"):
                keys.append(
                    await timed_key(
                        app, key, lambda: (grid.cursor, grid.keys[:3], screen.sort_index)
                    )
                )
            await pilot.pause(0.2)
        stop.set()
        thread.join()
    for writer in writers:
        writer.close()
    return {"first": [first], "lags": lags, "keys": keys}


def main() -> None:
    args = arguments(__doc__.splitlines()[0], sessions=500, seconds=20.0, rate=20.0)
    bare, bare_keys = asyncio.run(bare_table(args.sessions, args.seconds, args.rate))
    got = asyncio.run(measure(args.sessions, args.seconds, args.rate))
    lags, keys = got["lags"], got["keys"]
    print(
        f"load average {os.getloadavg()[0]:.1f}; {args.sessions} sessions, "
        f"{args.rate:g} events/s for {args.seconds:g} s; {len(lags)} updates timed"
    )
    print(
        table(
            "fleet view (targets: first frame <= 1 s, lag p95 <= 500 ms, key <= 50 ms)",
            [
                (
                    "first frame with every row",
                    f"bare 500-row DataTable {ms(bare)}",
                    ms(got["first"][0]),
                ),
                (
                    "update lag (write -> row on screen)",
                    "-",
                    f"median {ms(statistics.median(lags))}, p95 {ms(percentile(lags, 0.95))}, "
                    f"max {ms(max(lags))}"
                    if lags
                    else "none timed",
                ),
                (
                    "key press to frame (move, sort)",
                    f"DataTable: median {ms(statistics.median(bare_keys))}, "
                    f"p95 {ms(percentile(bare_keys, 0.95))}, max {ms(max(bare_keys))}",
                    f"median {ms(statistics.median(keys))}, p95 {ms(percentile(keys, 0.95))}, "
                    f"max {ms(max(keys))}",
                ),
            ],
        )
    )


if __name__ == "__main__":
    main()
