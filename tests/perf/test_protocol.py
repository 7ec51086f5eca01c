"""The adaptive protocol on real git repositories: rounds until the interval is narrow or the
budget is spent, what it did under noise, and a sentence when the two tests disagree."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyperf
import pytest

from simulator.perf import CompareResult, MeasureSettings, compare
from simulator.perf.stats import (
    SYSTEMATIC,
    Verdict,
    compare_runs,
    pairs_needed,
    pilot_spread,
    systematic_half,
    t_quantile,
)
from tests.perf.conftest import PAIRED, checksum_request

HARNESS = """from fastlib.core import checksum

DATA = list(range(1500))


def bench():
    checksum(DATA)
"""
# Every other process (counted in `log`) sleeps 3 ms per call: elapsed time varies from run to
# run by far more than 10% (each side's runs alternate), the CPU time of the calls does not.
# bench() checksums 20 times per sleep: the CPU the sleep itself costs (its system call and
# the switch away and back) and the caches the other processes emptied meanwhile (together
# ~50 us a call at load 62-134: A 2c + x, B c + x) are paid once per 3-6 ms of checksums, not
# once per 0.1-0.2 ms call, which made a true 2x 1.27x on CI (load ~16) and 1.52-1.80x here
# (10 runs, load 62-134; now 1.91-2.08).
SLEEPY = """import time

from fastlib.core import checksum

with open({log!r}, "a+") as log:
    log.seek(0)
    n = len(log.read().splitlines())
    log.write("started\\n")
EXTRA = 0.003 * (n % 2)
DATA = list(range(1500))


def bench():
    for _ in range(20):
        checksum(DATA)
    time.sleep(EXTRA)
"""
# Every process that imports it logs its parent and whether the shell's PWD reached it, and
# takes a speed from its place in the sequence: the quickchecks (A, B), the calibrations (A, B),
# then one A and one B per round, so the two processes of a round share a speed and the rounds
# differ by up to 9x (a machine whose load drifts during the comparison, made exact). The 7th
# process, B of round 2, is 7x slower on top: one run inflated by an accident of its round.
DRIFTING = """import os

from fastlib.core import checksum

with open({log!r}, "a+") as log:
    log.seek(0)
    n = len(log.read().splitlines())
    with open(f"/proc/{{os.getppid()}}/cmdline", "rb") as parent:
        started_by = parent.read().replace(b"\\0", b" ").decode()
    log.write(f"{{n}}\\t{{'PWD' in os.environ}}\\t{{started_by}}\\n")
REPEAT = (1, 4, 9)[(n // 2) % 3] * (7 if n == 6 else 1)
DATA = list(range(1500))


def bench():
    for _ in range(REPEAT):
        checksum(DATA)
"""

# Every process that imports it counts itself in `log` (2 quickchecks, 2 calibrations, then one
# A and one B per round: A B, B A, A B, ...). B's processes of rounds 2, 4 and 6 (the 7th, 11th
# and 15th) checksum twice the data: B is 2x faster than A in every round but those three,
# where it is as fast as A. The first six rounds spread widely, the later ones little: a quiet
# stretch after a busy one, as on a shared machine. Three such rounds of six (half the pilot: no
# pilot round is then far from the median, none set aside) and 1.0x (0.69 in log off 2x, not
# 0.30): with two of four and 1.48x, at load ~9-11 a pilot pair whose extra work the noise hid
# (sd ~0.15 a pair at 10 ms a value) left the pilot tight, and the rounds stopped at 4-10.
# Simulated with that noise (a tenth of the pairs 3x), the pilot asks 12 rounds or fewer 9
# times in 20,000 (sd 0.25: 54).
SPREAD = """from fastlib.core import checksum

with open({log!r}, "a+") as log:
    log.seek(0)
    n = len(log.read().splitlines())
    log.write(f"{{n}}\\n")
EXTRA = list(range(1500 if n in (6, 10, 14) else 0))
DATA = list(range(1500))


def bench():
    checksum(DATA)
    checksum(EXTRA)
"""


# Every process that imports it logs where a 20 KB buffer it allocates lies in its page: a
# buffer that large comes from malloc, right after what the process allocated before, so its
# place in the page (which cache sets it fills) follows from that process's start (its argv,
# environment, the code it imported) and is the same in every process started alike.
LAYOUT = """import ctypes

from fastlib.core import checksum

BUFFER = bytearray(20000)
with open({log!r}, "a") as log:
    at = ctypes.addressof((ctypes.c_char * len(BUFFER)).from_buffer(BUFFER))
    log.write(f"{{at % 4096}}\\n")
DATA = list(range(1500))


def bench():
    checksum(DATA)
"""


async def measure(
    repo: Path, tmp_path: Path, settings: MeasureSettings, text: str = HARNESS
) -> CompareResult:
    """`perf compare` of tags a and b with the harness `text` timing checksum."""
    path = tmp_path / "harness.py"
    path.write_text(text)
    return await compare(
        checksum_request(
            repo,
            harness=path,
            out_dir=tmp_path / "out",
            settings=settings,
        )
    )


async def test_rounds_go_on_until_the_interval_is_narrow_enough(
    twox_repo: Path, tmp_path: Path
) -> None:
    settings = MeasureSettings(
        timer="cpu", min_time=0.02, min_rounds=4, max_rounds=100, precision=0.10, budget=240
    )
    result = await measure(twox_repo, tmp_path, settings)
    # the stop is said among the actions; what was set aside, if anything, is said after it
    stops = [action for action in result.actions if "stopped after" in action]
    assert len(stops) == 1, result.actions
    assert (
        "as the first 4 rounds' spread called for to bring the 95% interval within +-10%"
        in stops[0]
    )
    half = (result.verdict.ci_high - result.verdict.ci_low) / 2 / result.verdict.speedup
    assert half <= 0.11, result.summary()
    assert result.a.runs == result.b.runs and result.a.runs % 2 == 0
    assert 4 <= result.a.runs < 100 and result.verdict.pilot == 4
    assert "protocol: " in result.summary()
    # However tight the pairs, the interval holds the offset between compares that no pair
    # shows (stop 40: 3 of the 11 compares that stopped after 6-8 tight pairs missed the
    # truth, by 0.1-0.7% beyond the interval's edge): its half-width in log is that of the
    # pairs (Stein's floor or their t interval) and the offset's, added in squares.
    assert "+-1.5% of it held for an offset between compares" in stops[0], stops
    pairs = compare_runs(list(result.a.run_means), list(result.b.run_means), paired=True, pilot=4)
    in_log = math.log(result.verdict.ci_high / result.verdict.ci_low) / 2
    alone = math.log(pairs.ci_high / pairs.ci_low) / 2
    assert result.verdict.systematic == SYSTEMATIC
    assert in_log == pytest.approx(math.hypot(alone, systematic_half(SYSTEMATIC)), rel=1e-9)
    assert in_log >= 1.959 * SYSTEMATIC, result.summary()


async def test_the_first_rounds_spread_sets_the_rounds_and_the_cap_the_interval(
    twox_repo: Path, tmp_path: Path
) -> None:
    """Stopping at the first look whose interval is narrow enough picks the compares whose
    pairs happened to spread little, and their intervals are too narrow: 2 of the 4 compares
    of bench/perf_accuracy.py that stopped so (6-8 pairs) missed the truth, 2 of 26 otherwise.
    The first rounds' spread sets how many rounds run (here more than the 12 allowed: the
    busy first six). Before stop 43 the interval was then at least as wide as that spread
    gives over all rounds (Stein's floor) however the rounds stopped; here the most rounds
    stopped them, not that spread, and the interval is the t interval of all the rounds kept
    (the floor is for rounds that stopped where the spread said: their number hangs on it;
    without it where a cap stopped them the interval held 94.7-97.1% simulated, and 51 of the
    52 recorded compares of stops 40-42 that the budget stopped, at 0.61x the cost for the
    same width). Before stop 40, the rounds stopped at the first narrow look (10 of 12)."""
    log = tmp_path / "processes.log"
    settings = MeasureSettings(
        timer="cpu", min_time=0.01, min_rounds=6, max_rounds=12, precision=0.10, budget=900
    )
    result = await measure(twox_repo, tmp_path, settings, SPREAD.format(log=str(log)))
    assert len(log.read_text().splitlines()) == 2 + 2 + 2 * 12, result.actions
    stops = [action for action in result.actions if action.startswith("stopped at the most")]
    assert len(stops) == 1 and "(12)" in stops[0], result.actions
    verdict = result.verdict
    assert result.a.runs == result.b.runs == 12, result.summary()
    a, b = list(result.a.run_means), list(result.b.run_means)
    # at load one round can be an accident, set aside (CI-like load 12-30: A/B 4.16 once)
    pairs = enumerate(zip(a, b, strict=True))
    kept = [math.log(x / y) for k, (x, y) in pairs if k not in verdict.set_aside]
    spread, counted = pilot_spread(a[:6], b[:6])  # the first 6 pairs', as the stop used
    first = t_quantile(0.95, counted - 1) * spread / math.sqrt(len(kept))
    rounds = t_quantile(0.95, len(kept) - 1) * statistics.stdev(kept) / math.sqrt(len(kept))
    half = math.log(verdict.ci_high / verdict.ci_low) / 2
    # the offset between compares that no pair shows is added in squares (see the test above);
    # the first six pairs' floor, t(5) s0 / sqrt(n), ~1.4x the t interval of all twelve quiet
    # (or far more, the three slow rounds set aside), is not
    assert half == pytest.approx(math.hypot(rounds, systematic_half(SYSTEMATIC))), (
        half,
        first,
        rounds,
        kept,
    )
    assert verdict.pilot == 0
    # significant exactly when the interval excludes 1.0
    assert verdict.significant == (verdict.ci_low > 1.0), result.summary()


def heavy_tailed(rng: random.Random, sd: float) -> Callable[[], float]:
    """Draws of a pair's log ratio around 0: sd `sd`, a tenth of them 3x wider."""

    def draw() -> float:
        return rng.gauss(0, 3 * sd if rng.random() < 0.1 else sd)

    return draw


def test_the_rounds_the_first_rounds_call_for_hold_the_truth() -> None:
    """The protocol's two stages on seeded pairs (a pair's sd 0.03 and 0.04 in log, where
    +-2% is reached within 20 rounds by some compares and not others, heavy-tailed: a tenth of
    the pairs 3x wider), against stopping at the first narrow look. Pure arithmetic: nothing the
    machine's load changes."""

    def first_narrow_look(draw: Callable[[], float]) -> tuple[list[float], Verdict]:
        logs = [draw() for _ in range(6)]
        while True:
            verdict = compare_runs([math.exp(x) for x in logs], [1.0] * len(logs), paired=True)
            narrow = (verdict.ci_high - verdict.ci_low) / 2 / verdict.speedup <= 0.02
            if narrow or len(logs) >= 20:
                return logs, verdict
            logs += [draw(), draw()]

    def two_stages(draw: Callable[[], float]) -> tuple[list[float], Verdict]:
        logs = [draw() for _ in range(6)]
        ones = [1.0] * 6
        needed = pairs_needed([math.exp(x) for x in logs], ones, 0.02)
        logs += [draw() for _ in range(min(20, needed + needed % 2) - 6)]
        a = [math.exp(x) for x in logs]
        return logs, compare_runs(a, [1.0] * len(logs), paired=True, pilot=6)

    trials = 1000
    held: dict[str, int] = {}
    for name, rule in (("first narrow look", first_narrow_look), ("two stages", two_stages)):
        rng = random.Random(3)
        held[name] = 0
        for sd in (0.03, 0.04):
            for _ in range(trials):
                _, verdict = rule(heavy_tailed(rng, sd))
                held[name] += verdict.ci_low <= 1.0 <= verdict.ci_high
    # binomial sd at 95% of 2,000: 0.5%
    assert held["two stages"] >= 0.945 * 2 * trials, held
    assert held["first narrow look"] < held["two stages"], held


def test_an_offset_the_pairs_do_not_show_is_held_by_the_interval() -> None:
    """Each compare carries an offset its pairs do not show (stops 39-40, 83 compares: sd
    0.0068 in log beyond what their pairs gave, 0.0108 among those that stopped after 8 pairs
    or fewer). Seeded compares with such an offset (sd 0.007), a pair's sd 0.02 and 0.03,
    heavy-tailed, 20 rounds at most: the two stages alone hold the truth 1,098 times in 1,200
    (91.5%; a larger pilot does worse, bench/perf_stop_rules.py: more pairs, the same offset),
    with the term 1,175 (97.9%), so identical code is called significant no more often than
    the 95% says. Before, no term: 91.5%. Pure arithmetic, nothing the load changes."""

    def protocol(draw: Callable[[], float], systematic: float) -> Verdict:
        logs = [draw() for _ in range(6)]
        ones = [1.0] * 6
        needed = pairs_needed([math.exp(x) for x in logs], ones, 0.02, systematic=systematic)
        logs += [draw() for _ in range(min(20, needed + needed % 2) - 6)]
        a = [math.exp(x) for x in logs]
        return compare_runs(a, [1.0] * len(a), paired=True, pilot=6, systematic=systematic)

    trials = 600
    held = {0.0: 0, SYSTEMATIC: 0}
    for systematic in held:
        rng = random.Random(41)
        for sd in (0.02, 0.03):
            for _ in range(trials):
                offset = rng.gauss(0, 0.007)
                pairs = heavy_tailed(rng, sd)
                verdict = protocol(lambda o=offset, p=pairs: o + p(), systematic)
                held[systematic] += verdict.ci_low <= 1.0 <= verdict.ci_high
    # binomial sd at 95% of 1,200: 0.63%
    assert held[SYSTEMATIC] >= 0.95 * 2 * trials, held
    assert held[0.0] < 0.93 * 2 * trials, held


async def test_the_budget_stops_the_rounds_and_says_so(twox_repo: Path, tmp_path: Path) -> None:
    # At most 60 rounds by default: a fast machine (CI) did all 60 inside the budget. With no
    # practical limit on rounds and an interval that cannot narrow to +-0.0001%, only the budget
    # can stop them.
    settings = MeasureSettings(
        timer="cpu", min_time=0.01, min_rounds=2, max_rounds=100_000, precision=1e-6, budget=25
    )
    result = await measure(twox_repo, tmp_path, settings)
    # The stop is said among the actions; what was set aside, if anything, is said after it.
    stops = [action for action in result.actions if "stopped at the budget (25s)" in action]
    assert len(stops) == 1, result.actions
    assert "a larger --budget narrows it" in stops[0]
    assert result.environment["measure_seconds"] < 25 + 15
    # The budget set the rounds, not the first look's spread: the interval is the t interval
    # of all the rounds kept and the offset's part, with no floor from the first look (before
    # stop 43 the first 2 pairs' t(1) s0 / sqrt(n), t(1) = 12.7; see the test above).
    verdict = result.verdict
    a, b = list(result.a.run_means), list(result.b.run_means)
    logs = [
        math.log(x / y)
        for k, (x, y) in enumerate(zip(a, b, strict=True))
        if k not in verdict.set_aside
    ]
    rounds = t_quantile(0.95, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    half = math.log(verdict.ci_high / verdict.ci_low) / 2
    assert half == pytest.approx(math.hypot(rounds, systematic_half(SYSTEMATIC))), stops
    assert verdict.pilot == 0
    shown = float(stops[0].split("interval at +-")[1].split("%")[0]) / 100
    assert shown == pytest.approx(
        (verdict.ci_high - verdict.ci_low) / 2 / verdict.speedup, abs=6e-4
    )


async def test_noisy_elapsed_time_switches_to_cpu_time_and_says_so(
    twox_repo: Path, tmp_path: Path
) -> None:
    # busy_load high: the machine counts as quiet at the start, so `auto` begins with wall time
    settings = MeasureSettings(
        timer="auto", min_time=0.01, min_rounds=4, max_rounds=12, precision=0.05, busy_load=1e6
    )
    text = SLEEPY.format(log=str(tmp_path / "processes.log"))
    result = await measure(twox_repo, tmp_path, settings, text)
    assert result.actions[0].startswith("switched to CPU time after 4 rounds"), result.actions
    assert result.environment["timer"] == "cpu" and result.settings["timer"] == "cpu"
    # only the CPU-time rounds count: the elapsed-time runs are gone from both files, and the
    # verdict is on those files' runs. (A band on the ratio, B doing half of A's work, depends
    # on the machine: CI read 1.27 once, and run 38 1.315 for another fixture's true 2x.)
    for side, runs in (("a", result.a), ("b", result.b)):
        kept = pyperf.Benchmark.load(result.files[side])
        assert kept.get_metadata().get("reposim_timer") == "cpu", kept.get_metadata()
        means = [statistics.fmean(run.values) for run in kept.get_runs()]
        assert means == pytest.approx(list(runs.run_means)), (side, means, runs.run_means)
    assert result.verdict.speedup > 1, result.summary()
    assert "switched to CPU time" in result.summary()
    # the loops were calibrated again in CPU time: a value lasts min_time of CPU (at least
    # half of it, whatever the load), not the share of elapsed time the sleeps left to it
    assert "calibrated again in CPU time" in result.actions[0], result.actions
    for side in (result.a, result.b):
        assert side.loops * side.mean >= settings.min_time / 2, result.summary()


def test_a_sentence_when_the_t_test_and_the_interval_disagree() -> None:
    a = [0.932, 0.983, 0.958, 0.964, 1.036, 1.006]
    b = [1.079, 1.109, 1.107, 0.981, 1.077, 0.962]
    verdict = compare_runs(a, b, resamples=2000)
    assert not verdict.significant and verdict.t_significant is True
    assert verdict.ci_low < 1.0 < verdict.ci_high
    sentence = verdict.sentence()
    assert "the t-test on the runs' means finds a difference" in sentence
    assert "includes 1.0, so the two disagree" in sentence
    assert "measure longer (--budget)" in sentence
    # when they agree, no such sentence
    clear = compare_runs([2.0, 2.1, 1.9, 2.05], [1.0, 1.02, 0.98, 1.01], resamples=2000)
    assert clear.significant and clear.disagreement() is None
    # paired, the first rounds spread widely (they set how many ran), the later ones little:
    # the t-test of all rounds finds 1.05x, the interval floored by the first rounds' spread
    # includes 1.0, and the sentence says why
    a = [1.20, 0.90, 1.15, 0.95, *[1.05, 1.06, 1.04, 1.05] * 3]
    paired = compare_runs(a, [1.0] * len(a), paired=True, pilot=4)
    assert paired.t_significant and not paired.significant, paired
    assert paired.ci_low < 1.0 < paired.ci_high, paired
    assert "as wide as the first 4 pairs' spread gives" in paired.sentence()
    assert "so the two disagree" in paired.sentence()
    # the offset between compares alone can make them differ, and the sentence says so
    close = [1.011, 1.009, 1.010, 1.012, 1.008, 1.010]
    held = compare_runs(close, [1.0] * 6, paired=True, systematic=SYSTEMATIC)
    assert held.t_significant and not held.significant, held
    assert "it holds +-1.5% for an offset between compares that no pair shows" in held.sentence()


def test_the_interval_covers_the_truth_with_few_runs() -> None:
    # 8 runs per side with 5% noise, true speed-up 1.1: a plain percentile bootstrap covers the
    # truth ~88% of the time; the expanded interval keeps to the asked 95% (within sampling)
    rng = random.Random(7)
    covered = 0
    trials = 200
    for _ in range(trials):
        a = [1.1 * (1 + rng.gauss(0, 0.05)) for _ in range(8)]
        b = [1.0 * (1 + rng.gauss(0, 0.05)) for _ in range(8)]
        verdict = compare_runs(a, b, resamples=1000, seed=rng.randrange(1 << 30))
        covered += verdict.ci_low <= 1.1 <= verdict.ci_high
    assert covered >= 0.92 * trials, covered


def test_the_paired_interval_covers_the_truth_with_few_rounds() -> None:
    """Paired rounds (A and B of a round share the machine's speed, which drifts between
    rounds): with 4 pairs (`--quick`: 2 rounds of 2 workers) or the 6 a CPU-time restart
    often leaves, the expanded percentile bootstrap over rounds held the truth 87% and 93% of
    the time (simulated, 4,000 compares each), which is how 2 of 30 intervals missed on
    bench/perf_accuracy.py. The interval must keep to its 95%, and identical code must not
    be called significant more than 5% of the time. Pure arithmetic on seeded noise: no
    timing, nothing the machine's load changes."""
    rng = random.Random(5)
    trials = 600
    covered = {4: 0, 6: 0}
    false_positive = 0
    for n in covered:
        for _ in range(trials):
            drift = [rng.lognormvariate(0, 0.3) for _ in range(n)]
            a = [1.1 * d * rng.lognormvariate(0, 0.03) for d in drift]
            b = [d * rng.lognormvariate(0, 0.03) for d in drift]
            verdict = compare_runs(a, b, resamples=1000, paired=True, seed=rng.randrange(1 << 30))
            covered[n] += verdict.ci_low <= 1.1 <= verdict.ci_high
            same = [d * rng.lognormvariate(0, 0.03) for d in drift]
            identical = compare_runs(a, [x * 1.1 for x in same], resamples=1000, paired=True)
            false_positive += identical.significant
    # exact t coverage is 95% (binomial sd 0.9% at 600); the bootstrap gave ~87% at 4 pairs
    assert covered[4] >= 0.925 * trials and covered[6] >= 0.925 * trials, covered
    assert false_positive <= 0.075 * 2 * trials, false_positive


def test_one_run_inflated_by_the_machine_is_set_aside() -> None:
    """CI at load ~16: one CPU-time run of B took ~7x its others, and the ratio of the means
    made a true 2x 1.27x (0.79-1.83). The pair whose ratio is that far from the other rounds'
    is left out and named; ordinary noise, even heavy, sets nothing aside."""
    rng = random.Random(11)
    drift = [1 + 0.3 * rng.random() for _ in range(12)]  # the machine, alike for A and B
    a = [275e-6 * d * rng.gauss(1, 0.05) for d in drift]
    b = [137.5e-6 * d * rng.gauss(1, 0.05) for d in drift]
    b[6] *= 7
    verdict = compare_runs(a, b, resamples=2000, paired=True)
    assert verdict.set_aside == (6,)
    assert 1.8 < verdict.speedup < 2.2 and verdict.ci_low <= 2.0 <= verdict.ci_high, verdict
    trials, flagged = 200, 0
    for noise in (0.05, 0.25):
        for _ in range(trials // 2):
            a = [rng.lognormvariate(0, noise) for _ in range(12)]
            b = [rng.lognormvariate(0, noise) for _ in range(12)]
            flagged += bool(compare_runs(a, b, resamples=200, paired=True).set_aside)
    assert flagged <= 0.02 * trials, flagged


async def test_a_drift_shared_by_each_round_or_one_rounds_accident_does_not_hide_the_change(
    twox_repo: Path, tmp_path: Path
) -> None:
    """B is 2x faster; the machine's speed changes 9-fold between rounds but not within one.
    Compared in pairs (A and B of a round) the interval stays at 2x; compared as independent
    samples it spanned most of 0.5x-5x. One run of B is 7x slower still (round 2): it is set
    aside and said (kept, the interval was 0.55-2.34 at load ~70: not significant). Each timed
    process is started by the session's shell (not by a second Python, pyperf's spawner) and
    does not inherit the shell's variables."""
    log = tmp_path / "processes.log"
    # 8 rounds: 7 pairs once round 2 is set aside, |t| > 2.45 (6 rounds left 5, |t| > 2.78);
    # 6 pairs (|t| > 2.57) if the load makes one more accident
    settings = replace(PAIRED, rounds=8)
    result = await measure(twox_repo, tmp_path, settings, DRIFTING.format(log=str(log)))
    verdict = result.verdict
    assert verdict.significant, result.summary()
    # Within a round the machine is still noisy (CI saw 75-81% variation across runs): the
    # paired interval is narrower than the same runs compared as independent samples (0.5x-5x
    # once), whatever the machine adds to both. Where it lies is a rate (bench/
    # perf_accuracy.py, test_the_interval_covers_the_truth… above): a band on 7 pairs
    # depended on the machine (CI read 1.315 for a true 2x elsewhere, run 38).
    unpaired = compare_runs(list(result.a.run_means), list(result.b.run_means), paired=False)
    width = math.log(verdict.ci_high / verdict.ci_low)
    assert width < math.log(unpaired.ci_high / unpaired.ci_low), (result.summary(), unpaired)
    assert verdict.speedup > 1, result.summary()
    # Round 2's accident is set aside and said. The load may make one more (CI run 29, load 13:
    # round 8's A/B of 1.22 against the usual 2.01 was set aside too, and rightly): at most one.
    assert 1 in verdict.set_aside and len(verdict.set_aside) <= 2, result.summary()
    aside = len(verdict.set_aside)
    assert f"set aside {aside} of 8 paired runs as accidents of their round" in result.summary()
    assert "2 (A " in result.actions[-1], result.actions
    processes = [line.split("\t") for line in log.read_text().splitlines()]
    # 2 quickchecks, 2 calibrations, then one process per side and round
    assert len(processes) == 2 + 2 + 2 * 8, processes
    assert not [p for p in processes if "bench_worker.py" in p[2]], processes
    # the timed processes (after the two quickchecks, which run in the shell as it is)
    assert all(p[1] == "False" for p in processes[2:]), processes


async def test_each_timed_process_starts_from_a_heap_laid_out_at_random(
    twox_repo: Path, tmp_path: Path
) -> None:
    """The same harness in the same tree puts its objects at the same places in every process
    (modulo the page), so a layout that favours one side (its tree's path is longer, its code
    allocates a little more: a cache-set conflict, 4K aliasing) favoured every run of that side:
    a steady offset that no number of rounds averages out (Mytkowicz et al., "Producing wrong
    data without doing anything obviously wrong", 2009). Each timed process now starts from a
    heap shifted at random (setup randomization, as Stabilizer does), so the layout is one more
    thing that varies from run to run, which the interval sees."""
    log = tmp_path / "layout.log"
    settings = MeasureSettings(rounds=3, min_time=0.01, timer="cpu")
    await measure(twox_repo, tmp_path, settings, LAYOUT.format(log=str(log)))
    places = [int(line) for line in log.read_text().split()]
    # 2 quickchecks, 2 calibrations, 3 rounds of one process per side
    assert len(places) == 2 + 2 + 2 * 3, places
    # each side's three timed runs (started alike: the calibration's options differ), in
    # the rounds' order A B, B A, A B: not one place for all of a side's runs
    runs_a, runs_b = [places[k] for k in (4, 7, 8)], [places[k] for k in (5, 6, 9)]
    assert len(set(runs_a)) > 1 and len(set(runs_b)) > 1, places
