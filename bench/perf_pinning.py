"""Pinned against unpinned command runs (issue 28): do a command compare's pairs spread more than
a by-hand ABBA's because every run is pinned to one CPU?

Stop 42's quiet-window run found our command pairs' spread (sd of log A/B) 0.92-1.87x the
by-hand's at the same ~4 s a pair, about twice the variance, which is what puts the same-width
cost above 2x. `choose_affinity` pins every run of both sides to the last CPU when the kernel
isolates none; the by-hand runs unpinned. On this 2-CPU VM the last CPU is also the one the
block device's and the network's interrupts go to, and with CONFIG_IRQ_TIME_ACCOUNTING off their
time is charged to whatever task they interrupt (in CPU time as well as elapsed time).

Arms, interleaved block by block: in each block every arm makes one round of A B B A (B A A B in
odd blocks), 2 pairs, the arms' order rotating from block to block, so drift and the other
users' load fall on each arm alike.
- `hand`: as perf_accuracy.py's by-hand: `bash -c CMD` started by this process in a checkout of
  each revision, unpinned, in this process's environment; elapsed time around it, CPU time from
  wait4's rusage.
- `pinned`: the compare's own code path (`_time_runs`: each run a `bash -c` through the session
  at its revision, `env -i`, bash's `time`) with the CPU `choose_affinity` picks when none is
  asked.
- `unpinned`: the same runs through the same two sessions, with no affinity.
- `cpu0` (optional, `--arms`): the same pinned to CPU 0.

Stop 43 found the pinned and unpinned session arms alike, both 1.26-1.41x the by-hand's sd. The
by-hand arms below step from `hand` toward the session's path one difference at a time
(optional, `--arms`; stop 44, not yet run in a quiet window):
- `hand_clean`: as `hand`, in the environment the session's timed runs get (`env -i` keeping
  PATH and `WORKER_ENVIRONMENT`: HOME, TEMP, PYTHONPATH...), not this process's whole one.
- `hand_leased`: as `hand`, in the compare's leased trees (`envcache.lease_tree`), not fresh
  clones.
- `hand_script`: the session's own timing chain (`TIME_SCRIPT`: bash, bash's `time`, `bash -c
  CMD`) started from this process in the clean environment, unpinned, in the fresh clones: the
  session's path less the session (its shell, FIFOs and trajectory writes between runs).

Per arm (wall and CPU time): pairs, the sd of their log A/B with its 95% interval (chi-square,
for normal pairs, and a bootstrap over blocks), the sd after the compare's set-aside
(`outlier_rounds`), the speed-up, seconds per pair, and against `hand`: the sd ratio and the
same-width cost per pair (seconds per pair x variance; a compare's fixed costs and the offset
term come on top) with bootstrap intervals over blocks. The device interrupts each CPU took
during each arm's runs (/proc/interrupts) are kept beside.

Rows (one per block and arm, every run's values) go to `--jsonl` as they are measured;
`--summarize FILE` prints the summary of such a file again.

Run: uv run python bench/perf_pinning.py [--end HH:MM] [--blocks 40] [--arms hand,pinned,unpinned]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.perf_accuracy import at_time, checkout, command_by_hand_once, fixture, size_command
from simulator.perf import CompareRequest, envcache
from simulator.perf.compare import _time_runs, _TimedRuns, choose_affinity
from simulator.perf.environment import (
    TIME_SCRIPT,
    WORKER_ENVIRONMENT,
    PerfEnvironment,
    shared_tools,
)
from simulator.perf.stats import SYSTEMATIC, compare_runs, outlier_rounds, pairs_needed
from simulator.workflow import WorkflowRun

ARMS = ("hand", "pinned", "unpinned", "cpu0", "hand_clean", "hand_leased", "hand_script")
HAND_ARMS = ("hand", "hand_clean", "hand_leased", "hand_script")
RESAMPLES = 4000
Z95 = statistics.NormalDist().inv_cdf(0.975)


def irq_counts() -> list[int]:
    """Device interrupts (the numbered rows of /proc/interrupts) each CPU has taken."""
    lines = Path("/proc/interrupts").read_text().splitlines()
    cpus = len(lines[0].split())
    totals = [0] * cpus
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        if name.strip().isdigit():
            for k, count in enumerate(rest.split()[:cpus]):
                totals[k] += int(count)
    return totals


def steal_ticks() -> list[int]:
    """Each CPU's steal time (clock ticks the hypervisor ran something else), /proc/stat."""
    rows = [row.split() for row in Path("/proc/stat").read_text().splitlines()]
    return [int(row[8]) for row in rows if row[0].startswith("cpu") and row[0] != "cpu"]


def clean_environment() -> dict[str, str]:
    """What the session's `env -i` keeps of this process's environment (PATH and
    WORKER_ENVIRONMENT: see PerfEnvironment._clean_environment)."""
    kept = ("PATH", *WORKER_ENVIRONMENT)
    return {name: os.environ[name] for name in kept if name in os.environ}


def script_once(tree: Path, command: str) -> tuple[float, float]:
    """One run through the session's timing chain (TIME_SCRIPT, unpinned) started from here in
    the clean environment: bash's `time` of `bash -c CMD`, its elapsed and CPU seconds."""
    mark = "REPOSIM-PINNING-TIME"
    proc = subprocess.run(
        ["bash", "-c", TIME_SCRIPT, "reposim-time", command, mark, ""],
        cwd=tree,
        env=clean_environment(),
        capture_output=True,
        text=True,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(mark + " "):
            _mark, status, real, user, system = line.split()
            if status != "0":
                break
            return float(real), float(user) + float(system)
    raise SystemExit(f"{command} failed through TIME_SCRIPT: {proc.stdout[-500:]}{proc.stderr}")


def hand_round(
    first: str, trees: dict[str, Path], command: str, arm: str = "hand"
) -> dict[str, list[list[float]]]:
    """One by-hand round, first second second first: each side's [wall, cpu] in order. `arm`:
    `hand`, `hand_clean` or `hand_script` (`trees` are the leased ones for `hand_leased`)."""
    second = "b" if first == "a" else "a"
    runs: dict[str, list[list[float]]] = {"a": [], "b": []}
    env = clean_environment() if arm == "hand_clean" else None
    for side in (first, second, second, first):
        if arm == "hand_script":
            runs[side].append(list(script_once(trees[side], command)))
        else:
            runs[side].append(list(command_by_hand_once(trees[side], command, env)))
    return runs


async def ours_round(
    first: str,
    envs: dict[str, PerfEnvironment],
    workflows: dict[str, WorkflowRun],
    request: CompareRequest,
    affinity: str | None,
    number: int,
) -> dict[str, list[list[float]]]:
    """One round as the compare times a command (`_time_runs`, 2 runs a side, A B B A)."""
    timed = _TimedRuns("pinning", request.command or "")
    order = [envs["a"], envs["b"]] if first == "a" else [envs["b"], envs["a"]]
    await _time_runs(
        order, 2, timed, request, workflows, number=number, of=0, timeout=600, affinity=affinity
    )
    return {side: [[run[0], run[1]] for run in timed.runs[side.upper()]] for side in "ab"}


def sd_interval(sd: float, n: int) -> tuple[float, float]:
    """The 95% interval of a standard deviation from `n` normal values (chi-square, by the
    Wilson-Hilferty approximation of its quantiles)."""
    df = n - 1

    def chi2(z: float) -> float:
        return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3

    return sd * math.sqrt(df / chi2(Z95)), sd * math.sqrt(df / chi2(-Z95))


def pair_logs(row: dict[str, Any], timer: int) -> list[float]:
    return [math.log(a[timer] / b[timer]) for a, b in zip(row["a"], row["b"], strict=True)]


def spread(logs: list[float]) -> float:
    return statistics.stdev(logs) if len(logs) > 1 else float("nan")


def summarize(rows: list[dict[str, Any]]) -> str:
    """Per arm and timer: the pairs' spread with its intervals, against `hand`."""
    arms = [arm for arm in ARMS if any(r["arm"] == arm for r in rows)]
    blocks = sorted(
        {
            r["block"]
            for r in rows
            if all(any(x["block"] == r["block"] and x["arm"] == arm for x in rows) for arm in arms)
        }
    )
    by = {(r["block"], r["arm"]): r for r in rows}
    lines = [
        f"{len(blocks)} complete blocks, arms {', '.join(arms)}; loads "
        + ", ".join(f"{r['load']:.2f}" for r in rows if r["arm"] == arms[0])
    ]
    rng = random.Random(0)
    resamples = [[rng.choice(blocks) for _ in blocks] for _ in range(RESAMPLES)]

    def stat(arm: str, timer: int, chosen: list[int]) -> tuple[float, float]:
        logs = [x for k in chosen for x in pair_logs(by[(k, arm)], timer)]
        seconds = sum(by[(k, arm)]["seconds"] for k in chosen) / len(logs)
        return spread(logs), seconds

    def interval(values: list[float]) -> str:
        ordered = sorted(v for v in values if not math.isnan(v))
        low = ordered[int(0.025 * (len(ordered) - 1))]
        high = ordered[int(0.975 * (len(ordered) - 1))]
        return f"{low:.2f}-{high:.2f}"

    for timer, name in ((0, "wall"), (1, "cpu")):
        lines.append(f"\n{name} time")
        base = {arm: stat(arm, timer, blocks) for arm in arms}
        boot = {arm: [stat(arm, timer, chosen) for chosen in resamples] for arm in arms}
        for arm in arms:
            logs = [x for k in blocks for x in pair_logs(by[(k, arm)], timer)]
            sd, seconds = base[arm]
            low, high = sd_interval(sd, len(logs))
            boot_sd = sorted(s for s, _ in boot[arm])
            a = [run[timer] for k in blocks for run in by[(k, arm)]["a"]]
            b = [run[timer] for k in blocks for run in by[(k, arm)]["b"]]
            aside = outlier_rounds(a, b)
            kept = [x for j, x in enumerate(logs) if j not in aside]
            mean = statistics.fmean(logs)
            half = 1.96 * sd / math.sqrt(len(logs))
            cv = max(
                statistics.stdev(a) / statistics.fmean(a), statistics.stdev(b) / statistics.fmean(b)
            )
            line = (
                f"  {arm:<9} {len(logs)} pairs: sd {sd:.4f} (95%: chi-square {low:.4f}-{high:.4f}, "
                f"bootstrap {boot_sd[int(0.025 * (RESAMPLES - 1))]:.4f}-"
                f"{boot_sd[int(0.975 * (RESAMPLES - 1))]:.4f}); set aside {len(aside)}, sd "
                f"{spread(kept):.4f}; speed-up {math.exp(mean):.4f} "
                f"({math.exp(mean - half):.4f}-{math.exp(mean + half):.4f}); runs' CV up to "
                f"{cv:.1%}; {seconds:.2f} s a pair"
            )
            if arm != "hand" and "hand" in arms:
                ratio = sd / base["hand"][0]
                cost = (seconds * sd**2) / (base["hand"][1] * base["hand"][0] ** 2)
                ratios = [s / h for (s, _), (h, _) in zip(boot[arm], boot["hand"], strict=True)]
                costs = [
                    (c * s**2) / (hc * h**2)
                    for (s, c), (h, hc) in zip(boot[arm], boot["hand"], strict=True)
                ]
                line += (
                    f"\n            against hand: sd {ratio:.2f}x ({interval(ratios)}), same-width "
                    f"cost a pair {cost:.2f}x ({interval(costs)})"
                )
            lines.append(line)
        if "pinned" in arms and "unpinned" in arms:
            ratio = base["pinned"][0] / base["unpinned"][0]
            ratios = [
                p / u for (p, _), (u, _) in zip(boot["pinned"], boot["unpinned"], strict=True)
            ]
            lines.append(f"  pinned / unpinned sd: {ratio:.2f}x ({interval(ratios)})")
    lines.append("\ndevice interrupts per CPU during each arm's runs, and steal ticks:")
    for arm in arms:
        irqs = [sum(by[(k, arm)]["irq"][c] for k in blocks) for c in range(len(rows[0]["irq"]))]
        steal = [sum(by[(k, arm)]["steal"][c] for k in blocks) for c in range(len(irqs))]
        seconds = sum(by[(k, arm)]["seconds"] for k in blocks)
        lines.append(
            f"  {arm:<9} "
            + ", ".join(f"CPU {c}: {n / seconds:.0f}/s" for c, n in enumerate(irqs))
            + f"; steal {steal}"
        )
    lines.append(projection(rows, arms))
    return "\n".join(lines)


def projection(rows: list[dict[str, Any]], arms: list[str], compares: int = 2000) -> str:
    """What the arms' pairs mean for a whole compare (derived, not measured): compares drawn
    from each arm's pairs (with replacement) through the protocol's stop rule (2 pairs a round,
    as for a 2-s command; the first 6 rounds' spread sets the rounds for +-2%; the budget of
    120 s of measuring at the arm's seconds a pair; the offset term; Stein's floor only where
    the rounds stopped at the count it asked, as since fac0ce8), plus 4 s of fixed cost (stop
    42: a compare's seconds less its measuring, 3.7-4.3 s); by hand 20 pairs drawn from `hand`.
    The same-width cost ratio is mean(cost x width^2) ours over by hand, as perf_accuracy.py
    pools it."""
    if "hand" not in arms:
        return ""
    rng = random.Random(43)
    lines = ["\na whole compare, simulated from each arm's pairs (derived, not measured):"]
    for timer, name in ((0, "wall"), (1, "cpu")):
        pairs = {
            arm: [x for r in rows if r["arm"] == arm for x in pair_logs(r, timer)] for arm in arms
        }
        seconds = {
            arm: sum(r["seconds"] for r in rows if r["arm"] == arm) / len(pairs[arm])
            for arm in arms
        }
        hand = []
        for _ in range(compares):
            drawn = [rng.choice(pairs["hand"]) for _ in range(20)]
            v = compare_runs([math.exp(x) for x in drawn], [1.0] * 20, paired=True)
            hand.append(20 * seconds["hand"] * math.log(v.ci_high / v.ci_low) ** 2)
        for arm in arms:
            if arm == "hand":
                continue
            ours = [simulated_compare(pairs[arm], seconds[arm], rng) for _ in range(compares)]
            ratio = statistics.fmean(c * w**2 for c, w, _ in ours) / statistics.fmean(hand)
            lines.append(
                f"  {name} {arm:<9} pairs median {statistics.median(n for _, _, n in ours):.0f}, "
                f"same-width cost ours / by hand {ratio:.2f}x (target <= 2)"
            )
    return "\n".join(lines)


def simulated_compare(
    logs: list[float], pair_seconds: float, rng: random.Random
) -> tuple[float, float, int]:
    """(cost, width in log, pairs) of one compare drawn from `logs` (see `projection`)."""
    drawn: list[float] = []
    done, target, by_pilot = 0, 0, False
    while True:
        drawn += [rng.choice(logs), rng.choice(logs)]
        done += 1
        if done < 6 or done % 2:
            continue
        if not target:
            needed = pairs_needed(
                [math.exp(x) for x in drawn[:12]], [1.0] * 12, 0.02, systematic=SYSTEMATIC
            )
            target = math.ceil(needed / 2)
            target += target % 2
        if done >= target:
            by_pilot = True
            break
        if (done + 2) * 2 * pair_seconds > 120.0:
            break
    verdict = compare_runs(
        [math.exp(x) for x in drawn],
        [1.0] * len(drawn),
        paired=True,
        pilot=12 if by_pilot else 0,
        systematic=SYSTEMATIC,
    )
    return 4.0 + done * 2 * pair_seconds, math.log(verdict.ci_high / verdict.ci_low), len(drawn)


async def measure(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    arms = args.arms.split(",")
    repo, commits = fixture(root)
    trees = {
        "a": checkout(repo, commits["a"], root / "tree-a"),
        "b": checkout(repo, commits[args.b], root / "tree-b"),
    }
    command, truth = size_command(trees["a"], args.command_seconds)
    pinned, isolation = choose_affinity(None)
    print(f"truth {truth if args.b == 'b' else 1.0:.4f}; pinned arm: {isolation}", flush=True)
    affinity = {"pinned": pinned, "unpinned": None, "cpu0": "0"}
    request = CompareRequest(repo, commits["a"], commits[args.b], command=command)
    envs: dict[str, PerfEnvironment] = {}
    leases: list[envcache.TreeLease] = []
    rows: list[dict[str, Any]] = []
    try:
        for side in "ab":
            commit = commits["a" if side == "a" else args.b]
            lease = envcache.lease_tree(repo, commit)
            leases.append(lease)
            env = await PerfEnvironment.open(
                side.upper(),
                lease.path,
                commit,
                tools=shared_tools(),
                trajectory_path=root / f"trajectory-{side}.jsonl",
                commit=commit,
            )
            envs[side] = env
            await env.checkout()
        leased = {side: lease.path for side, lease in zip("ab", leases, strict=True)}
        with (
            WorkflowRun(envs["a"].session, "perf.pinning", {"side": "A"}) as run_a,
            WorkflowRun(envs["b"].session, "perf.pinning", {"side": "B"}) as run_b,
        ):
            workflows = {"A": run_a, "B": run_b}
            for side in "ab":  # one untimed run each way first, as the quickcheck is
                await envs[side].command_check(command, None, timeout=600)
                command_by_hand_once(trees[side], command)
            end = at_time(args.end) if args.end else None
            longest = 0.0
            for block in range(args.blocks):
                if end is not None and time.time() + longest > end:
                    print(f"stopped before block {block + 1}: --end {args.end}", flush=True)
                    break
                started = time.monotonic()
                first = "a" if block % 2 == 0 else "b"
                shown = []
                for arm in arms[block % len(arms) :] + arms[: block % len(arms)]:
                    irq, steal, t0 = irq_counts(), steal_ticks(), time.monotonic()
                    if arm in HAND_ARMS:
                        where = leased if arm == "hand_leased" else trees
                        runs = hand_round(first, where, command, arm)
                    else:
                        runs = await ours_round(
                            first, envs, workflows, request, affinity[arm], block + 1
                        )
                    row = {
                        "block": block,
                        "arm": arm,
                        "first": first,
                        "seconds": time.monotonic() - t0,
                        "irq": [x - y for x, y in zip(irq_counts(), irq, strict=True)],
                        "steal": [x - y for x, y in zip(steal_ticks(), steal, strict=True)],
                        "load": os.getloadavg()[0],
                        "time": time.strftime("%H:%M:%S"),
                        **runs,
                    }
                    rows.append(row)
                    if args.jsonl:
                        with args.jsonl.open("a") as handle:
                            handle.write(json.dumps(row) + "\n")
                    shown.append(f"{arm} " + "/".join(f"{x:+.3f}" for x in pair_logs(row, 0)))
                longest = max(longest, time.monotonic() - started)
                print(
                    f"block {block + 1} ({first.upper()} first, {time.monotonic() - started:.0f} "
                    f"s, load {os.getloadavg()[0]:.2f}): log A/B wall " + "; ".join(shown),
                    flush=True,
                )
    finally:
        for env in envs.values():
            await env.close()
        for lease in leases:
            lease.release()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arms", default="hand,pinned,unpinned", help="of " + ", ".join(ARMS))
    parser.add_argument("--blocks", type=int, default=40, help="blocks at most")
    parser.add_argument("--end", help="HH:MM (today): start no block that might not end before")
    parser.add_argument("--command-seconds", type=float, default=2.0)
    parser.add_argument(
        "--b", default="b", choices=("b", "same"), help="B: 10%% faster, or a comment only"
    )
    parser.add_argument("--jsonl", type=Path, help="append each arm's round here as measured")
    parser.add_argument("--summarize", type=Path, help="only print the summary of this JSONL")
    args = parser.parse_args()
    if args.summarize:
        rows = [json.loads(line) for line in args.summarize.read_text().splitlines() if line]
    else:
        unknown = set(args.arms.split(",")) - set(ARMS)
        if unknown:
            parser.error(f"unknown arms: {', '.join(sorted(unknown))}")
        print(f"start {time.strftime('%H:%M:%S')}, load {os.getloadavg()}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            rows = asyncio.run(measure(args, Path(tmp)))
        print(f"end {time.strftime('%H:%M:%S')}, load {os.getloadavg()}", flush=True)
    print(summarize(rows), flush=True)


if __name__ == "__main__":
    main()
