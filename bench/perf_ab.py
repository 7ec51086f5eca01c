"""Perf A/B on a fixture whose second commit is 2x faster by construction (issue 16).

The fixture repository has two commits: at A `checksum` makes its pass over the data twice, at
B once, and the harness times `checksum(DATA)` alone, so B does exactly half of A's work.
Targets: the 95% confidence interval of the measured speed-up contains 2.0; an A-vs-A run
reports "not significant". The A/B comparison runs 3 times to show its spread.

It uses `reposim perf compare`'s engine with its default (proper) settings: calibration, then
10 interleaved rounds of 2 pyperf worker processes per side, 1 warm-up + 3 values each (20 runs
per side), workers pinned to one CPU. `--timer wall` (default) or `--timer cpu`.

Run: uv run python bench/perf_ab.py [--timer wall|cpu] [--repeats 3] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench._perf_fixture import git, harness_text
from bench._report import table
from simulator.perf import CompareRequest, CompareResult, MeasureSettings, compare

CORE = """def checksum(data):
    total = 0
    for _ in range({passes}):
        total = 0
        for x in data:
            total = (total * 31 + x) % 1000003
    return total
"""
HARNESS = harness_text("checksum", 20000)


def fixture(root: Path) -> Path:
    repo = root / "fastlib"
    (repo / "fastlib").mkdir(parents=True)
    (repo / "fastlib/__init__.py").write_text("")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for passes, tag in ((2, "a"), (1, "b")):
        (repo / "fastlib/core.py").write_text(CORE.format(passes=passes))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"checksum: {passes} pass(es)")
        git(repo, "tag", tag)
    return repo


async def run(
    repo: Path, harness: Path, a: str, b: str, out: Path, settings: MeasureSettings
) -> CompareResult:
    return await compare(
        CompareRequest(
            repo, a, b, api="fastlib.core.checksum", harness=harness, out_dir=out, settings=settings
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    settings = MeasureSettings(rounds=args.rounds, timer=args.timer)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = fixture(root)
        harness = root / "harness.py"
        harness.write_text(HARNESS)
        results = [
            asyncio.run(run(repo, harness, "a", "b", root / f"ab{i}", settings))
            for i in range(args.repeats)
        ]
        same = asyncio.run(run(repo, harness, "a", "a", root / "aa", settings))
    speedups = [r.verdict.speedup for r in results]
    spread = statistics.stdev(speedups) if len(speedups) > 1 else 0.0
    rows = []
    for i, r in enumerate(results, start=1):
        v = r.verdict
        hit = "contains 2.0" if v.ci_low <= 2.0 <= v.ci_high else "MISSES 2.0"
        rows.append(
            (
                f"A vs B, run {i}",
                "2.000x (by construction); CI contains 2.0",
                f"{v.speedup:.3f}x  95% CI {v.ci_low:.3f}-{v.ci_high:.3f} ({hit}); "
                f"A {r.a.mean * 1e3:.3f} ms (run CV {r.a.run_cv:.1%}), "
                f"B {r.b.mean * 1e3:.3f} ms (run CV {r.b.run_cv:.1%})",
            )
        )
    rows.append(
        (
            "spread over the runs",
            "-",
            f"min {min(speedups):.3f}  median {statistics.median(speedups):.3f}  "
            f"max {max(speedups):.3f}  stdev {spread:.3f}",
        )
    )
    rows.append(("A vs A", '"not significant"', same.verdict.sentence()))
    env = results[0].environment
    print(
        table(
            f"perf A/B, 2x by construction ({env['protocol']})",
            rows,
        )
    )
    print(
        f"machine: {env['cpu_model']}, {env['cpu_count']} CPUs, Python {env['python']}; "
        f"{env['isolation']}"
    )
    for label, r in [*[(f"run {i}", r) for i, r in enumerate(results, 1)], ("A vs A", same)]:
        load = r.environment["load_avg"]
        print(
            f"{label}: load average {load['start']:.2f} at start, max {load['max']:.2f}; "
            + ("noisy: " + "; ".join(r.noise) if r.noise else "not flagged noisy")
        )


if __name__ == "__main__":
    main()
