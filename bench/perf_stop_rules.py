"""How the adaptive protocol's stop rules hold the 95% interval (issue 28, stops 40-41):
simulated compares of paired log ratios around a truth of 0, `--cap` rounds at most (20: what
the 2-minute budget allows an API compare at load; 40 when quiet), a precision of +-2%.

Rules: stop at the first look (every 2 rounds from `n0`) whose t interval is narrow enough
(before stop 40, n0 6); the same asking for two narrow looks in a row (n0 6 and 8); and the two
stages the protocol uses (Stein's): the first n0 rounds' spread s0 sets the rounds,
(t(n0-1) s0 / h)^2, and the interval is the wider of the t interval of all rounds and
t(n0-1) s0 / sqrt(n) ("stein-max"; "stein-all" is the t interval alone, "stein-exact" Stein's
alone), for n0 6, 12 and 16; and (stop 41) the same with a systematic term s: the half-width
is sqrt(h^2 + (z s)^2) and the rounds aim at what of +-2% it leaves (`stats.pairs_needed`).

A pair's sd is fixed per case (0.01-0.06 in log: where +-2% is reached within the cap by some
compares and not others the stop matters most), normal or heavy-tailed (a tenth of the pairs
3x wider). `--offset` D: each compare also carries an offset drawn with sd D that none of its
pairs shows (stops 39-40's recorded compares strayed from the truth by sd 0.0068 beyond their
pairs' spread, 0.0108 among those that stopped at 8 pairs or fewer). Pure arithmetic, one
process: `nice -n 19`, a few seconds a 1,000 compares a rule.

Run: uv run python bench/perf_stop_rules.py [--compares 4000] [--cap 20] [--offset 0.007]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from collections.abc import Callable

from simulator.perf.stats import SYSTEMATIC, systematic_half, t_quantile

PRECISION = math.asinh(0.02)  # +-2% of the speed-up, as a half-width in log
T = {n: t_quantile(0.95, n - 1) for n in range(2, 200)}
Draw = Callable[[], float]
Rule = Callable[[Draw, int], tuple[list[float], float]]


def half(logs: list[float]) -> float:
    return T[len(logs)] * statistics.stdev(logs) / math.sqrt(len(logs))


def narrow_looks(draw: Draw, cap: int, n0: int, looks: int) -> tuple[list[float], float]:
    logs = [draw() for _ in range(n0)]
    narrow = 0
    while True:
        narrow = narrow + 1 if half(logs) <= PRECISION else 0
        if narrow >= looks or len(logs) >= cap:
            return logs, half(logs)
        logs += [draw(), draw()]


def two_stages(
    draw: Draw,
    cap: int,
    mode: str,
    n0: int = 6,
    systematic: float = 0.0,
    floor_at_cap: bool = True,
) -> tuple[list[float], float]:
    """`floor_at_cap` False: a compare the cap stopped (the pilot asked more rounds than the
    cap, the budget, allows) takes the t interval of all its rounds, without Stein's floor:
    its rounds were set by the cap, not by the pilot's spread."""
    logs = [draw() for _ in range(n0)]
    spread = statistics.stdev(logs)
    extra = systematic_half(systematic)
    aim = math.sqrt(max(PRECISION**2 - extra**2, PRECISION**2 / 4))
    need = math.ceil((T[n0] * spread / aim) ** 2)
    capped = need + need % 2 > cap
    need = min(cap, max(n0, need + need % 2))
    logs += [draw() for _ in range(need - n0)]
    stein = T[n0] * spread / math.sqrt(len(logs))
    if capped and not floor_at_cap:
        mode = "all"
    h = {"all": half(logs), "exact": stein, "max": max(half(logs), stein)}[mode]
    return logs, math.hypot(h, extra)


RULES: dict[str, Rule] = {
    "first narrow look (n0 6)": lambda d, c: narrow_looks(d, c, 6, 1),
    "two looks (n0 6)": lambda d, c: narrow_looks(d, c, 6, 2),
    "two looks (n0 8)": lambda d, c: narrow_looks(d, c, 8, 2),
    "stein-all": lambda d, c: two_stages(d, c, "all"),
    "stein-exact": lambda d, c: two_stages(d, c, "exact"),
    "stein-max (stop 40)": lambda d, c: two_stages(d, c, "max"),
    "stein-max n0 12": lambda d, c: two_stages(d, c, "max", 12),
    "stein-max n0 16": lambda d, c: two_stages(d, c, "max", 16),
    "stein-max + s 0.005": lambda d, c: two_stages(d, c, "max", 6, 0.005),
    "stein-max + s (stop 41)": lambda d, c: two_stages(d, c, "max", 6, SYSTEMATIC),
    "stein-max n0 12 + s": lambda d, c: two_stages(d, c, "max", 12, SYSTEMATIC),
    "stein-max + s, t at the cap": lambda d, c: two_stages(d, c, "max", 6, SYSTEMATIC, False),
    "stein-max n0 12 + s, t at cap": lambda d, c: two_stages(d, c, "max", 12, SYSTEMATIC, False),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compares", type=int, default=4000, help="compares per case")
    parser.add_argument("--cap", type=int, default=20, help="rounds at most")
    parser.add_argument("--offset", type=float, default=0.0, help="sd of a per-compare offset")
    parser.add_argument(
        "--sds", default="0.01,0.02,0.025,0.03,0.04,0.06", help="a pair's sd, the cases"
    )
    parser.add_argument("--rules", help="only the rules whose name holds one of these (a,b)")
    args = parser.parse_args()
    rules = {
        name: rule
        for name, rule in RULES.items()
        if not args.rules or any(part in name for part in args.rules.split(","))
    }
    print(f"at most {args.cap} rounds; per-compare offset sd {args.offset}")
    for heavy in (False, True):
        for sd in (float(x) for x in args.sds.split(",")):
            print(f"{'heavy-tailed' if heavy else 'normal'} pairs, sd {sd}:")
            for name, rule in rules.items():
                rng = random.Random(13)

                def draw(rng: random.Random = rng, sd: float = sd, heavy: bool = heavy) -> float:
                    wide = heavy and rng.random() < 0.1
                    return rng.gauss(0, 3 * sd if wide else sd)

                results = []
                for _ in range(args.compares):
                    offset = rng.gauss(0, args.offset) if args.offset else 0.0
                    logs, h = rule(lambda o=offset: o + draw(), args.cap)
                    results.append((logs, h))
                held = sum(abs(statistics.fmean(x)) <= h for x, h in results) / args.compares
                rounds = statistics.fmean(len(x) for x, _ in results)
                print(f"  {name:<26} holds {held:.3f}  rounds {rounds:.1f}", flush=True)


if __name__ == "__main__":
    main()
