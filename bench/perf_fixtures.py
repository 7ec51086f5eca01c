"""The perf fixtures' table (issue 28): truth, speed-up, interval, significant and cost of one
default `perf compare` per fixture, for the RepoSim code this run imports: this checkout's
("after"), or an older one given with `--code DIR` ("before"), e.g.

    git -C /work/main archive 25639f1 | tar -x -C /tmp/before
    uv run python bench/perf_fixtures.py --code /tmp/before     # before issue 28's work
    uv run python bench/perf_fixtures.py                        # now

Fixtures (one git repository each, truth by construction; speed-up = time A / time B):
- "traced 2x": fastlib.core.checksum does its pass twice at A, once at B; no harness given, so
  it is traced from the repository's tests, which call checksum among other work. Truth 2.0.
- "test 10x call": slowlib.core.target does 1 pass at A, 2 at B; the only test calling it does
  10 passes of its own first. Truth 0.5 (the call); the whole test is 11 vs 12 passes, 0.917.
- "10% harness": work() does 11 passes at A, 10 at B; a harness file times work(DATA). 1.1.
- "identical": the same harness, A against a commit that only adds a comment. Truth 1.0.
- "command 10%": `python -c 'work(range(N))'` of about 2 s of CPU at A. Truth 1.1, less the
  interpreter's start (~1%: 1.09).
Cost: the compare's elapsed seconds (sessions, tracing, quickchecks, calibration, rounds).

Run: uv run python bench/perf_fixtures.py [--code DIR] [--only NAME ...] [--keep DIR]
(`--keep DIR`: each compare's output folder is kept there, its runs with it: stop 44's
identical fixture read 1.045x, significant, and its runs were gone with the temporary folder)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._perf_fixture import git, harness_text
from bench.perf_ab import CORE as CHECKSUM
from tests.perf.conftest import DILUTED_CORE, DILUTED_TESTS  # the test of the same fixture

CHECKSUM_TESTS = """from fastlib.core import checksum

DATA = list(range(3000))


def test_checksum():
    assert checksum(DATA) == checksum(list(DATA))


def test_unrelated():
    assert sorted([3, 1, 2]) == [1, 2, 3]
"""
WORK = """def work(data, passes={passes}):
    total = 0
    for _ in range(passes):
        for x in data:
            total = (total * 31 + x) % 1000003
    return total
"""


def repository(root: Path, package: str, versions: list[dict[str, str]]) -> Path:
    """A git repository of `package` with one commit per version (files by path), tagged v0..."""
    repo = root / package
    (repo / package).mkdir(parents=True)
    (repo / package / "__init__.py").write_text("")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for number, files in enumerate(versions):
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"version {number}")
        git(repo, "tag", f"v{number}")
    return repo


def command_size(repo: Path, seconds: float = 2.0) -> int:
    """Items for work(range(N)) to take about `seconds` of CPU at v0 (from a probe's CPU)."""
    git(repo, "-c", "advice.detachedHead=false", "checkout", "-q", "v0")
    probe = 200_000
    usage = []
    for size in (0, probe):
        before = os.times()
        subprocess.run(
            [sys.executable, "-c", f"from fastlib.core import work; work(range({size}))"],
            cwd=repo,
            check=True,
        )
        after = os.times()
        usage.append(
            after.children_user
            + after.children_system
            - before.children_user
            - before.children_system
        )
    git(repo, "checkout", "-q", "main")
    per_item = max(usage[1] - usage[0], 0.01) / probe
    return int(max(seconds - usage[0], 0.1) / per_item)


def fixtures(root: Path) -> list[tuple[str, float, Path, str, str, dict[str, Any]]]:
    """(name, truth, repository, A, B, the request's target) for each fixture."""
    fast = repository(
        root,
        "fastlib",
        [
            {"fastlib/core.py": CHECKSUM.format(passes=2), "tests/test_core.py": CHECKSUM_TESTS},
            {"fastlib/core.py": CHECKSUM.format(passes=1)},
        ],
    )
    slow = repository(
        root,
        "slowlib",
        [
            {"slowlib/core.py": DILUTED_CORE.format(passes=1), "tests/test_core.py": DILUTED_TESTS},
            {"slowlib/core.py": DILUTED_CORE.format(passes=2)},
        ],
    )
    work = repository(
        root / "w",
        "fastlib",
        [
            {"fastlib/core.py": WORK.format(passes=11)},
            {"fastlib/core.py": "# only a comment\n" + WORK.format(passes=11)},
            {"fastlib/core.py": WORK.format(passes=10)},
        ],
    )
    harness = root / "harness.py"
    harness.write_text(harness_text("work", 3000))
    size = command_size(work)
    command = f"{sys.executable} -c 'from fastlib.core import work; work(range({size}))'"
    return [
        ("traced 2x", 2.0, fast, "v0", "v1", {"api": "fastlib.core.checksum"}),
        ("test 10x call", 0.5, slow, "v0", "v1", {"api": "slowlib.core.target"}),
        ("10% harness", 1.1, work, "v0", "v2", {"api": "fastlib.core.work", "harness": harness}),
        ("identical", 1.0, work, "v0", "v1", {"api": "fastlib.core.work", "harness": harness}),
        ("command 10%", 1.1, work, "v0", "v2", {"command": command}),
    ]


# One compare in a process of its own, importing RepoSim from argv[1] (this checkout or an
# older one): its result.json's content on stdout.
COMPARE = """
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from simulator.perf import CompareRequest, MeasureSettings, compare
target = json.loads(sys.argv[6])
if "harness" in target:
    target["harness"] = Path(target["harness"])
request = CompareRequest(
    Path(sys.argv[2]), sys.argv[3], sys.argv[4], out_dir=Path(sys.argv[5]),
    settings=MeasureSettings(), **target
)
print(json.dumps(asyncio.run(compare(request)).to_dict()))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--code",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the RepoSim checkout whose code compares (default: this one)",
    )
    parser.add_argument("--only", nargs="+", help="fixture names to run (default: all)")
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep each compare's output (result.json, a.json, b.json, trajectories) under "
        "this folder, one subfolder per fixture (default: removed with the fixtures)",
    )
    args = parser.parse_args()
    code = args.code.resolve()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(
        ["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"code: {code} ({head or 'not a git checkout'})")
    print(f"start: {time.strftime('%H:%M:%S')}, uptime: {os.popen('uptime').read().strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(
            f"{'fixture':<14} {'truth':>5}  {'speed-up':>8}  {'95% interval':<13}  "
            f"{'':<15}  {'cost':>6}  load  protocol"
        )
        for name, truth, repo, a, b, target in fixtures(root):
            if args.only and name not in args.only:
                continue
            t0 = time.monotonic()
            out = (args.keep.resolve() if args.keep else root) / name.replace(" ", "-")
            request = json.dumps({k: str(v) for k, v in target.items()})
            proc = subprocess.run(
                [sys.executable, "-c", COMPARE, str(code), str(repo), a, b, str(out), request],
                capture_output=True,
                text=True,
            )
            cost = time.monotonic() - t0
            if proc.returncode != 0:  # the older code may fail a fixture: that is its row
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{name:<14} {truth:>5.3f}  failed after {cost:.0f} s: {last[:200]}")
                continue
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            v = result["verdict"]
            verdict = "significant" if v["significant"] else "not significant"
            inside = "holds" if v["ci_low"] <= truth <= v["ci_high"] else "MISSES"
            timed = result["harness"].get("timed")
            print(
                f"{name:<14} {truth:>5.3f}  {v['speedup']:>8.3f}  {v['ci_low']:.3f}-"
                f"{v['ci_high']:.3f} {inside:<6} {verdict:<15}  {cost:>5.0f}s  "
                f"{os.getloadavg()[0]:>4.1f}  {result['environment'].get('timer', '?')}, "
                f"{result['a']['runs']} runs/side" + (f"; timed: {timed}" if timed else ""),
                flush=True,
            )
    print(f"end: {time.strftime('%H:%M:%S')}, uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
