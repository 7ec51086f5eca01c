"""Opening a 100k-event trajectory: index build, first frame, random jumps, memory.

Reference on the same machine: reading the whole file the way whole-file JSON viewers do (every
line parsed into events: `simulator.trajectory.read_trajectory`). Then the same in the Textual
replay view, headless (App.run_test): time to the first frame with rows, and jumps to random steps.

    uv run python bench/replay_open.py [--events 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._report import ms, summary, table
from bench._synthetic import SyntheticTrajectory
from simulator.describe import describe_event
from simulator.events import Actor
from simulator.trajectory import (
    TrajectoryIndex,
    read_trajectory,
)

ROWS = 40


def anon_memory() -> int:
    """Anonymous resident memory (the heap), excluding file pages the mmap touched."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def generate(path: Path, count: int) -> None:
    rng = random.Random(7)
    run = SyntheticTrajectory(path, "bench")
    while run.seq < count:
        if (run.seq + 1) % 25 == 0:
            n = rng.randrange(1000)
            body = "".join(f"line {i} of module {n}\n" for i in range(rng.randrange(5, 60)))
            change = {
                "path": f"pkg/mod{n}.py",
                "content": body,
                "diff": "+" + body.replace("\n", "\n+"),
                "before_sha256": None,
                "after_sha256": "0" * 64,
            }
            run.add("file.write", change, actor=Actor.HUMAN)
            continue
        action = run.add(
            "exec", {"command": f"grep -rn token{run.seq + 1} src | head", "timeout": None}
        )
        output = "".join(
            f"src/f{i}.py:{i}: token{action + 1} = {rng.random()}\n"
            for i in range(rng.randrange(1, 12))
        )
        result = {
            "exit_code": rng.choice([0, 0, 0, 1]),
            "output": output,
            "duration": 0.01,
            "timed_out": False,
            "interrupted": False,
            "shell_restarted": False,
            "oom_killed": False,
            "cwd": "/w",
        }
        run.add("exec.result", result, cause=action)
    run.close()


def frame(index: TrajectoryIndex, top: int) -> list[str]:
    return [describe_event(index.event(i)) for i in range(top, min(len(index), top + ROWS))]


def engine(path: Path) -> list[tuple[str, str, str]]:
    size = path.stat().st_size
    gc.collect()
    before = anon_memory()
    started = time.perf_counter()
    whole = read_trajectory(path)
    reference_open = time.perf_counter() - started
    reference_memory = anon_memory() - before
    count = len(whole.events)
    del whole
    gc.collect()

    before = anon_memory()
    started = time.perf_counter()
    index = TrajectoryIndex(path)
    built = time.perf_counter() - started
    frame(index, 0)
    first = time.perf_counter() - started
    rng = random.Random(1)
    jumps = []
    for _ in range(300):
        top = rng.randrange(len(index))
        t0 = time.perf_counter()
        frame(index, top)
        jumps.append(time.perf_counter() - t0)
    memory = anon_memory() - before
    assert len(index) == count
    index.close()
    return [
        ("file", "", f"{count} events, {size / 1e6:.1f} MB"),
        (
            "open to first frame (engine)",
            f"{ms(reference_open)} (parse all)",
            f"{ms(first)} (index {ms(built)}); {reference_open / first:.1f}x faster",
        ),
        ("jump to a random step + 40 rows", "-", summary(jumps)),
        (
            "memory growth (anonymous RSS)",
            f"{reference_memory / 1e6:.1f} MB",
            f"{memory / 1e6:.1f} MB ({memory / size:.1%} of the file)",
        ),
    ]


async def view(path: Path) -> list[tuple[str, str, str]]:
    from textual.app import App
    from textual.screen import Screen
    from textual.strip import Strip
    from textual.widgets import Static

    from widgets.replay import ReplayApp, ReplayScreen, Timeline

    class Bare(App[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            yield Static("hello")

    started = time.perf_counter()
    async with Bare().run_test(size=(160, 50)) as bare_pilot:
        await bare_pilot.pause()
    bare = time.perf_counter() - started

    # The first frame is the first time the timeline draws a row of the file (measured by
    # wrapping its render_line here, in the benchmark only).
    painted: list[float] = []
    first_paint = asyncio.Event()
    render_line = Timeline.render_line

    def timed_render_line(self: Timeline, y: int) -> Strip:
        if self.row_count and not painted:
            painted.append(time.perf_counter())
            first_paint.set()
        return render_line(self, y)

    Timeline.render_line = timed_render_line  # type: ignore[method-assign]
    started = time.perf_counter()
    app = ReplayApp(path)
    async with app.run_test(size=(160, 50)) as pilot:
        running = time.perf_counter() - started
        await first_paint.wait()
        first = painted[0] - started
        await app.workers.wait_for_complete()
        indexed = time.perf_counter() - started
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        timeline = screen.query_one(Timeline)
        idle = []
        for _ in range(20):
            t0 = time.perf_counter()
            await pilot.pause()
            idle.append(time.perf_counter() - t0)
        # Our own work for a jump, without Textual's frame cycle: move the cursor, draw every
        # visible timeline row and render the step's detail.
        from widgets.replay.detail import render_step
        from widgets.replay.stepview import StepView

        step_view = screen.query_one(StepView)
        rng = random.Random(3)
        work = []
        for _ in range(100):
            target = rng.randrange(timeline.row_count)
            t0 = time.perf_counter()
            timeline.go_to_index(target)
            for y in range(timeline.size.height):
                timeline.render_line(y)
            assert screen.source is not None
            step_view.show(render_step(screen.source, target))
            step_view.render_line(0)
            work.append(time.perf_counter() - t0)
        await pilot.pause()
        # What the person sees: from the jump to the end of the last frame it caused (Textual's
        # compositor refresh of the screen, timed here by wrapping it in the benchmark only),
        # and how many frames that took. Pilot's pause cannot tell: it waits for the process to
        # be idle in 20 ms slices.
        frames: list[tuple[float, float]] = []
        frame_cpu: list[float] = []
        compositor_refresh = Screen._compositor_refresh

        def timed_refresh(self: Screen[Any]) -> None:
            t0, c0 = time.perf_counter(), time.thread_time()
            compositor_refresh(self)
            frames.append((t0, time.perf_counter()))
            frame_cpu.append(time.thread_time() - c0)

        Screen._compositor_refresh = timed_refresh  # type: ignore[method-assign]
        rng = random.Random(4)
        shown, frame_counts, frame_costs, jump_cpu = [], [], [], []
        for _ in range(60):
            target = rng.randrange(timeline.row_count)
            frames.clear()
            frame_cpu.clear()
            t0 = time.perf_counter()
            timeline.go_to_index(target)
            await pilot.pause()
            await pilot.pause(0.1)  # a deferred detail (a settle timer) would land in here
            assert screen.shown_step == target
            shown.append(frames[-1][1] - t0)
            frame_counts.append(len(frames))
            frame_costs += [end - start for start, end in frames]
            jump_cpu.append(sum(frame_cpu))
            frame_cpu.clear()
        Screen._compositor_refresh = compositor_refresh  # type: ignore[method-assign]
        rng = random.Random(2)
        jumps, details, steps = [], [], []
        for _ in range(60):
            target = rng.randrange(timeline.row_count)
            t0 = time.perf_counter()
            timeline.go_to_index(target)
            await pilot.pause()
            jumps.append(time.perf_counter() - t0)
            while screen.shown_step != target:
                await pilot.pause(0.005)
            await pilot.pause()
            details.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            timeline.action_move(1)
            await pilot.pause()
            steps.append(time.perf_counter() - t0)
        assert timeline.current_index == target + 1 or target == timeline.row_count - 1
    return [
        ("view: app running (no file yet)", f"bare Textual app here: {ms(bare)}", ms(running)),
        (
            "view: start to first frame with rows",
            "<= 1 s (target)",
            f"{ms(first)} ({ms(first - running)} after the app runs)",
        ),
        ("view: whole file indexed (while usable)", "-", ms(indexed)),
        ("view: an idle pilot.pause() (no work)", "-", summary(idle)),
        ("view: jump, our work (rows + detail, no frame)", "<= 50 ms (target)", summary(work)),
        (
            "view: jump until its last frame is composed",
            "<= 50 ms (target)",
            summary(shown),
        ),
        (
            "view: ... frames per jump; cost of one frame",
            "-",
            f"{statistics.mean(frame_counts):.2f} frames; {summary(frame_costs)}",
        ),
        (
            "view: ... CPU time of a jump's frames",
            "(the load-independent figure)",
            summary(jump_cpu),
        ),
        ("view: jump + pilot.pause() (20 ms idle slices)", "<= 50 ms (target)", summary(jumps)),
        ("view: ... and the step's detail shown", "-", summary(details)),
        ("view: next step (one row down)", "-", summary(steps)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        t0 = time.perf_counter()
        generate(path, args.events)
        print(f"generated {args.events} events in {time.perf_counter() - t0:.1f}s")
        rows = engine(path)
        rows += asyncio.run(view(path))
    print(table("Opening a big trajectory (2 shared cores, machine loaded; one run)", rows))


if __name__ == "__main__":
    main()
