"""Statistics over pyperf results: per-side summaries, the speed-up and whether it is real.

The unit of independence is a pyperf *run* (one worker process): values inside a run share its
memory layout, hash seeds and CPU state, so they are not independent draws. The speed-up's
confidence interval is a bootstrap over runs (each side resampled separately, ratio of the
means), and significance is pyperf's own two-sample t-test applied to the per-run means; a
difference is called significant only when that test says so *and* the interval excludes 1.0.

Runs measured in interleaved rounds (A B, B A, ...) are compared *paired*: the k-th run of A and
the k-th run of B ran one after the other, so whatever drifts on the machine during the
comparison (other processes' load, caches, the CPU's frequency) moves both alike. On this
2-core machine at load 3-8 the CPU time of one fixed call drifted by 50% over two minutes while
A and B of one round differed by about 8%; treated as independent samples that drift widened
the interval until a 10% change went unseen. Paired, the speed-up is the geometric mean of the
rounds' A/B ratios, its interval the t interval of their logs and the t-test the one-sample
test of the same logs (so the two agree); a bootstrap over so few rounds held the truth less
often than it said (87% of the time with 4 pairs, 93% with 6, at 95%).
"""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyperf
from pyperf._utils import is_significant, tdist95conf_level

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000
NOISY_CV = 0.10  # pyperf warns when the standard deviation is at least 10% of the mean
LOADED_PER_CPU = 0.9  # load average per CPU above which the machine is busy with other work
# The standard deviation, in log, of an offset each compare carries that its pairs do not show
# (stops 39-40, bench/perf_accuracy.py, 83 compares at load 1-60): the compares' speed-ups
# strayed from the truth by more than their pairs' spread says, sd 0.0068 beyond it over all
# and 0.0108 among the 15 that stopped at 8 pairs or fewer (their squared error 3.7x what their
# pairs gave), where 4 of the 8 misses were; no drift within a compare (its first 8 pairs
# against its next 8: mean z^2 1.21, 1.17 expected) and no lag-1 correlation (-0.04), so no
# number of rounds in one compare shows it. Added to the adaptive protocol's half-width
# (`_paired_verdict`), +-1.47% at 95% alone.
SYSTEMATIC = 0.0075


@dataclass(frozen=True)
class SideStats:
    """One side of a comparison (one revision), from its pyperf JSON file."""

    mean: float  # seconds per call, over every value of every run
    std: float
    median: float
    runs: int
    values: int
    loops: int
    run_means: tuple[float, ...]
    run_cv: float  # coefficient of variation of the run means

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SideStats:
        return cls(**{**data, "run_means": tuple(data["run_means"])})


@dataclass(frozen=True)
class Verdict:
    speedup: float  # time A / time B: above 1 means B is faster
    ci_low: float
    ci_high: float
    confidence: float
    significant: bool
    t_score: float | None
    opt_pct: float  # (1 - B/A) * 100, the published "Opt %"
    opt_pct_std: float  # its bootstrap standard deviation
    t_significant: bool | None = None  # what the t-test alone says (None: older results)
    # paired rounds left out of the speed-up and its interval (0-based): see `outlier_rounds`
    set_aside: tuple[int, ...] = ()
    # the first `pilot` pairs' spread set how many rounds ran and floors the interval's
    # half-width (Stein's two-stage interval, see `_paired_verdict`); 0: none did
    pilot: int = 0
    # the sd in log of an offset between compares that the pairs do not show, added to the
    # half-width (`SYSTEMATIC`; 0: none, as fixed rounds and older results)
    systematic: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(**{**data, "set_aside": tuple(data.get("set_aside") or ())})

    def disagreement(self) -> str | None:
        """One sentence when the t-test and the interval do not agree, else None."""
        excludes = not (self.ci_low <= 1.0 <= self.ci_high)
        if self.t_significant is None or self.t_significant == excludes:
            return None
        t = f"t = {self.t_score:.2f}" if self.t_score is not None else "t-test"
        if self.t_significant:
            reasons = []
            if self.pilot:
                reasons.append(
                    f"the interval is as wide as the first {self.pilot} pairs' spread gives: "
                    "they set how many rounds ran"
                )
            if self.systematic:
                reasons.append(
                    f"it holds +-{systematic_half(self.systematic, self.confidence):.1%} for an "
                    "offset between compares that no pair shows"
                )
            why = f" ({'; '.join(reasons)})" if reasons else ""
            return (
                f"the t-test on the runs' means finds a difference ({t}) but the "
                f"{self.confidence:.0%} interval includes 1.0{why}, so the two disagree: the "
                "difference is borderline; measure longer (--budget) to settle it"
            )
        return (
            f"the {self.confidence:.0%} interval excludes 1.0 but the t-test does not find the "
            f"difference significant ({t}), so the two disagree: the difference is borderline; "
            "measure longer (--budget) to settle it"
        )

    def sentence(self) -> str:
        level = f"{self.confidence:.1%}".replace(".0%", "%")  # 95%; 98.8% for a group
        interval = f"{level} CI {self.ci_low:.3f}-{self.ci_high:.3f}"
        if not self.significant:
            text = f"not significant: speed-up {self.speedup:.3f}x ({interval})"
            why = self.disagreement()
            return f"{text}; {why}" if why else text
        word = "faster" if self.speedup > 1 else "slower"
        return f"B is {word}: speed-up {self.speedup:.3f}x ({interval})"


def load_benchmark(path: Path) -> pyperf.Benchmark:
    """The one benchmark of a pyperf JSON file."""
    suite = pyperf.BenchmarkSuite.load(str(path))
    benchmarks = suite.get_benchmarks()
    if len(benchmarks) != 1:
        raise ValueError(f"{path} holds {len(benchmarks)} benchmarks, expected one.")
    return benchmarks[0]


def run_means(bench: pyperf.Benchmark, *, each_value: bool = False) -> list[float]:
    """The mean value of each run that has values (calibration runs have none).

    `each_value`: every value counts alone, in order. For a command each value is a fresh
    process of the command, as independent as a run of the worker (the worker only starts it),
    so a worker timing it twice gives two units, not one."""
    runs = [run for run in bench.get_runs() if run.values]
    if each_value:
        return [value for run in runs for value in run.values]
    return [statistics.fmean(run.values) for run in runs]


def side_stats(bench: pyperf.Benchmark, *, each_value: bool = False) -> SideStats:
    values = list(bench.get_values())
    means = run_means(bench, each_value=each_value)
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    mean_of_runs = statistics.fmean(means)
    cv = statistics.stdev(means) / mean_of_runs if len(means) > 1 and mean_of_runs else 0.0
    return SideStats(
        mean=mean,
        std=std,
        median=statistics.median(values),
        runs=len(means),
        values=len(values),
        loops=int(bench.get_metadata().get("loops") or 0),
        run_means=tuple(means),
        run_cv=cv,
    )


def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student t critical value: P(|T| <= t) = `confidence` with `df` degrees
    of freedom (pyperf's own table at 95%, which it has for every df)."""
    if abs(confidence - 0.95) < 1e-9:
        return float(tdist95conf_level(df))
    low, high = 0.0, 1.0
    while _t_within(high, df) < confidence:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _t_within(middle, df) < confidence else (low, middle)
    return high


def _t_within(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with an integer `df` >= 1, in closed form (Abramowitz and
    Stegun 26.7.3-4): a finite series in the angle atan(t / sqrt(df))."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    term, series = 1.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= cos2 * (2 * k) / (2 * k + 1)
            series += term
        tail = math.sin(theta) * math.cos(theta) * series if df > 1 else 0.0
        return 2 / math.pi * (theta + tail)
    for k in range(1, df // 2):
        term *= cos2 * (2 * k - 1) / (2 * k)
        series += term
    return math.sin(theta) * series


def expanded_tail(n: int, confidence: float = CONFIDENCE) -> float:
    """The tail probability for a percentile bootstrap interval over `n` runs, expanded for
    small samples (Hesterberg's expanded percentile interval): the plain percentile interval is
    too narrow with ~10 runs (it covered the truth 17 times in 20 on bench/perf_accuracy.py);
    widening it by sqrt(n/(n-1)) x t(n-1)/z restores the asked coverage."""
    if n < 2:
        return (1.0 - confidence) / 2
    z = math.sqrt(n / (n - 1)) * t_quantile(confidence, n - 1)
    return 1.0 - statistics.NormalDist().cdf(z)


OUTLIER_SPREADS = 5.0  # robust deviations (MAD x 1.4826) from the median round's log ratio
OUTLIER_FLOOR = math.log(1.5)  # and at least 1.5x off it, however quiet the other rounds


def outlier_rounds(a: list[float], b: list[float]) -> list[int]:
    """Paired rounds whose A/B ratio is an accident, not noise: more than OUTLIER_SPREADS
    robust deviations and OUTLIER_FLOOR from the median round's log ratio, at most a quarter
    of the rounds (more that far off is how noisy the machine is, and they all count).

    On a loaded machine one run can take several times its usual CPU time (CI, load ~16: one
    run of B 7x its others, a true 2x measured 1.27x with the interval 0.79-1.83, because the
    ratio of the means is the one run's). A pair already cancels what drifts alike on both
    sides; what is left in one round alone is an accident of that round."""
    n = len(a)
    if n < 4 or len(b) != n or not all(a) or not all(b):
        return []
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    middle = statistics.median(logs)
    spread = 1.4826 * statistics.median(abs(r - middle) for r in logs)
    limit = max(OUTLIER_SPREADS * spread, OUTLIER_FLOOR)
    far = [k for k, r in enumerate(logs) if abs(r - middle) > limit]
    return far if len(far) <= n // 4 else []


def pilot_spread(a: list[float], b: list[float]) -> tuple[float, int]:
    """The standard deviation of a pilot's log ratios (the first rounds of a compare, paired)
    and how many it counted: the rounds `outlier_rounds` finds among them are left out."""
    set_aside = outlier_rounds(a, b)
    logs = [
        math.log(x / y) for k, (x, y) in enumerate(zip(a, b, strict=True)) if k not in set_aside
    ]
    return (statistics.stdev(logs) if len(logs) > 1 else 0.0), len(logs)


def systematic_half(systematic: float, confidence: float = CONFIDENCE) -> float:
    """The half-width in log that an offset of sd `systematic` alone takes at `confidence`."""
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2) * systematic


def pairs_needed(
    a: list[float],
    b: list[float],
    precision: float,
    confidence: float = CONFIDENCE,
    systematic: float = 0.0,
) -> int:
    """How many pairs bring the interval within +-`precision` of the speed-up, by the spread
    of the pilot pairs `a`/`b` (Stein's first stage): (t(k-1) s / h)^2, h the half-width in
    log that `precision` is (a half-width h in log is sinh(h) of the speed-up), less the part
    an offset of sd `systematic` takes (the two add in squares, see `_paired_verdict`; at
    least half of h is left to the pairs, so a precision at or below the offset's asks 4x the
    pairs, not all there are); at least the pilot's own pairs."""
    spread, counted = pilot_spread(a, b)
    if counted < 2:
        return len(a)
    whole = math.asinh(precision)
    target = math.sqrt(max(whole**2 - systematic_half(systematic, confidence) ** 2, whole**2 / 4))
    return max(len(a), math.ceil((t_quantile(confidence, counted - 1) * spread / target) ** 2))


def compare_runs(
    a: list[float],
    b: list[float],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    paired: bool = False,
    pilot: int = 0,
    systematic: float = 0.0,
) -> Verdict:
    """Speed-up of B over A from per-run mean times, its interval and a t-test.

    `paired`: a[k] and b[k] were measured in the same round (see the module's note); rounds
    that `outlier_rounds` finds are left out, and named in the verdict's `set_aside`. Paired,
    the speed-up is the geometric mean of the rounds' A/B ratios and its interval the t
    interval of their logs, the same statistic as the t-test (see `_paired_verdict`); with
    `pilot` N, the first N pairs' spread decided how many rounds ran (`pairs_needed`) and the
    interval is at least as wide as that spread gives; `systematic` (paired): the sd in log of
    an offset between compares that the pairs do not show, added to the half-width. Unpaired,
    the speed-up is the ratio of the means, with a bootstrap interval (`resamples`, `seed`)
    and pyperf's two-sample t-test."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("a comparison needs at least two runs on each side.")
    if paired and len(a) != len(b):
        raise ValueError("paired runs come in pairs: both sides need as many runs.")
    if paired:
        return _paired_verdict(a, b, confidence, pilot, systematic)
    speedup = statistics.fmean(a) / statistics.fmean(b)
    rng = random.Random(seed)
    ratios = sorted(
        statistics.fmean(rng.choices(a, k=len(a))) / statistics.fmean(rng.choices(b, k=len(b)))
        for _ in range(resamples)
    )
    tail = expanded_tail(min(len(a), len(b)), confidence)
    low = ratios[int(tail * (resamples - 1))]
    high = ratios[int((1.0 - tail) * (resamples - 1))]
    try:
        t_significant, t_score = is_significant(a, b)
    except ZeroDivisionError:  # identical constant samples: no difference at all
        t_significant, t_score = False, 0.0
    significant = bool(t_significant) and not (low <= 1.0 <= high)
    opts = [(1.0 - 1.0 / ratio) * 100 for ratio in ratios]
    return Verdict(
        speedup=speedup,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        significant=significant,
        t_score=float(t_score) if t_score is not None else None,
        opt_pct=(1.0 - 1.0 / speedup) * 100,
        opt_pct_std=statistics.stdev(opts),
        t_significant=bool(t_significant),
    )


def _paired_verdict(
    a: list[float], b: list[float], confidence: float, pilot: int = 0, systematic: float = 0.0
) -> Verdict:
    """Paired rounds: the t interval of the rounds' log ratios, exp(mean +- t(n-1) sd/sqrt(n)),
    around their geometric mean (the speed-up), and the one-sample t-test of the same logs.

    Before, the interval was an expanded percentile bootstrap of the ratio of the resampled
    sums: with the 4 pairs of `--quick` it held the truth 87% of the time, with 6 pairs (what
    a CPU-time restart often leaves) 93% (simulated; 2 of 30 missed on
    bench/perf_accuracy.py), where the t interval holds 95% (and more under heavy tails).

    `pilot` N: the first N pairs' spread s0 set how many pairs ran (`pairs_needed`), and the
    half-width in log is at least Stein's t(k-1) s0 / sqrt(n) (k the pilot's pairs counted, n
    all pairs counted). `compare` passes it only when the rounds stopped at that count; where
    its budget or its most rounds stopped them, their number did not hang on s0 (stop 43).
    Rounds that stop once the interval is narrow are too narrow: the
    compares that stop are those whose pairs happened to spread little. On
    bench/perf_accuracy.py (stop 39) 2 of the 4 compares that stopped so missed the truth,
    against 2 of the 26 that ran to the budget, while the t interval of every compare's first
    6, 8, 10 or 12 pairs (a number fixed beforehand) held it 104 times in 107. Simulated (a
    pair's sd 0.01-0.06, 20 rounds at most, +-2%, normal and heavy-tailed pairs, 3,000
    compares a case), that stop held the truth 92.8-95.5% of the time, asking for two narrow
    looks in a row 93.6-96.1% (from 8 rounds on 93.8-95.9%), and the rounds fixed by the pilot
    with this interval 95.3-97.5%, in up to 2.6 rounds more than that stop
    (bench/perf_stop_rules.py). Stein's
    half-width alone is exact for normal pairs (the pilot's spread is independent of the mean
    of all pairs) but not under heavy tails; the wider of the two holds both ways.

    `systematic` s: the half-width h is sqrt(h^2 + (z s)^2), an offset of sd s that each compare
    carries and its pairs do not show (`SYSTEMATIC`). Stein's two stages held stop 40's
    compares 49 times in 53; all four misses stopped at the pilot's count, three of them after
    6-8 tight pairs, the estimate 0.11-0.70% beyond the interval's edge. With s 0.0075 those
    53 hold 53 (stop 39's 30: 30, against 26), the 10% change still found 17 of 18 (s chosen on
    these data: the offset's sd they show). Simulated (bench/perf_stop_rules.py, 12 cases: a
    pair's sd 0.01-0.06, normal and heavy-tailed, 1,000 compares each) with an offset of sd
    0.007 per compare, the two stages held 89% on average (76% where the pairs are tight), a
    larger pilot less (12 pairs 83-84%, 16 pairs 80-82%: more pairs, a narrower interval, the
    same offset), with the term 96.7% (95.7-97.4%); with no offset the term holds 99.4%. Its
    cost: 16.1 rounds on average against 13.3 (20 rounds at most), 25.9 against 18.8 (40 at
    most); where the pilot's count is reached, up to 2.2x the rounds (the pairs' part of +-2%
    is then +-1.3%).

    Significant exactly when 1.0 is outside the interval; the t-test of all pairs is kept
    beside it (`t_significant`), and `disagreement` says so when the pilot's floor makes the
    two differ."""
    set_aside = outlier_rounds(a, b)
    kept = [(x, y) for k, (x, y) in enumerate(zip(a, b, strict=True)) if k not in set_aside]
    logs = [math.log(x / y) for x, y in kept]
    mean = statistics.fmean(logs)
    error = statistics.stdev(logs) / math.sqrt(len(logs))
    t_significant, t_score = _paired_t(logs, confidence)
    half = t_quantile(confidence, len(logs) - 1) * error
    if pilot:
        spread, counted = pilot_spread(a[:pilot], b[:pilot])
        if counted >= 2:
            floor = t_quantile(confidence, counted - 1) * spread / math.sqrt(len(logs))
            if floor > half:
                half, error = floor, floor / t_quantile(confidence, len(logs) - 1)
    if systematic:
        half = math.sqrt(half**2 + systematic_half(systematic, confidence) ** 2)
        error = half / t_quantile(confidence, len(logs) - 1)
    speedup = math.exp(mean)
    return Verdict(
        speedup=speedup,
        ci_low=math.exp(mean - half),
        ci_high=math.exp(mean + half),
        confidence=confidence,
        significant=abs(mean) > half if half else mean != 0.0,
        t_score=t_score,
        opt_pct=(1.0 - 1.0 / speedup) * 100,
        # d opt / d log(speed-up) = 100 / speed-up: the delta method on the logs' mean
        opt_pct_std=100.0 / speedup * error,
        t_significant=t_significant,
        set_aside=tuple(set_aside),
        pilot=pilot,
        systematic=systematic,
    )


def _paired_t(logs: list[float], confidence: float = CONFIDENCE) -> tuple[bool, float | None]:
    """The one-sample t-test of the rounds' log ratios against 0 (two-sided, at `confidence`);
    the score is None when every round gave the same nonzero ratio (no spread to scale it by)."""
    mean, spread = statistics.fmean(logs), statistics.stdev(logs)
    if spread == 0.0:
        return mean != 0.0, (None if mean else 0.0)
    t_score = mean / (spread / math.sqrt(len(logs)))
    return abs(t_score) >= t_quantile(confidence, len(logs) - 1), t_score


def group_verdicts(
    runs_a: list[list[dict[str, Any]]], runs_b: list[list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Each call group's speed-up (the worker's groups: the calls of one test, or of one test
    on scaled inputs), its values paired by run as the runs are. The groups are many looks at
    one comparison, so each interval and t-test is at 1 - 0.05 / (number of groups)
    (Bonferroni): picking the group that changed most then keeps its 95% meaning. A group
    whose calls differ between the sides (one raised, or was too slow, at one revision only)
    is listed, not compared."""
    count = min(len(runs_a), len(runs_b))
    if count < 2:
        return []

    def key(group: dict[str, Any]) -> tuple[str, int, tuple[int, ...] | None]:
        scale = group.get("scale")
        return group["label"], int(group["calls"]), tuple(scale) if scale else None

    sides: list[dict[tuple[str, int, tuple[int, ...] | None], list[float]]] = []
    for runs in (runs_a[:count], runs_b[:count]):
        table: dict[tuple[str, int, tuple[int, ...] | None], list[float]] = {}
        for run in runs:
            for group in run:
                table.setdefault(key(group), []).append(float(group["seconds"]))
        sides.append(table)
    looks = list(dict.fromkeys([*sides[0], *sides[1]]))
    confidence = 1.0 - (1.0 - CONFIDENCE) / max(len(looks), 1)
    out: list[dict[str, Any]] = []
    for label, calls, scale in looks:
        a = sides[0].get((label, calls, scale), [])
        b = sides[1].get((label, calls, scale), [])
        entry: dict[str, Any] = {"label": label, "calls": calls, "scale": scale}
        if len(a) != count or len(b) != count or not all(a) or not all(b):
            entry["compared"] = False
            out.append(entry)
            continue
        verdict = compare_runs(a, b, confidence=confidence, paired=True)
        entry.update(
            compared=True,
            time_a=statistics.fmean(a),
            time_b=statistics.fmean(b),
            runs=count,
            verdict=verdict.to_dict(),
        )
        out.append(entry)
    return out


def most_changed(groups: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The compared group whose speed-up is furthest from 1 (either way)."""
    compared = [g for g in groups if g.get("compared")]
    if not compared:
        return None
    return max(compared, key=lambda g: abs(math.log(g["verdict"]["speedup"])))


def noise_reasons(
    a: SideStats, b: SideStats, load: list[float], cpus: int, loaded_per_cpu: float = LOADED_PER_CPU
) -> list[str]:
    """Why these numbers may not be trusted: runs that vary too much, a machine under load."""
    reasons = []
    for label, side in (("A", a), ("B", b)):
        if side.run_cv >= NOISY_CV:
            reasons.append(
                f"the runs of {label} vary by {side.run_cv:.0%} of their mean "
                f"(noisy above {NOISY_CV:.0%})"
            )
    peak = max(load, default=0.0)
    if cpus and peak > loaded_per_cpu * cpus:
        reasons.append(
            f"the machine was busy: load average up to {peak:.2f} on {cpus} CPUs "
            "(other processes competed for the CPU)"
        )
    return reasons


def pyperf_metadata(path: Path) -> dict[str, Any]:
    """The metadata pyperf recorded with the runs (CPU, Python, load...)."""
    data = json.loads(path.read_text())
    metadata = dict(data.get("metadata") or {})
    for bench in data.get("benchmarks") or []:
        metadata.update(bench.get("metadata") or {})
    return metadata
