"""The adaptive protocol on real git repositories: rounds until the interval is narrow or the
budget is spent, what it did under noise, and a sentence when the two tests disagree."""

from __future__ import annotations

import random
from pathlib import Path

from simulator.perf import CompareRequest, MeasureSettings, compare
from simulator.perf.stats import compare_runs

HARNESS = """from fastlib.core import checksum

DATA = list(range(1500))


def bench():
    checksum(DATA)
"""
# Each worker process sleeps 0 or 3 ms per call, chosen once: elapsed time varies from run to
# run by far more than 10%, the CPU time of the call does not.
SLEEPY = """import random
import time

from fastlib.core import checksum

DATA = list(range(1500))
EXTRA = random.choice([0.0, 0.003])


def bench():
    checksum(DATA)
    time.sleep(EXTRA)
"""


def harness(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "harness.py"
    path.write_text(text)
    return path


async def test_rounds_go_on_until_the_interval_is_narrow_enough(
    twox_repo: Path, tmp_path: Path
) -> None:
    settings = MeasureSettings(
        timer="cpu", min_time=0.02, min_rounds=2, max_rounds=100, precision=0.10, budget=240
    )
    result = await compare(
        CompareRequest(
            twox_repo,
            "a",
            "b",
            api="fastlib.core.checksum",
            harness=harness(tmp_path, HARNESS),
            out_dir=tmp_path / "out",
            settings=settings,
        )
    )
    stop = result.actions[-1]
    assert "stopped after" in stop and "asked +-10%" in stop, result.actions
    half = (result.verdict.ci_high - result.verdict.ci_low) / 2 / result.verdict.speedup
    assert half <= 0.11, result.summary()
    assert result.a.runs == result.b.runs and result.a.runs % 2 == 0
    assert 2 <= result.a.runs < 100
    assert "protocol: " in result.summary()


async def test_the_budget_stops_the_rounds_and_says_so(twox_repo: Path, tmp_path: Path) -> None:
    settings = MeasureSettings(timer="cpu", min_time=0.01, min_rounds=2, precision=0.001, budget=25)
    result = await compare(
        CompareRequest(
            twox_repo,
            "a",
            "b",
            api="fastlib.core.checksum",
            harness=harness(tmp_path, HARNESS),
            out_dir=tmp_path / "out",
            settings=settings,
        )
    )
    assert "stopped at the budget (25s)" in result.actions[-1], result.actions
    assert "a larger --budget narrows it" in result.actions[-1]
    assert result.environment["measure_seconds"] < 25 + 15


async def test_noisy_elapsed_time_switches_to_cpu_time_and_says_so(
    twox_repo: Path, tmp_path: Path
) -> None:
    # busy_load high: the machine counts as quiet at the start, so `auto` begins with wall time
    settings = MeasureSettings(
        timer="auto", min_time=0.01, min_rounds=4, max_rounds=12, precision=0.05, busy_load=1e6
    )
    result = await compare(
        CompareRequest(
            twox_repo,
            "a",
            "b",
            api="fastlib.core.checksum",
            harness=harness(tmp_path, SLEEPY),
            out_dir=tmp_path / "out",
            settings=settings,
        )
    )
    assert result.actions[0].startswith("switched to CPU time after 4 rounds"), result.actions
    assert result.environment["timer"] == "cpu" and result.settings["timer"] == "cpu"
    # only the CPU-time rounds count: B does half of A's work
    assert 1.5 < result.verdict.speedup < 2.6, result.summary()
    assert "switched to CPU time" in result.summary()


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
