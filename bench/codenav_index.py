"""The editor's code index built the way the app builds it, over the Python standard library.

Reference, in the same run: `CodeIndex.build(root, workers=1)` straight from the disk (no
session, no event loop) over the same files, and the same app idling (the event loop's own
jitter on this machine). Ours: an `EditorPane` mounted on an in-place local session of the
root, in a headless Textual app, building its index as it does in `reposim open` (list with
session.list_dir, unrecorded session.read_bytes, extraction in worker processes), `--repeats`
times. While it builds, a 10 ms ticker on the app's event loop measures each gap (what typing
would feel); the longest gap of each build is its stall. Then, once: a resync with nothing
changed, one file's refresh, and a go-to-definition that rebuilds the call graph.

Run: uv run python bench/codenav_index.py [--root DIR] [--repeats 3]
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _report import arguments, ms, percentile, table
from textual.app import App, ComposeResult

from simulator.analysis.index import CodeIndex
from simulator.session import Session
from widgets.editor_pane import EditorPane

TICK = 0.01


async def ticker(stop: asyncio.Event, gaps: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(TICK)
        gaps.append(time.perf_counter() - start - TICK)


class PaneHost(App[None]):
    def __init__(self, pane: EditorPane) -> None:
        super().__init__()
        self.pane = pane

    def compose(self) -> ComposeResult:
        yield self.pane


@dataclass
class Build:
    build: float
    gaps: list[float]
    files: int = 0
    lines: int = 0
    changed: list[str] = field(default_factory=list)
    resync: float = 0.0
    target: str = ""
    refresh: float = 0.0
    graph: float = 0.0


async def idle_app(root: Path, trajectory: Path, seconds: float) -> list[float]:
    """Ticker gaps of the same app idling (its pane's index of a one-file root built)."""
    session = await Session.open(root, trajectory_path=trajectory)
    pane = EditorPane(session)
    try:
        async with PaneHost(pane).run_test(size=(160, 48)) as pilot:
            while not pane.code_index.ready:
                await pilot.pause(0.05)
            gaps: list[float] = []
            stop = asyncio.Event()
            tick = asyncio.create_task(ticker(stop, gaps))
            await asyncio.sleep(seconds)
            stop.set()
            await tick
            return gaps
    finally:
        await session.close()


async def build_in_app(root: Path, trajectory: Path, *, more: bool) -> Build:
    """Mount an EditorPane and tick until its index is ready; with `more`, time a resync, a
    refresh and a go-to-definition after it."""
    session = await Session.open(
        root, in_place=True, trajectory_path=trajectory, checkpoint_start=False
    )
    pane = EditorPane(session)
    try:
        async with PaneHost(pane).run_test(size=(160, 48)):
            gaps: list[float] = []
            stop = asyncio.Event()
            tick = asyncio.create_task(ticker(stop, gaps))
            started = time.perf_counter()
            while not pane.code_index.ready:
                if pane.code_index.error:
                    raise RuntimeError(pane.code_index.error)
                await asyncio.sleep(0.05)
            out = Build(time.perf_counter() - started, gaps)
            stop.set()
            await tick
            if not more:
                return out
            index = pane.code_index
            started = time.perf_counter()
            out.changed = await index.resync()
            out.resync = time.perf_counter() - started
            files = await index.query(lambda ix: list(ix.files))
            out.files = len(files)
            out.lines = await index.query(lambda ix: sum(r.lines for r in ix.files.values()))
            target = "json/decoder.py" if "json/decoder.py" in files else files[0]
            out.target = target
            started = time.perf_counter()
            await index.refresh(target)
            out.refresh = time.perf_counter() - started
            started = time.perf_counter()
            await index.query(lambda ix: ix.definition_at(target, 1, 0))
            out.graph = time.perf_counter() - started
            return out
    finally:
        await session.close()


def distribution(values: list[float]) -> str:
    return (
        f"median {ms(statistics.median(values))}  p95 {ms(percentile(values, 0.95))}  "
        f"max {ms(max(values))}"
    )


async def main(root: Path, repeats: int) -> None:
    started = time.perf_counter()
    reference_files = len(CodeIndex.build(root, workers=1).files)
    reference_s = time.perf_counter() - started
    gc.collect()  # the app holds one index, not this one too (forking workers copies it all)
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny"
        tiny.mkdir()
        (tiny / "one.py").write_text("def one():\n    return 1\n")
        idle = await idle_app(tiny, Path(tmp) / "idle.jsonl", 3.0)
        runs = [
            await build_in_app(root, Path(tmp) / f"t{n}.jsonl", more=n == repeats - 1)
            for n in range(repeats)
        ]
    gaps = [gap for run in runs for gap in run.gaps]
    last = runs[-1]
    over = sum(1 for gap in gaps if gap > 0.05)
    print(f"root: {root}  files: {last.files} (reference {reference_files})")
    print(f"lines: {last.lines}  resync found {len(last.changed)} changed file(s)")
    print(
        table(
            f"Editor code index in the app, {repeats} builds (2 shared cores, loaded by others)",
            [
                (
                    "build, wall",
                    f"{reference_s:.2f} s (CodeIndex.build from disk, 1 process)",
                    "  ".join(f"{run.build:.2f} s" for run in runs)
                    + " (EditorPane, through the session)",
                ),
                (
                    "longest event-loop stall, per build",
                    f"idle app, 3 s: {ms(max(idle))}",
                    "  ".join(ms(max(run.gaps)) for run in runs),
                ),
                (
                    "event-loop gaps (10 ms ticker)",
                    f"idle app: {distribution(idle)}",
                    f"building: {distribution(gaps)}; {over} of {len(gaps)} over 50 ms",
                ),
                ("resync, nothing changed", "-", f"{last.resync:.2f} s"),
                (f"refresh one file ({last.target})", "-", ms(last.refresh)),
                ("go to definition after the refresh (graph rebuilt)", "-", ms(last.graph)),
            ],
        )
    )


if __name__ == "__main__":
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    args = arguments(__doc__.splitlines()[0], root=stdlib, repeats=3)
    asyncio.run(main(args.root.resolve(), args.repeats))
