"""Perf accuracy and cost (issue 28): `reposim perf compare` with its default settings beside a
by-hand interleaved ABBA x 10, on fixtures whose truth is known by construction.

Fixtures (one git repository, three commits):
- "10%": `work(data)` does its pass over the data 11 times at A, 10 times at B: B is 1.1x faster
  by construction (the harness times `work(DATA)` alone). Target: significant in >= 9 of 10 runs.
- "identical": truth 1.0, three ways in turn: A against a commit that changes only a comment,
  the same two swapped, and A against itself (its second side on a private clone, a longer
  path). Target: falsely significant in <= 1 of 20 runs. The summary gives each way's mean
  speed-up: an offset that follows the tree changes sign when the sides are swapped.
- every interval: the 95% CI contains the truth in >= 19 of 20 (here: of all the runs above).
- "command": a command of about `--command-seconds` (default 2 s) of CPU time at A (sized by a
  probe run's CPU time, not its elapsed time, which the load inflates), 10% less at B (truth
  1.1 less the interpreter's start, from the probe), and the same command A against the
  comment-only commit (truth 1.0). `--command-runs N` makes N jobs of each, in turn (10%,
  identical, 10%, ...): a job is a by-hand ABBA x 10 and our default compare back to back, the
  one going first alternating every two jobs; `--end HH:MM` starts no job that might not end
  before it. Per job: both intervals and verdicts, our seconds (and CPU seconds: this process
  and the children it waited for), and the cost for the same interval width, cost x width^2
  (the width shrinks as 1/sqrt(runs)), ours over by hand. Target <= 2x. Ours is given twice:
  with its interval (which holds the offset term, a floor of +-1.47%), and with its pairs' plain
  paired t interval, the by-hand's statistics on the runs the protocol chose to make. One
  width from 20 pairs varies by +-30%, so one job does not settle the target; the pooled ratio
  (the mean cost x width^2 of ours over that of by hand) is printed at the end.

By hand: 10 rounds of A B B A, each a fresh process (the API: a Python process that imports the
harness and times `bench()` for ~0.1 s of loops, reporting the mean per call; the command: one
run of it), both wall and CPU time recorded; the same statistics as ours: the k-th A and the
k-th B of the ABBA sequence ran in the same round, so both are compared in pairs (a paired t
interval of the log ratios and the paired t-test, `compare_runs(paired=True)`), as a careful person
analysing an ABBA would.

Sizing (2 loaded cores): a default compare of the API fixture takes ~0.5-2 min, the command
~2-3 min and a command job ~4 min; `--ten 10 --same 20 --command-runs 3` is the issue's
size (~60-100 min at load 5-10);
smaller numbers give a quicker, rougher table.

Run: uv run python bench/perf_accuracy.py [--ten 10] [--same 20] [--command-runs 3] [--end HH:MM]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyperf

from bench._perf_fixture import git, harness_text
from simulator.perf import CompareRequest, MeasureSettings, compare
from simulator.perf.stats import compare_runs

WORK = '''"""A workload whose cost is `passes` passes over the data."""


def work(data, passes={passes}):
    total = 0
    for _ in range(passes):
        for x in data:
            total = (total * 31 + x) % 1000003
    return total
'''
HARNESS = harness_text("work", 3000)
PROBE_SIZE = 200_000
PROBE = f"{sys.executable} -c 'from fastlib.core import work; work(range({PROBE_SIZE}))'"
BY_HAND_API = """
import sys, time
sys.path.insert(0, sys.argv[1])
import importlib.util
spec = importlib.util.spec_from_file_location("h", sys.argv[2])
h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)
h.bench()
loops = 1
while True:
    t0 = time.perf_counter()
    for _ in range(loops):
        h.bench()
    if time.perf_counter() - t0 >= 0.1:
        break
    loops *= 2
w0, c0 = time.perf_counter(), time.process_time()
for _ in range(loops):
    h.bench()
print((time.perf_counter() - w0) / loops, (time.process_time() - c0) / loops)
"""


def fixture(root: Path) -> tuple[Path, dict[str, str]]:
    repo = root / "fastlib"
    (repo / "fastlib").mkdir(parents=True)
    (repo / "fastlib/__init__.py").write_text("")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    commits = {}
    for name, passes, comment in (("a", 11, ""), ("same", 11, "# only a comment\n"), ("b", 10, "")):
        (repo / "fastlib/core.py").write_text(comment + WORK.format(passes=passes))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"work: {passes} passes {comment}")
        commits[name] = git(repo, "rev-parse", "HEAD")
    return repo, commits


def checkout(repo: Path, commit: str, dest: Path) -> Path:
    if not dest.exists():
        subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True)
        git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", commit)
    return dest


def cpu_used() -> float:
    """CPU seconds of this process and of every child it has waited for (the compare's
    sessions, workers and commands; the by-hand runs): what a side cost the machine, which a
    change of the machine's load moves much less than elapsed time."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class SameWidthCost:
    """What a compare costs against a by-hand ABBA for the same interval width: cost x width^2
    (the width shrinks as 1/sqrt(runs)), in elapsed seconds and in CPU seconds (elapsed time
    swings with the other users' load between the two halves of a pair, the CPU a side used much
    less), per pair of runs and pooled: one width over 20 pairs varies by +-30%, so one pair's
    ratio does too, and the pooled ratio (the mean over the runs of each side) settles it."""

    def __init__(self) -> None:
        self.sides: dict[str, list[float]] = {
            "ours": [],
            "hand": [],
            "ours_cpu": [],
            "hand_cpu": [],
        }
        self.ratios: list[float] = []
        self.cpu_ratios: list[float] = []

    def add(self, ours: dict[str, Any], hand: dict[str, Any]) -> tuple[float, float]:
        """Rows of ours and of the by-hand reference (cost, cpu_cost, width): this pair's ratios
        (elapsed, CPU)."""
        for side, measured in (("ours", ours), ("hand", hand)):
            self.sides[side].append(measured["cost"] * measured["width"] ** 2)
            self.sides[f"{side}_cpu"].append(measured["cpu_cost"] * measured["width"] ** 2)
        self.ratios.append(self.sides["ours"][-1] / self.sides["hand"][-1])
        self.cpu_ratios.append(self.sides["ours_cpu"][-1] / self.sides["hand_cpu"][-1])
        return self.ratios[-1], self.cpu_ratios[-1]

    def summary(self, what: str) -> str:
        """One line: pooled, median, min and max, elapsed and CPU, against the target."""

        def spread(ratios: list[float], pooled: float) -> str:
            return (
                f"pooled {pooled:.2f}x, per pair median {statistics.median(ratios):.2f}x, min "
                f"{min(ratios):.2f}x, max {max(ratios):.2f}x"
            )

        mean = {side: statistics.fmean(costs) for side, costs in self.sides.items()}
        elapsed = spread(self.ratios, mean["ours"] / mean["hand"])
        cpu = spread(self.cpu_ratios, mean["ours_cpu"] / mean["hand_cpu"])
        return (
            f"{what} cost for the same width, {len(self.ratios)} paired run(s), ours / by hand: "
            f"elapsed {elapsed}; CPU {cpu} (target <= 2)"
        )


def by_hand(run_one: Any, rounds: int = 10) -> dict[str, Any]:
    """ABBA x rounds: each call of run_one(side) is one fresh process -> (wall, cpu)."""
    t0, c0 = time.monotonic(), cpu_used()
    values: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
    for _ in range(rounds):
        for side in ("a", "b", "b", "a"):
            values[side].append(run_one(side))
    cost = time.monotonic() - t0
    out: dict[str, Any] = {"cost": cost, "cpu_cost": cpu_used() - c0, "values": values}
    for index, timer in ((0, "wall"), (1, "cpu")):
        a = [v[index] for v in values["a"]]
        b = [v[index] for v in values["b"]]
        verdict = compare_runs(a, b, paired=True)
        out[timer] = verdict
    return out


def api_by_hand(trees: dict[str, Path], harness: Path) -> dict[str, Any]:
    def one(side: str) -> tuple[float, float]:
        proc = subprocess.run(
            [sys.executable, "-c", BY_HAND_API, str(trees[side]), str(harness)],
            capture_output=True,
            text=True,
            check=True,
        )
        wall, cpu = proc.stdout.split()
        return float(wall), float(cpu)

    return by_hand(one)


def command_by_hand_once(
    tree: Path, command: str, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """One run of the command in `tree` (in `env`, default this process's environment): its
    elapsed and CPU seconds (the process tree's)."""
    w0 = time.perf_counter()
    proc = subprocess.Popen(["bash", "-c", command], cwd=tree, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{command} failed")
    return time.perf_counter() - w0, usage.ru_utime + usage.ru_stime


def size_command(tree: Path, seconds: float) -> tuple[str, float]:
    """The command `work(range(N))` of about `seconds` of CPU at A (`tree`), and the truth of
    A against B (10 passes for 11) in CPU time: 1.1 less the share of the interpreter's start
    and import, which cost the same at both. Sized by a probe's CPU time: sized by elapsed time
    (before), the "2 s" command was ~0.25 s of CPU at load 23-56, where start-up costs
    mattered (the start is 20% of a probe of 200,000 items, so it is measured apart)."""
    _wall, start_cpu = command_by_hand_once(tree, f"{PROBE.split(';')[0]}'")
    _wall, probe_cpu = command_by_hand_once(tree, PROBE)
    per_item = max(probe_cpu - start_cpu, 0.01) / PROBE_SIZE
    size = int(max(seconds - start_cpu, 0.1) / per_item)
    print(
        f"command: work(range({size})), {seconds} s of CPU at A (probe: {probe_cpu:.2f} s for "
        f"{PROBE_SIZE} items, {start_cpu:.2f} s to start)"
    )
    work_cpu = per_item * size
    truth = (start_cpu + work_cpu) / (start_cpu + work_cpu * 10 / 11)
    print(f"command: truth {truth:.4f} (1.1 less the start's share)", flush=True)
    command = f"{sys.executable} -c 'from fastlib.core import work; work(range({size}))'"
    return command, truth


def command_by_hand(trees: dict[str, Path], command: str) -> dict[str, Any]:
    return by_hand(lambda side: command_by_hand_once(trees[side], command))


# the command's fixtures, in the order their jobs alternate: (name, revision B)
COMMAND_FIXTURES = (("10%", "b"), ("identical", "same"))


def command_part(
    args: argparse.Namespace,
    repo: Path,
    commits: dict[str, str],
    trees: dict[str, Path],
    command: str,
    truth_10: float,
    root: Path,
    add: Any,
) -> None:
    """The command's cost: `--command-runs` jobs of each fixture (10% then identical, in turn),
    a job being the by-hand ABBA x 10 and our default compare of the same two revisions back to
    back, which goes first alternating every two jobs (each fixture has both orders over two
    runs). No job starts unless it can end before `--end` (its length estimated as the longest
    so far). Per job: both intervals, ours' pairs also under the by-hand statistics (the plain
    paired t interval: the same statistics on the runs the protocol chose to make), and the
    cost for the same width (cost x width^2) ours over by hand."""
    end = at_time(args.end) if args.end else None
    longest = args.job_estimate
    costs = {"offset": SameWidthCost(), "plain": SameWidthCost()}
    jobs = [fixture for _ in range(args.command_runs) for fixture in COMMAND_FIXTURES]
    for j, (fixture_name, b) in enumerate(jobs):
        truth = truth_10 if fixture_name == "10%" else 1.0
        if end is not None and time.time() + longest > end:
            print(
                f"command: stopped before job {j + 1} of {len(jobs)} at "
                f"{time.strftime('%H:%M:%S')}: a job may take {longest:.0f} s, --end is "
                f"{args.end}",
                flush=True,
            )
            break
        started = time.monotonic()
        order = ("hand", "ours") if (j // 2) % 2 == 0 else ("ours", "hand")
        pair: dict[str, dict[str, Any]] = {}
        timer = "cpu"
        for who in order:
            if who == "hand":
                hand = command_by_hand({"a": trees["a"], "b": trees[b]}, command)
                for name in ("wall", "cpu"):
                    pair[name] = row(
                        f"command {fixture_name}",
                        truth,
                        hand[name],
                        hand["cost"],
                        f"by hand, {name}",
                    )
                    index = 0 if name == "wall" else 1
                    pair[name].update(
                        cpu_cost=hand["cpu_cost"],
                        job=j + 1,
                        first=order[0],
                        # the runs themselves, as ours' rows keep theirs: A's and B's in order
                        runs=[[v[index] for v in hand["values"][side]] for side in ("a", "b")],
                    )
            else:
                result, cost, cpu_cost = ours(
                    repo, commits["a"], commits[b], root / f"cmd{j}", command=command
                )
                timer = result.settings["timer"]
                pairs_a, pairs_b = list(result.a.run_means), list(result.b.run_means)
                plain = compare_runs(pairs_a, pairs_b, paired=True)
                mine = row(
                    f"command {fixture_name}", truth, result.verdict, cost, f"ours ({timer})"
                )
                mine.update(
                    cpu_cost=cpu_cost,
                    job=j + 1,
                    first=order[0],
                    values=result.a.values + result.b.values,
                    pairs=len(pairs_a) - len(result.verdict.set_aside),
                    set_aside=len(result.verdict.set_aside),
                    switched=any(a.startswith("switched to CPU") for a in result.actions),
                    loops=[result.a.loops, result.b.loops],
                    measure_seconds=result.environment["measure_seconds"],
                    plain_ci=[plain.ci_low, plain.ci_high],
                    plain_width=plain.ci_high - plain.ci_low,
                    plain_significant=bool(plain.significant),
                    stop=next((a for a in result.actions if "stopped" in a or "as asked" in a), ""),
                    actions=list(result.actions),
                    protocol=result.environment["protocol"],
                    runs=[pairs_a, pairs_b],
                )
                pair["ours"] = mine
        for shown in order:
            for key in ("wall", "cpu") if shown == "hand" else ("ours",):
                add(pair[key])
        mine, ref = pair["ours"], pair[timer]
        elapsed, cpu = costs["offset"].add(mine, ref)
        plain_elapsed, plain_cpu = costs["plain"].add({**mine, "width": mine["plain_width"]}, ref)
        print(
            f"command job {j + 1} ({fixture_name}, {order[0]} first): ours {mine['cost']:.0f} s "
            f"({mine['measure_seconds']:.0f} s measuring, {mine['cpu_cost']:.0f} s CPU, "
            f"{mine['values']} runs, {mine['pairs']} pairs), CI {mine['ci'][0]:.3f}-"
            f"{mine['ci'][1]:.3f} (width {mine['width']:.3f}; its pairs' plain t interval "
            f"{mine['plain_ci'][0]:.3f}-{mine['plain_ci'][1]:.3f}, width "
            f"{mine['plain_width']:.3f}); by hand ({ref['how']}) {ref['cost']:.0f} s "
            f"({ref['cpu_cost']:.0f} s CPU, 40 runs), CI {ref['ci'][0]:.3f}-{ref['ci'][1]:.3f} "
            f"(width {ref['width']:.3f}). Cost for the same width, ours / by hand: "
            f"{elapsed:.2f}x elapsed, {cpu:.2f}x CPU; with ours' plain t width "
            f"{plain_elapsed:.2f}x elapsed, {plain_cpu:.2f}x CPU (target <= 2); job "
            f"{time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        longest = max(longest if j else 0.0, time.monotonic() - started)
    if costs["offset"].ratios:
        print(costs["offset"].summary("command (ours' interval)"), flush=True)
        print(costs["plain"].summary("command (ours' pairs, plain t)"), flush=True)


def at_time(hhmm: str) -> float:
    """HH:MM today, in seconds since the epoch."""
    hour, minute = (int(x) for x in hhmm.split(":"))
    now = time.localtime()
    return time.mktime((*now[:3], hour, minute, 0, 0, 0, now.tm_isdst))


def ours(repo: Path, a: str, b: str, out: Path, **target: Any) -> tuple[Any, float, float]:
    """A default compare: its result, elapsed seconds and CPU seconds (see cpu_used)."""
    t0, c0 = time.monotonic(), cpu_used()
    result = asyncio.run(
        compare(CompareRequest(repo, a, b, out_dir=out, settings=MeasureSettings(), **target))
    )
    return result, time.monotonic() - t0, cpu_used() - c0


def calibrated_loops(path: str) -> int | None:
    """The loops per value a side's (last) calibration asked for; None without one."""
    if not Path(path).exists():
        return None
    return int(pyperf.Benchmark.load(path).get_metadata().get("loops") or 1)


def within_run_drift(path: str) -> list[float]:
    """The mean log of each timed value over the run's last value, value by value (the first
    entry is the warm-up's): how much slower a run's early values are than its last."""
    runs = [run for run in pyperf.Benchmark.load(path).get_runs() if run.values]
    if not runs:
        return []
    columns = [[run.warmups[-1][1] if run.warmups else run.values[0] for run in runs]]
    columns += [[run.values[i] for run in runs] for i in range(min(len(r.values) for r in runs))]
    return [
        statistics.fmean(math.log(v / run.values[-1]) for v, run in zip(column, runs, strict=True))
        for column in columns
    ]


def row(fixture: str, truth: float, verdict: Any, cost: float, how: str) -> dict[str, Any]:
    return {
        "fixture": fixture,
        "how": how,
        "truth": truth,
        "speedup": verdict.speedup,
        "ci": [verdict.ci_low, verdict.ci_high],
        "width": verdict.ci_high - verdict.ci_low,
        "significant": bool(verdict.significant),
        "contains": verdict.ci_low <= truth <= verdict.ci_high,
        "cost": cost,
        "load": os.getloadavg()[0],
    }


def show(r: dict[str, Any]) -> str:
    return (
        f"{r['fixture'] + (' ' + r['orientation'] if r.get('orientation') else ''):<20} "
        f"{r['how']:<16} truth {r['truth']:.3f}  speed-up {r['speedup']:.3f}  "
        f"CI {r['ci'][0]:.3f}-{r['ci'][1]:.3f} (width {r['width']:.3f}, "
        f"{'contains' if r['contains'] else 'MISSES'})  "
        f"{'significant' if r['significant'] else 'not significant':<15}  cost {r['cost']:.0f} s"
        f"  load {r['load']:.1f}"
        + (
            f"  {r['pairs']} pairs{', switched' if r['switched'] else ''}"
            f"{', set aside ' + str(r['set_aside']) if r['set_aside'] else ''}, loops "
            f"{r['loops'][0]}/{r['loops'][1]}"
            + (
                f" (calibrated {r['calibrated'][0]}/{r['calibrated'][1]})"
                if r.get("calibrated")
                else ""
            )
            + (
                "; drift A "
                + "/".join(f"{x:+.3f}" for x in r["drift"][0])
                + ", B "
                + "/".join(f"{x:+.3f}" for x in r["drift"][1])
                if r.get("drift")
                else ""
            )
            if "pairs" in r
            else ""
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ten", type=int, default=10, help="runs of the 10%% fixture")
    parser.add_argument("--same", type=int, default=20, help="runs of the identical fixture")
    parser.add_argument(
        "--command-runs",
        type=int,
        default=3,
        help="jobs of each command fixture (10%% and identical, in turn): by hand and ours",
    )
    parser.add_argument(
        "--end", help="HH:MM (today): start no command job that might not end before it"
    )
    parser.add_argument(
        "--job-estimate",
        type=float,
        default=240.0,
        help="seconds a command job may take, until one has run (then the longest so far)",
    )
    parser.add_argument("--command-seconds", type=float, default=2.0)
    parser.add_argument("--json", type=Path, help="also write every row here, at the end")
    parser.add_argument("--jsonl", type=Path, help="append each row here as it is measured")
    parser.add_argument(
        "--only", choices=("api", "command"), help="run one part (a quicker look at it)"
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="alternate the 10%% and identical compares (10 and 20: T S S T S S ...), so both "
        "see the same load and a run cut short has measured both in proportion",
    )
    parser.add_argument(
        "--until", help="HH:MM (today): start no compare after it (the rows so far are kept)"
    )
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []

    def add(r: dict[str, Any]) -> None:
        rows.append(r)
        print(show(r), flush=True)
        if args.jsonl:  # row by row: a run cut short keeps what it measured
            with args.jsonl.open("a") as handle:
                handle.write(json.dumps(r) + "\n")

    print(f"start: {time.strftime('%H:%M:%S')}, uptime: {os.popen('uptime').read().strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo, commits = fixture(root)
        harness = root / "harness.py"
        harness.write_text(HARNESS)
        trees = {
            "a": checkout(repo, commits["a"], root / "tree-a"),
            "b": checkout(repo, commits["b"], root / "tree-b"),
        }
        if args.only == "command":
            args.ten = args.same = 0
        elif args.only == "api":
            args.command_runs = 0
        if args.ten or args.same:
            hand = api_by_hand(trees, harness)
            add(row("10%", 1.1, hand["wall"], hand["cost"], "by hand, wall"))
            add(row("10%", 1.1, hand["cpu"], hand["cost"], "by hand, cpu"))
        # (fixture, truth, revision B, runs, folder): 10% faster, then A against itself (the
        # 10% runs first: the target stop 38 left unmeasured, answered even if a run is cut
        # short; stop 38 answered the identical one). The 10%'s truth is exact: one process
        # timing work() at 1, 2, 5, 10, 11 and 12 passes fits 131.0 us a pass and 1.3 us fixed
        # (the call, the harness), so (F + 11P) / (F + 10P) = 1.0999
        fixtures = (
            ("10%", 1.1, "b", args.ten, "ten"),
            ("identical", 1.0, "same", args.same, "same"),
        )
        jobs = [(f, i) for f in fixtures for i in range(f[3])]
        if args.interleave:  # each fixture's k-th compare at k / runs of the way through
            jobs.sort(key=lambda job: ((job[1] + 0.5) / job[0][3], job[0][0] != "10%"))
        until = at_time(args.until) if args.until else None
        for (fixture_name, truth, b, _runs, folder), i in jobs:
            if until is not None and time.time() > until:
                print(f"stopped at {time.strftime('%H:%M:%S')} (--until {args.until})")
                break
            # identical code three ways, in turn: A against the commit that only adds a
            # comment, the same two swapped (does an offset follow the tree, or the
            # compare?), and A against A itself (the second side on a private clone)
            side_a, side_b = commits["a"], commits[b]
            orientation = ""
            if fixture_name == "identical":
                orientation = ("a-vs-same", "same-vs-a", "a-vs-a")[i % 3]
                side_a, side_b = {
                    "a-vs-same": (commits["a"], commits["same"]),
                    "same-vs-a": (commits["same"], commits["a"]),
                    "a-vs-a": (commits["a"], commits["a"]),
                }[orientation]
            result, cost, _cpu = ours(
                repo,
                side_a,
                side_b,
                root / f"{folder}{i}",
                api="fastlib.core.work",
                harness=harness,
            )
            how = f"ours ({result.settings['timer']})"
            measured = row(fixture_name, truth, result.verdict, cost, how)
            # what the protocol did: the paired rounds the verdict rests on, whether it
            # switched timers (and calibrated again), rounds set aside, loops per value
            measured.update(
                pairs=result.a.runs - len(result.verdict.set_aside),
                switched=any(a.startswith("switched to CPU") for a in result.actions),
                set_aside=len(result.verdict.set_aside),
                loops=[result.a.loops, result.b.loops],
                # the paired runs themselves (--json): another interval method can be
                # judged on the very same measurements afterwards
                runs=[list(result.a.run_means), list(result.b.run_means)],
                orientation=orientation,
                pilot=result.verdict.pilot,
                stop=result.actions[-1] if result.actions else "",
                t_significant=result.verdict.t_significant,
                started=time.strftime("%H:%M:%S", time.localtime(time.time() - cost)),
                # each side's own calibration (the loops it asked for before the sides were
                # made equal, if they were) and how far its values fall within a run
                calibrated=[calibrated_loops(result.files[f"calibration_{s}"]) for s in "ab"],
                drift=[within_run_drift(result.files[s]) for s in "ab"],
            )
            add(measured)
        if args.command_runs:
            command, truth = size_command(trees["a"], args.command_seconds)
            trees["same"] = checkout(repo, commits["same"], root / "tree-same")
            command_part(args, repo, commits, trees, command, truth, root, add)
    mine = [r for r in rows if r["how"].startswith("ours")]
    ten = [r for r in mine if r["fixture"] == "10%"]
    same = [r for r in mine if r["fixture"] == "identical"]
    print("\nsummary                     target     ours")
    hits = sum(r["significant"] for r in ten)
    false = sum(r["significant"] for r in same)
    scored = ten + same
    contains = sum(r["contains"] for r in scored)
    if ten:
        print(f"10% significant             >= 9/10    {hits}/{len(ten)}")
    if same:
        print(f"identical significant       <= 1/20    {false}/{len(same)}")
        # an offset that follows the tree flips its sign when the sides are swapped; one
        # that follows the compare does not care which tree is A
        for way in ("a-vs-same", "same-vs-a", "a-vs-a"):
            logs = [math.log(r["speedup"]) for r in same if r.get("orientation") == way]
            if len(logs) >= 2:
                print(
                    f"  identical, {way:<10} {len(logs)} runs: mean speed-up "
                    f"{math.exp(statistics.fmean(logs)):.4f}, sd {statistics.stdev(logs):.4f} "
                    f"(in log), significant "
                    f"{sum(r['significant'] for r in same if r.get('orientation') == way)}"
                )
    if scored:
        print(f"CI contains the truth       >= 19/20   {contains}/{len(scored)}")
        costs = [r["cost"] for r in scored]
        print(
            f"API compare cost (s)        -          median {statistics.median(costs):.0f}, "
            f"min {min(costs):.0f}, max {max(costs):.0f}"
        )
    for fixture_name in ("command 10%", "command identical"):
        for how in ("ours", "by hand, cpu", "by hand, wall"):
            found = [r for r in rows if r["fixture"] == fixture_name and r["how"].startswith(how)]
            if found:
                print(
                    f"{fixture_name + ', ' + how:<38} {len(found)} job(s): significant "
                    f"{sum(r['significant'] for r in found)}, interval holds the truth "
                    f"{sum(r['contains'] for r in found)}, widths "
                    + ", ".join(f"{r['width']:.3f}" for r in found)
                    + ", cost "
                    + ", ".join(f"{r['cost']:.0f}" for r in found)
                    + " s"
                )
    print(f"end: {time.strftime('%H:%M:%S')}, uptime: {os.popen('uptime').read().strip()}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
