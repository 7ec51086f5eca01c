"""`perf compare` on real git repositories: traced harness, command, model-written harness."""

from __future__ import annotations

import asyncio
import json
import math
import sys
from pathlib import Path

import pyperf
import pytest

from simulator.events import Kind
from simulator.perf import CompareRequest, CompareResult, MeasureSettings, compare
from simulator.perf.compare import common_loops
from simulator.perf.environment import shared_tools
from simulator.trajectory import read_trajectory
from simulator.workflow import WorkflowFailure
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.conftest import RepoFactory
from tests.perf.conftest import (
    COUNTING,
    UNITTEST_TESTS,
    check_only_the_calls_timed,
    check_renamed_replay,
    checksum_request,
    core,
    counted,
    counted_tests,
    fastlib_at_a,
    renamed_test_repo,
    run_loops,
    write,
)

# CPU time: the machine running the tests is shared, and wall time there measures the others
QUICK = MeasureSettings.quick(timer="cpu")


def test_sides_within_2x_are_timed_at_the_larger_loops_and_further_apart_at_their_own() -> None:
    # stop 44: A at 64 loops a value, B at 128 called identical code 1.045x faster, significant
    assert common_loops({"A": 64, "B": 128}) == {"A": 128, "B": 128}
    assert common_loops({"A": 128, "B": 64}) == {"A": 128, "B": 128}
    assert common_loops({"A": 100, "B": 150}) == {"A": 150, "B": 150}
    assert common_loops({"A": 7, "B": 7}) == {"A": 7, "B": 7}
    # a B 500x slower: A's loops would make one value of B last about a minute
    assert common_loops({"A": 64, "B": 129}) == {"A": 64, "B": 129}
    assert common_loops({"A": 5000, "B": 10}) == {"A": 5000, "B": 10}
    assert common_loops({"A": 64}) == {"A": 64}


def workflow_steps(trajectory: Path) -> list[tuple[str, str]]:
    events = read_trajectory(trajectory).events
    return [
        (e.payload["step"], e.payload["status"]) for e in events if e.kind == Kind.WORKFLOW_STEP
    ]


async def test_compare_by_api_with_a_harness_traced_from_the_tests(
    twox_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    seen: list[str] = []
    result = await compare(
        checksum_request(twox_repo, out_dir=out, settings=QUICK),
        on_event=lambda e: seen.append(e.kind),
    )
    # the harness calls the tests that call checksum, not the unrelated or fixture-bound ones
    assert result.harness["kind"] == "traced"
    assert result.harness["tests"] == [
        "tests/test_core.py::test_checksum",
        "tests/test_core.py::test_describe",
    ]
    harness = (out / "harness.py").read_text()
    assert "def bench():" in harness and "test_with_a_fixture" not in harness
    # B does half of A's work: B is faster (how much is bench/perf_fixtures.py's "traced 2x";
    # a band on QUICK's 4 pairs depends on the machine: CI run 38 read 1.315 for a true 2x)
    assert result.verdict.speedup > 1, result.summary()
    assert result.verdict.ci_low < result.verdict.speedup < result.verdict.ci_high
    assert result.a.runs == result.b.runs == QUICK.runs
    # the runs are pyperf's own JSON, loadable by pyperf
    for side in ("a", "b"):
        bench = pyperf.Benchmark.load(result.files[side])
        assert bench.get_nrun() >= QUICK.runs
    # each side is calibrated
    calibrated = {
        side: int(
            pyperf.Benchmark.load(result.files[f"calibration_{side}"]).get_metadata()["loops"]
        )
        for side in ("a", "b")
    }
    # within 2x of each other, both sides take the larger: a value of more loops lies later in
    # its process, which is still getting faster, and unequal loops tilted identical code 4%
    low, high = sorted(calibrated.values())
    if high <= 2 * low:
        assert result.a.loops == result.b.loops == high, (calibrated, result.a.loops)
        # and where the calibrations differed, the compare says it made them equal
        said = [a for a in result.actions if a.startswith(f"timed both sides at {high} loops")]
        assert len(said) == (1 if low < high else 0), (calibrated, result.actions)
    else:
        assert (result.a.loops, result.b.loops) == (calibrated["a"], calibrated["b"])
    assert result.commit_a != result.commit_b
    env = result.environment
    assert env["cpu_count"] >= 1 and env["python"] and env["load_avg"]["samples"] >= 3
    assert env["revisions"]["b"]["commit"] == result.commit_b
    assert "isolat" in env["isolation"]
    # both environments are recorded sessions with the workflow's typed events
    for side in ("a", "b"):
        steps = workflow_steps(Path(result.files[f"trajectory_{side}"]))
        assert ("checkout", "ok") in steps and ("quickcheck", "ok") in steps
        assert sum(1 for s in steps if s == ("measure", "ok")) == QUICK.rounds
    assert Kind.WORKFLOW_RESULT in seen and Kind.WORKFLOW_END in seen
    assert (out / "result.json").is_file()
    # pyperf and the worker come from one shared tools directory, not a copy per output
    assert not (out / "tools").exists()
    assert sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) < 400_000
    # and pyperf there is RepoSim's own, imported, not a copy of it (596 KB per version)
    linked = shared_tools() / "pyperf"
    assert linked.is_symlink()
    assert linked.resolve() == Path(pyperf.__file__).resolve().parent
    assert pyperf.Benchmark.load(result.files["a"]).get_metadata()["perf_version"] == (
        pyperf.__version__
    )
    # the user's repository is untouched: still at b, no worktree left behind
    assert (twox_repo / "fastlib/core.py").read_text().count("range(1)") == 1


async def test_compare_by_command(twox_repo: Path, tmp_path: Path) -> None:
    # enough work per command (~0.4 s at A) that the interpreter's start-up does not hide it
    settings = MeasureSettings(
        rounds=2, processes=2, values=2, warmups=1, min_time=0.01, timer="cpu"
    )
    command = f"{sys.executable} -c 'from fastlib.core import checksum; checksum(range(400000))'"
    result = await compare(
        CompareRequest(twox_repo, "a", "b", command=command, out_dir=tmp_path, settings=settings)
    )
    assert result.kind == "command" and result.harness["path"] is None
    # B is faster (interpreter start-up, the same on both sides, keeps the ratio below 2; how
    # far is bench/perf_fixtures.py's question, "command 10%")
    assert result.verdict.speedup > 1, result.summary()
    assert pyperf.Benchmark.load(result.files["b"]).get_nrun() >= settings.runs


async def test_a_model_harness_broken_at_one_revision_is_repaired(
    twox_repo: Path, tmp_path: Path
) -> None:
    broken = (
        "from fastlib.core import checksums\n\nCHUNKS = [list(range(500))] * 4\n\n\n"
        "def bench():\n    checksums(CHUNKS)\n"
    )
    fixed = (
        "from fastlib.core import checksum\n\nCHUNKS = [list(range(500))] * 4\n\n\n"
        "def bench():\n    for chunk in CHUNKS:\n        checksum(chunk)\n"
    )
    server = FakeLLM(
        [
            Reply("A harness.", [call("write_harness", code=broken)]),
            Reply("Only checksum exists at both revisions.", [call("write_harness", code=fixed)]),
        ]
    ).start()
    try:
        result = await compare(
            checksum_request(
                twox_repo,
                model="openai/fake-model",
                api_base=server.api_base,
                api_key="sk-test",
                out_dir=tmp_path,
                settings=MeasureSettings(
                    rounds=1, processes=2, values=2, min_time=0.01, timer="cpu"
                ),
            )
        )
    finally:
        server.close()
    assert (tmp_path / "harness.py").read_text() == fixed
    assert result.harness["kind"] == "model" and result.harness["rounds"] == 2
    assert result.harness["tokens"] == 240
    # the model saw the sliced context, then the error at revision A as its tool's answer
    first = server.requests[0]["messages"][1]["content"]
    assert "def checksum(data):" in first
    repair = server.requests[1]["messages"][-1]
    assert repair["role"] == "tool"
    assert "revision A" in repair["content"] and "ImportError" in repair["content"]
    steps_a = workflow_steps(Path(result.files["trajectory_a"]))
    assert [s for s in steps_a if s[0] == "quickcheck" and s[1] != "running"] == [
        ("quickcheck", "failed"),
        ("quickcheck", "ok"),
    ]
    assert result.verdict.speedup > 1, result.summary()


async def test_the_traced_harness_times_the_call_not_the_test_around_it(
    diluted_repo: Path, tmp_path: Path
) -> None:
    # the test costs 10x the call; B is 2x slower in the call only: the true ratio is 0.5,
    # the whole test's 11/12 = 0.917
    result = await compare(
        CompareRequest(
            diluted_repo, "a", "b", api="slowlib.core.target", out_dir=tmp_path, settings=QUICK
        )
    )
    assert result.harness["kind"] == "traced"
    # what the workers timed, counted: the call alone, not the test around it. The ratio
    # (0.5, against the whole test's 0.917) is bench/perf_fixtures.py's "test 10x call": a
    # band on 8 pairs depends on the machine (CI run 38 read 1.315 for another fixture's 2x)
    check_only_the_calls_timed(result, tmp_path / "counts.jsonl")
    assert "1 call(s) of slowlib.core.target captured" in result.harness["timed"]
    assert "timed: 1 call(s)" in result.summary()


async def test_a_command_that_fails_at_one_revision_shows_its_output_before_any_timing(
    twox_repo: Path, tmp_path: Path
) -> None:
    # checksums exists at B only: at A the command fails at once
    command = f"{sys.executable} -c 'from fastlib.core import checksums'"
    with pytest.raises(WorkflowFailure) as failure:
        await compare(
            CompareRequest(twox_repo, "a", "b", command=command, out_dir=tmp_path, settings=QUICK)
        )
    message = str(failure.value)
    assert message.startswith("The command exits with status 1 at A (a) in ")
    assert "ImportError: cannot import name 'checksums'" in message
    steps = workflow_steps(tmp_path / "trajectory-a.jsonl")
    assert ("quickcheck", "failed") in steps
    assert not any(step in ("calibrate", "measure") for step, _ in steps), steps


async def test_a_command_runs_where_cwd_says_inside_the_checkout(
    twox_repo: Path, tmp_path: Path
) -> None:
    # from the package's folder `core.py` is there, from the root (the default) it is not
    command = f"{sys.executable} -c 'import core; core.checksum(range(20000))'"
    settings = MeasureSettings(rounds=2, processes=1, values=2, min_time=0.01, timer="cpu")
    result = await compare(
        CompareRequest(
            twox_repo,
            "a",
            "b",
            command=command,
            cwd="fastlib",
            out_dir=tmp_path / "in-package",
            settings=settings,
        )
    )
    # 2 rounds of one worker timing the command twice: each run of the command counts
    assert result.a.runs == result.b.runs == 4
    with pytest.raises(WorkflowFailure, match="No module named 'core'"):
        await compare(
            CompareRequest(
                twox_repo, "a", "b", command=command, out_dir=tmp_path / "root", settings=settings
            )
        )


async def test_a_command_alternates_its_sides_run_by_run_as_a_by_hand_abba(
    twox_repo: Path, tmp_path: Path
) -> None:
    # Each run of the command notes the revision that ran it. The runs compared in pairs must
    # be neighbours in time, as in a by-hand A B B A: before, a worker per side timed the
    # command k times in a row (A A B B | B B A A), so the k-th A and the k-th B were k runs
    # apart and a drift of the machine in between widened the interval (ours needed about
    # twice a by-hand ABBA's runs for the same width).
    log = tmp_path / "order.log"
    command = f"git rev-parse HEAD >> {log}; sleep 0.25"
    settings = MeasureSettings(rounds=2, values=2, timer="wall")
    result = await compare(
        CompareRequest(
            twox_repo, "a", "b", command=command, out_dir=tmp_path / "out", settings=settings
        )
    )
    side = {result.commit_a: "A", result.commit_b: "B"}
    order = "".join(side[line] for line in log.read_text().split())
    # the quickcheck at each side, then round 1: A B B A, round 2: B A A B
    assert order == "AB" + "ABBA" + "BAAB", order
    steps = workflow_steps(tmp_path / "out/trajectory-a.jsonl")
    assert ("calibrate", "ok") in steps
    assert not Path(result.files["calibration_a"]).exists()
    for name in ("a", "b"):
        runs = pyperf.Benchmark.load(result.files[name]).get_runs()
        # one run of the command per pyperf run, in the order they ran
        assert [len(run.values) for run in runs] == [1, 1, 1, 1]
        assert all(run.get_loops() == 1 for run in runs)
        # one `sleep 0.25` each, never less (the load may stretch it)
        assert all(0.24 < run.values[0] < 30 for run in runs)
    assert result.a.runs == result.b.runs == 4
    # both files are pyperf's: its own compare reads them, and the benchmark is the command
    assert all(
        "git rev-parse HEAD" in pyperf.Benchmark.load(result.files[name]).get_name()
        for name in ("a", "b")
    )
    compare_to = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pyperf",
        "compare_to",
        "-v",
        result.files["a"],
        result.files["b"],
        stdout=asyncio.subprocess.PIPE,
    )
    shown = (await compare_to.communicate())[0].decode()
    # -v: both sides' means and pyperf's verdict, whichever it is. Without it pyperf names a
    # single benchmark only when it finds no difference; at load 12-18 the 4 wall-clock runs
    # of `sleep 0.25` a side can differ by chance, and then it printed only "[a] ... -> [b]
    # ...: 1.35x slower" (the lead's fresh-clone run 13 failed on the name)
    assert compare_to.returncode == 0, shown
    assert "Mean +- std dev: [a] " in shown and " -> [b] " in shown, shown
    assert "Significant (t=" in shown or "Not significant!" in shown, shown


async def test_a_short_command_is_not_calibrated_and_a_round_holds_about_3_s_of_its_runs(
    twox_repo: Path, tmp_path: Path
) -> None:
    # A command of ~0.5 s: no calibration (the quickcheck showed one run per value), and a
    # round times about 3 s of runs per side (6 of 0.5 s), in A B B A blocks, one run per
    # pyperf run. The count follows the slower side's quickcheck, which the load stretches
    # (a quickcheck of 1.6 s makes it 2 runs a round), so it is checked against that one.
    command = "sleep 0.5"
    settings = MeasureSettings(rounds=2, processes=1, timer="wall")
    result = await compare(
        CompareRequest(twox_repo, "a", "b", command=command, out_dir=tmp_path, settings=settings)
    )
    steps = workflow_steps(tmp_path / "trajectory-a.jsonl")
    assert ("calibrate", "ok") in steps
    assert not Path(result.files["calibration_a"]).exists()
    quickcheck = max(
        float(e.payload["detail"]["command_seconds"])
        for side in ("a", "b")
        for e in read_trajectory(tmp_path / f"trajectory-{side}.jsonl").events
        if e.kind == Kind.WORKFLOW_STEP
        and e.payload["step"] == "quickcheck"
        and e.payload["status"] == "ok"
    )
    per_round = 2 * math.ceil(max(2, min(10, math.ceil(3.0 / quickcheck))) / 2)
    for side in ("a", "b"):
        runs = pyperf.Benchmark.load(result.files[side]).get_runs()
        assert len(runs) == 2 * per_round, (len(runs), quickcheck)
        assert all(len(run.values) == 1 and run.get_loops() == 1 for run in runs)
        # the value is one `sleep 0.5`'s elapsed time, never less; the load may stretch it
        assert all(0.49 < run.values[0] < 30 for run in runs)
    assert result.a.runs == result.b.runs == len(runs)


async def test_collection_errors_are_named_as_such(
    uncollectable_repo: Path, tmp_path: Path
) -> None:
    with pytest.raises(WorkflowFailure) as failure:
        await compare(
            checksum_request(
                uncollectable_repo,
                out_dir=tmp_path,
                settings=QUICK,
            )
        )
    message = str(failure.value)
    assert message.startswith("The tests could not be collected at A (a): 2 test file(s)")
    assert "tests/test_core.py" in message and "No test of the repository" not in message


async def choose_and_measure_once(repo: Path, out_dir: Path) -> CompareResult:
    """`perf compare` of a and b with one round of measuring: for the tests the traced harness
    chooses and what the result says of them, not for the timing."""
    once = MeasureSettings(rounds=1, processes=2, min_time=0.01, timer="cpu")
    return await compare(checksum_request(repo, out_dir=out_dir, settings=once))


async def test_a_change_the_tests_do_not_reach_is_said(
    unreached_repo: Path, tmp_path: Path
) -> None:
    result = await choose_and_measure_once(unreached_repo, tmp_path)
    assert result.harness["changed_lines"] == 1
    assert result.harness["reaches_change"] is False
    assert "change not reached: the chosen tests execute none of the 1 line(s)" in (
        result.summary()
    )


async def test_the_tests_that_reach_the_change_are_chosen_first(
    twox_repo: Path, tmp_path: Path
) -> None:
    result = await choose_and_measure_once(twox_repo, tmp_path)
    assert result.harness["reaches_change"] is True and result.harness["changed_lines"] >= 1
    trace = json.loads((tmp_path / "trace-b.json").read_text())
    reached = {t["nodeid"]: t["reached"] for t in trace["tests"]}
    assert reached["tests/test_core.py::test_checksum"] >= 1
    assert reached["tests/test_core.py::test_unrelated"] == 0


async def test_tests_that_call_the_api_only_with_fixtures_are_named_as_such(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """The failure said "No test of the repository calls X", which was false."""
    fixture_tests = (
        "from fastlib.core import checksum\n\n\n"
        "def test_checksum(tmp_path):\n"
        "    assert checksum([1]) == 1\n"
    )
    repo = fastlib_at_a(make_repo, {"tests/test_core.py": fixture_tests}, name="fixtured")
    write(repo, {"fastlib/core.py": core(1)}, "Compute the checksum once")
    with pytest.raises(WorkflowFailure, match=r"1 test\(s\) call fastlib.core.checksum, but each"):
        await compare(
            checksum_request(
                repo,
                b="HEAD",
                out_dir=tmp_path / "out",
                settings=QUICK,
            )
        )


# A real history (more-itertools): every test calling the optimised functions is a
# unittest.TestCase method. Here the test's setUp does 10 passes of work of its own and the
# call 2 passes at A, 1 at B: the call is 2x faster, the whole test 12/11 = 1.09x.


async def test_a_unittest_method_calling_the_api_is_replayed_and_only_its_calls_timed(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """What the workers timed is read from what they did, counted (check_only_the_calls_timed):
    each ran the test once, at import, to capture the call, then one call of checksum per loop.
    The ratio this gives is bench/perf_fixtures.py's ("test 10x call"): a band on QUICK's 4
    pairs here read 1.315 for the 2x call in CI run 38 (three pairs near 1.33, beside setup's
    container tests compiling C)."""
    log = tmp_path / "counts.jsonl"
    repo = fastlib_at_a(
        make_repo,
        {
            "tests/__init__.py": "",
            "tests/test_core.py": counted_tests(UNITTEST_TESTS, "fastlib.core"),
        },
        name="unittested",
        core=counted(core(2), "checksum", log, "A"),
    )
    write(repo, {"fastlib/core.py": counted(core(1), "checksum", log, "B")}, "One pass")
    result = await compare(checksum_request(repo, "HEAD", out_dir=tmp_path, settings=QUICK))
    assert result.harness["tests"] == ["tests/test_core.py::ChecksumTests::test_checksum"]
    assert "1 call(s) of fastlib.core.checksum captured" in result.harness["timed"]
    check_only_the_calls_timed(result, log)


ARGUMENT_KINDS_TESTS = """from fastlib.core import checksum

DATA = list(range(3000))


def test_checksum_of_each_kind():
    checksum(tuple(DATA))  # immutable: replayed as it is, no copy per loop
    checksum(list(DATA))  # mutable: a fresh copy per loop, outside the timing
    checksum(x for x in DATA)  # a generator: cannot be copied, used up after one call
"""


async def test_captured_calls_copy_only_what_a_call_could_change(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """A call replayed with a generator it used up in the first loop times next to nothing (it
    was kept, its arguments shared); immutable arguments were deep-copied per loop for nothing
    (on more-itertools 20x the cost of the calls, 40 s of calibration)."""
    repo = fastlib_at_a(make_repo, {"tests/test_core.py": ARGUMENT_KINDS_TESTS}, name="kinds")
    write(repo, {"fastlib/core.py": core(1)}, "Compute the checksum once")
    result = await compare(checksum_request(repo, "HEAD", out_dir=tmp_path, settings=QUICK))
    # the list is mutable, but checksum leaves it as it was: reused too, not copied per loop
    assert result.harness["timed"] == (
        "2 call(s) of fastlib.core.checksum captured from 1 test(s); 1 call(s) left out: their "
        "arguments (iterators, generators) could not be copied"
    )
    # (no ", the arguments of N copied outside the timed region" above: copied per loop, the
    # calls' 2x drowned in the copies, near 1x; 1.46x (CI 1.37-1.55) was measured at load ~3
    # once the loops were calibrated in CPU time, 66d6a0e). A band on QUICK's 4 pairs depends
    # on the machine (CI run 38 read 1.315 for a true 2x): B is faster, that is all asked here
    assert result.verdict.speedup > 1, result.summary()


async def test_calls_of_tests_renamed_between_the_revisions_are_captured_at_one_and_replayed(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """more-itertools 10.4.0 split SlidingWindowTests.test_basic into test_islice_version and
    others: no test called sliding_window under one name at both revisions, and mining said
    'No test of the repository calls ...'."""
    log = tmp_path / "counts.jsonl"
    repo = renamed_test_repo(make_repo, log)
    result = await compare(checksum_request(repo, "HEAD", out_dir=tmp_path / "out", settings=QUICK))
    check_renamed_replay(result, log)


GENERATOR_CORE = '''def scaled(data):
    """Each item's checksum-like value: {passes} pass(es) of work per item."""
    for x in data:
        total = 0
        for _ in range({passes}):
            total = 0
            for y in range(200):
                total = (total * 31 + x + y) % 1000003
        yield total
'''
GENERATOR_TESTS = """import unittest

from fastlib.core import scaled


class ScaledTests(unittest.TestCase):
    def test_all(self):
        self.assertEqual(len(list(scaled(range(300)))), 300)

    def test_first_only(self):
        self.assertGreaterEqual(next(scaled(range(10**9))), 0)

    def test_not_a_sequence(self):
        with self.assertRaises(TypeError):
            list(scaled(None))
"""


async def test_a_generator_api_is_timed_as_the_tests_iterate_it(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """more-itertools' collapse is a generator function: the replay called it, which only made
    a generator (the work happens as it is iterated), and each next() of the test counted as a
    call of its own. Here A does 2 passes per item, B 1: 2x as the tests iterate it."""
    log = tmp_path / "counts.jsonl"

    def code(passes: int, side: str) -> str:
        """GENERATOR_CORE counting the items it makes (COUNTS["api"])."""
        items = GENERATOR_CORE.format(passes=passes).replace(
            "    for x in data:\n", '    for x in data:\n        COUNTS["api"] += 1\n'
        )
        return items + COUNTING.format(log=str(log), side=side)

    repo = fastlib_at_a(
        make_repo,
        {
            "tests/__init__.py": "",
            "tests/test_core.py": GENERATOR_TESTS,
        },
        name="generators",
        core=code(2, "A"),
    )
    write(repo, {"fastlib/core.py": code(1, "B")}, "One pass per item")
    result = await compare(
        CompareRequest(
            repo, "a", "HEAD", api="fastlib.core.scaled", out_dir=tmp_path / "out", settings=QUICK
        )
    )
    # two calls (one per test), not one per item taken; the endless one replayed for 1 item;
    # the call the test expects to raise is left out (replayed, it stopped the harness)
    assert result.harness["timed"] == (
        "2 call(s) of fastlib.core.scaled captured from 3 test(s); 1 call(s) left out: they "
        "raise (as their tests expect)"
    ), result.harness
    # each loop a worker timed made the items the tests took (300 + 1), counted: a replay that
    # only made the generators made none. (Its groups, timed after, make more.) The ratio is
    # the bench's question: a band on 8 pairs depends on the machine (CI run 38: 1.315 for 2x)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for side in ("a", "b"):
        timing = [
            w["api"]
            for w in lines
            if w["side"] == side.upper()
            and "--worker" in w["argv"]
            and "--calibrate-loops" not in w["argv"]
        ]
        loops = run_loops(result.files[side])
        assert len(timing) == len(loops) > 0, (side, timing, loops)
        assert min(timing) >= 301 * max(loops), (side, timing, loops)
    assert result.verdict.speedup > 1, result.summary()
