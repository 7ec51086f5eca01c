"""Curation screen at scale: a 5,000-target table and a 2,000-line file's coverage gutter.

Measures, headless under App.run_test (160x48), on a real local Session over a scratch git repo:
  - open: pushing a CurationScreen with N problems until it is mounted (table filled), and
    until the app is next idle (first frame painted);
  - filter: one filter change end to end in the screen (parse, select, refill the table),
    alternating queries, and the selection alone;
  - gutter: rendering every visible row of the source view after a scroll of one page in a
    2,000-line file whose every line carries a coverage mark (what a frame costs).
Targets (issue 15): open <= 0.5 s, filter <= 50 ms, gutter: within a 60 Hz frame (16.7 ms).
Run: uv run python bench/curation_table.py [--targets 5000] [--lines 2000]
"""

from __future__ import annotations

import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import arguments, ms, percentile, table

from simulator.dataset.schema import Curation, CurationState, Harness, Problem, Validation
from simulator.session import Session
from widgets.curation.app import CurationApp
from widgets.curation.gutter import CoverageView
from widgets.curation.model import Row, select
from widgets.curation.screen import CurationScreen

QUERIES = ("valid cov<80", "", "generated", "mut>=50 f1", "flaky", "", "accepted cov>=90", "")


def problems(count: int, lines: int) -> list[Problem]:
    rng = random.Random(15)
    states = list(CurationState)
    made = []
    for n in range(count):
        path = f"pkg/module_{n % 50}.py" if n else "pkg/big.py"
        start = 1 + (n * 7) % max(1, lines - 40)
        coverage = {
            "total": 10,
            "covered": rng.randint(0, 10),
            "lines_total": 20,
            "lines_covered": rng.randint(0, 20),
            "missing": [],
            "rate": rng.random(),
            "statements": list(range(start, start + 20)),
            "missed_lines": [start + 3],
            "partial_lines": [start + 5],
        }
        validation = Validation(
            runs=1,
            tests=3,
            passed=True,
            flaky=["t"] if n % 97 == 0 else [],
            coverage=coverage,
            mutation={"total": 10, "killed": rng.randint(0, 10), "score": rng.random()},
            verdict="valid",
            seconds=rng.random() * 3,
        )
        made.append(
            Problem(
                id=f"bench:{n}",
                repo={"name": "bench", "source": "", "commit": None},
                target={
                    "id": f"{path}::f{n}",
                    "path": path,
                    "qualname": f"f{n}",
                    "name": f"f{n}",
                    "start_line": start,
                    "def_line": start,
                    "end_line": start + 20,
                },
                module="pkg",
                harness=Harness("traced", "CASES = [\n]\n"),
                validation=validation,
                curation=Curation(state=states[n % len(states)]),
            )
        )
    return made


def make_repo(root: Path, lines: int) -> None:
    (root / "pkg").mkdir(parents=True)
    body = "".join(f"def f{n}(x):\n    return x + {n}\n\n" for n in range(lines // 3 + 1))
    (root / "pkg" / "big.py").write_text("\n".join(body.splitlines()[:lines]) + "\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "bench"],
        cwd=root,
        check=True,
    )


async def run(count: int, lines: int, repeats: int) -> list[tuple[str, str, str]]:
    with tempfile.TemporaryDirectory(prefix="reposim-bench-curation-") as scratch:
        root = Path(scratch) / "bench"
        make_repo(root, lines)
        session = await Session.open(root, trajectory_path=Path(scratch) / "t.jsonl")
        try:
            return await measure(session, count, lines, repeats, Path(scratch))
        finally:
            await session.close()


async def measure(
    session: Session, count: int, lines: int, repeats: int, scratch: Path
) -> list[tuple[str, str, str]]:
    opens, idles, fills, selects, frames = [], [], [], [], []
    for _ in range(repeats):
        made = problems(count, lines)
        app = CurationApp(session, [made[0]], export_path=scratch / "out.jsonl")
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = CurationScreen(session, made, export_path=scratch / "out.jsonl")
            t0 = time.perf_counter()
            await app.push_screen(screen)
            opens.append(time.perf_counter() - t0)
            await pilot.pause()
            idles.append(time.perf_counter() - t0)
            assert len(screen.shown) == count
            for query in QUERIES:
                t1 = time.perf_counter()
                screen.query_text = query
                screen._fill()
                fills.append(time.perf_counter() - t1)
                t2 = time.perf_counter()
                select(screen.rows, query, screen.sort)
                selects.append(time.perf_counter() - t2)
            await pilot.pause()
            screen.query_text = ""
            screen._fill()
            screen._show(0)  # pkg/big.py, every line marked
            view = screen.query_one(CoverageView)
            view.set_marks(
                {n: ("covered", "partial", "missed")[n % 3] for n in range(1, lines + 1)}
            )
            await pilot.pause()
            height = view.size.height
            for page in range(0, lines - height, height):
                view.scroll_to(y=page, animate=False)
                await pilot.pause()
                t3 = time.perf_counter()
                for y in range(height):
                    view.render_line(y)
                frames.append(time.perf_counter() - t3)
    rows = [Row.of(p) for p in problems(count, lines)]
    assert len(select(rows, "")) == count
    return [
        (f"open, {count} targets (mounted)", "<= 500 ms", stat(opens)),
        (f"open, {count} targets (idle)", "<= 500 ms", stat(idles)),
        ("filter (screen: select + refill)", "<= 50 ms", stat(fills)),
        ("filter (selection only)", "", stat(selects)),
        (f"gutter frame, {lines}-line file", "<= 16.7 ms", stat(frames)),
    ]


def stat(values: list[float]) -> str:
    return (
        f"median {ms(statistics.median(values))}  p95 {ms(percentile(values, 0.95))}  "
        f"max {ms(max(values))}  (n={len(values)})"
    )


def main() -> None:
    args = arguments(__doc__.splitlines()[0], targets=5000, lines=2000, repeats=3)
    rows = asyncio.run(run(args.targets, args.lines, args.repeats))
    print(table("curation screen (headless, 160x48)", rows))


if __name__ == "__main__":
    main()
