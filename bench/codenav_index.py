"""The editor's code index built through a session, over the Python standard library.

Reference, in the same run: `CodeIndex.build(root, workers=1)` straight from the disk (no
session, no event loop) over the same files. Ours: `WorkspaceIndex.build()` on an in-place local
session (listing with session.list_dir, unrecorded session.read_bytes, extraction in a worker
thread), then a resync with nothing changed, one file's refresh, and a go-to-definition that
rebuilds the call graph after the refresh. While ours builds, a 10 ms ticker on the event loop
measures the longest stall (what the UI would feel).

Run: uv run python bench/codenav_index.py [--root DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import sysconfig
import tempfile
import time
from pathlib import Path

from _report import ms, table

from simulator.analysis.index import CodeIndex
from simulator.analysis.session_index import WorkspaceIndex, list_sources
from simulator.session import Session


async def ticker(stop: asyncio.Event, stalls: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.01)
        stalls.append(time.perf_counter() - start - 0.01)


async def main(root: Path) -> None:
    started = time.perf_counter()
    reference = CodeIndex.build(root, workers=1)
    reference_s = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        session = await Session.open(
            root, in_place=True, trajectory_path=Path(tmp) / "t.jsonl", checkpoint_start=False
        )
        try:
            paths = await list_sources(session)
            workspace = WorkspaceIndex(session)
            stop = asyncio.Event()
            stalls: list[float] = []
            tick = asyncio.create_task(ticker(stop, stalls))
            started = time.perf_counter()
            index = await workspace.build()
            build_s = time.perf_counter() - started
            stop.set()
            await tick
            started = time.perf_counter()
            changed = await workspace.resync()
            resync_s = time.perf_counter() - started
            target = "json/decoder.py" if "json/decoder.py" in index.files else paths[0]
            started = time.perf_counter()
            await workspace.refresh(target)
            refresh_s = time.perf_counter() - started
            started = time.perf_counter()
            await workspace.query(lambda ix: ix.definition_at(target, 1, 0))
            graph_s = time.perf_counter() - started
        finally:
            await session.close()

    lines = sum(r.lines for r in index.files.values())
    print(f"root: {root}  files: {len(index.files)} (reference {len(reference.files)})")
    print(f"lines: {lines}  resync found {len(changed)} changed file(s)")
    print(
        table(
            "Editor code index (2 shared cores, machine loaded by other engineers)",
            [
                (
                    "build, wall",
                    f"{reference_s:.2f} s (CodeIndex.build from disk)",
                    f"{build_s:.2f} s (through the session)",
                ),
                ("ratio ours/reference", "1.00", f"{build_s / reference_s:.2f}"),
                ("longest event-loop stall while building", "-", ms(max(stalls, default=0.0))),
                ("resync, nothing changed", "-", f"{resync_s:.2f} s"),
                (f"refresh one file ({target})", "-", ms(refresh_s)),
                ("go to definition after the refresh (graph rebuilt)", "-", ms(graph_s)),
            ],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    args = parser.parse_args()
    asyncio.run(main(args.root.resolve()))
