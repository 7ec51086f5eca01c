"""Fixture repositories for the perf workflow: histories with a known speed-up by construction."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyperf
import pytest

from simulator.perf import CompareRequest, CompareResult, MeasureSettings
from tests.conftest import RepoFactory, git

# For the tests that ask whether a true 2x is significant: 8 pairs of runs (8 rounds of one
# worker per side) give the paired t-test 7 degrees of freedom (|t| > 2.36), where QUICK's 4
# pairs gave 3 (|t| > 3.18). At load ~13 here the rounds' log ratios of a true 2x spread with
# sd ~0.2 (pairs from 0.33 to 1.0 in log); 4 pairs stay significant while that sd is under
# 0.43, 8 pairs while it is under 0.83 (0.66 with two pairs set aside), and their mean keeps to
# +-0.2 of the truth at sd 0.3 (3 standard errors). A pair costs two worker processes (~0.7 s
# at load 13, ~0.2 s quiet).
PAIRED = MeasureSettings(rounds=8, processes=1, values=3, warmups=1, min_time=0.01, timer="cpu")


# `checksum` does its pass over the data `passes` times: version A twice, version B once. B does
# exactly half of A's work, so it is 2x faster by construction.
PASSES = """(data):
    total = 0
    for _ in range({passes}):
        total = 0
        for x in data:
            total = (total * 31 + x) % 1000003
    return total
"""
"""What follows a function's name: it takes `data` and does its checksum pass `{passes}` times
(a .format template)."""

CORE = (
    '"""A checksum that version A computes twice, for no reason."""\n\n\n'
    + "def checksum"
    + PASSES
    + '\n\ndef describe(data):\n    return f"{{len(data)}} items, checksum {{checksum(data)}}"\n'
)

TESTS = """from fastlib.core import checksum, describe

DATA = list(range({size}))


def test_checksum():
    assert checksum(DATA) == checksum(list(DATA))


def test_describe():
    assert describe([1, 2]).startswith("2 items")


def test_unrelated():
    assert sorted([3, 1, 2]) == [1, 2, 3]


def test_with_a_fixture(tmp_path):
    assert checksum([1]) == 1
"""


# B also adds a helper that A lacks: a harness that uses it breaks at A only.
HELPER_ONLY_IN_B = """

def checksums(chunks):
    return [checksum(chunk) for chunk in chunks]
"""


# unittest-style tests whose setUp costs 10x the call of checksum they check
UNITTEST_TESTS = """import unittest

from fastlib.core import checksum


def spin(data):
    total = 0
    for x in data:
        total = (total * 31 + x) % 1000003
    return total


class ChecksumTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = list(range(4000))

    def setUp(self):
        for _ in range(10):
            spin(self.base)
        self.data = list(self.base)

    def test_checksum(self):
        self.assertEqual(checksum(self.data), spin(self.data))
        self.addCleanup(self.data.clear)
"""


# Counted work: every process that imports a counted module writes, at its exit, one JSON line
# to a log: its command line, the revision (`side`), its calls of the API and of the test's own
# work (`spin`). What a worker timed is then read from what it did, not from how long it took
# (a speed-up band on a few pairs broke on a busy machine: CI run 38 read 1.315 for a true 2x).
COUNTING = """

COUNTS = {{"api": 0, "spin": 0}}


def _write_counts():
    import json, os, sys

    line = {{"pid": os.getpid(), "argv": sys.argv, "side": {side!r}, **COUNTS}}
    with open({log!r}, "a") as log:
        log.write(json.dumps(line) + "\\n")


__import__("atexit").register(_write_counts)
"""
SPINS_PER_TEST = 11  # setUp's (or the test's) 10 passes of spin first, and the test's own check
"""How many times one run of a counted test calls spin (UNITTEST_TESTS, DILUTED_TESTS)."""


def counted(source: str, function: str, log: Path, side: str) -> str:
    """A module's `source` whose `function` counts its calls, with COUNTING's log at exit."""
    head = f"def {function}(data):\n"
    assert head in source, function
    return source.replace(head, head + '    COUNTS["api"] += 1\n') + COUNTING.format(
        log=str(log), side=side
    )


def counted_tests(tests: str, module: str) -> str:
    """Test text whose spin counts its calls in `module`'s COUNTS (a counted module)."""
    head = "def spin(data):\n"
    assert head in tests
    return tests.replace(head, f"from {module} import COUNTS\n\n\n" + head).replace(
        head, head + '    COUNTS["spin"] += 1\n'
    )


def check_only_the_calls_timed(
    result: CompareResult, log: Path, spins: tuple[int, ...] = (SPINS_PER_TEST,)
) -> None:
    """Every pyperf worker of each side (A, B: the `side` of the counted code) ran the test
    around the call as many times as `spins` allows (once, at import, to capture the call; 0
    where captured calls were loaded from a file), never per loop; and each loop pyperf kept
    was one call of the API: a worker's calls less its run's loops (warm-ups included) are the
    same 1-3 in every worker (the capture and its replay), none per loop. Timed whole, the
    test would have run once per loop. Which ratio that gives is the bench's question."""
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    workers = [line for line in lines if "--worker" in line["argv"]]
    for side in ("a", "b"):
        mine = [w for w in workers if w["side"] == side.upper()]
        assert mine and all(w["spin"] in spins for w in mine), (side, mine)
        timing = [w for w in mine if "--calibrate-loops" not in w["argv"]]
        loops = run_loops(result.files[side])
        assert len(timing) == len(loops) > 0, (side, mine, loops)
        outside = {w["api"] - n for w, n in zip(timing, loops, strict=True)}
        assert len(outside) == 1 and 0 < min(outside) <= 3, (side, mine, loops)


def run_loops(path: str) -> list[int]:
    """How many loops each run of a pyperf file timed, warm-ups included."""
    return [
        sum(loops for loops, _value in run.warmups) + run.get_loops() * len(run.values)
        for run in pyperf.Benchmark.load(path).get_runs()
    ]


HarnessRequest = Callable[..., CompareRequest]


@pytest.fixture
def harness_request(tmp_path: Path) -> HarnessRequest:
    """Requests as a user makes them with `--harness`: `(repo, out, **options)` compares
    fastlib.core.checksum at a and b (checksum_request) with a harness file whose bench()
    checksums 2,000 numbers, the results in tmp_path/`out`."""
    harness = tmp_path / "harness.py"
    harness.write_text(
        "from fastlib.core import checksum\n\nDATA = list(range(2000))\n\n\n"
        "def bench():\n    checksum(DATA)\n"
    )

    def request(repo: Path, out: str, **options: Any) -> CompareRequest:
        return checksum_request(repo, harness=harness, out_dir=tmp_path / out, **options)

    return request


def checksum_request(repo: Path, b: str = "b", **options: Any) -> CompareRequest:
    """The fixtures' comparison: fastlib.core.checksum at tag a against revision `b`."""
    return CompareRequest(repo, "a", b, api="fastlib.core.checksum", **options)


def core(passes: int) -> str:
    return CORE.format(passes=passes)


def write(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, content in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def fastlib_at_a(
    make_repo: RepoFactory, files: dict[str, str], *, name: str, core: str = core(2)
) -> Path:
    """A repository `name` of package fastlib (its checksum doing two passes, unless `core`
    says otherwise) and `files`, committed and tagged a."""
    repo = make_repo({"fastlib/__init__.py": "", "fastlib/core.py": core, **files}, name=name)
    git(repo, "tag", "a")
    return repo


@pytest.fixture
def twox_repo(make_repo: RepoFactory) -> Path:
    """Two commits: HEAD~1 does the checksum twice, HEAD once (tag a, tag b)."""
    repo = fastlib_at_a(make_repo, {"tests/test_core.py": TESTS.format(size=3000)}, name="fastlib")
    write(
        repo,
        {"fastlib/core.py": core(1) + HELPER_ONLY_IN_B},
        "Compute the checksum once instead of twice",
    )
    git(repo, "tag", "b")
    return repo


DESCRIBE_A = 'return f"{len(data)} items, checksum {checksum(data)}"'
DESCRIBE_B = 'return "{} items, checksum {}".format(len(data), checksum(data))'


@pytest.fixture
def mining_repo(make_repo: RepoFactory) -> tuple[Path, dict[str, str]]:
    """A history with one real speed-up and one commit that only says it is faster."""
    repo = make_repo(
        {
            "fastlib/__init__.py": "",
            "fastlib/core.py": core(2),
            "tests/test_core.py": TESTS.format(size=3000),
        },
        name="history",
    )
    commits = {"initial": git(repo, "rev-parse", "HEAD").strip()}
    commits["real"] = write(
        repo, {"fastlib/core.py": core(1)}, "Compute the checksum once instead of twice"
    )
    noise = core(1).replace(DESCRIBE_A, DESCRIBE_B)
    assert noise != core(1)
    commits["noise"] = write(repo, {"fastlib/core.py": noise}, "Make describe faster")
    commits["docs"] = write(repo, {"README.md": "fastlib\n"}, "Speed up the README")
    return repo, commits


@pytest.fixture(autouse=True)
def private_perf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's revision trees and environments go under its own tmp_path."""
    data = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    return data / "reposim" / "perf"


# Revision A's code needs a helper package that only A's requirements.txt installs (a path
# inside A's tree); HEAD dropped both. Setup must read A's own tree to make A's environment.
HELPER_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "perfhelper"
version = "1.0"
"""
CORE_WITH_HELPER = "import perfhelper\n\n" + CORE
TEST_DATA_IMPORTS = "import shadok\nimport mymodule\nimport six\nfrom requests import get\n"
TEST_DATA_NAMES = ("shadok", "mymodule", "six", "requests")


@pytest.fixture
def own_requirements_repo(make_repo: RepoFactory) -> Path:
    repo = make_repo(
        {
            "fastlib/__init__.py": "",
            "fastlib/core.py": CORE_WITH_HELPER.format(passes=2),
            "requirements.txt": "./vendor/perfhelper\n",
            "vendor/perfhelper/pyproject.toml": HELPER_PYPROJECT,
            "vendor/perfhelper/perfhelper/__init__.py": "VERSION = 1\n",
            "tests/test_core.py": TESTS.format(size=300),
            # test data that imports what no revision needs (a linter's inputs do this on
            # purpose): real index names among made-up ones; setup must install none of them
            "tests/data/made_up_imports.py": TEST_DATA_IMPORTS,
        },
        name="ownreqs",
    )
    git(repo, "tag", "a")
    git(repo, "rm", "-q", "-r", "requirements.txt", "vendor")
    write(repo, {"fastlib/core.py": core(1)}, "No helper any more, and one pass")
    git(repo, "tag", "b")
    return repo


# The test around the call does 10 units of work of its own; the call does 1 unit at A and 2 at
# B: B is 2x slower in the call only (speed-up 0.5), while the whole test is 11 vs 12 (0.917).
DILUTED_CORE = "def target" + PASSES
DILUTED_TESTS = """from slowlib.core import target

DATA = list(range(4000))


def spin(data):
    total = 0
    for x in data:
        total = (total * 31 + x) % 1000003
    return total


def test_target_inside_a_costly_test():
    for _ in range(10):
        spin(DATA)
    assert target(list(DATA)) == spin(DATA)
"""


@pytest.fixture
def diluted_repo(make_repo: RepoFactory, tmp_path: Path) -> Path:
    """DILUTED_CORE and DILUTED_TESTS, their work counted to tmp_path/counts.jsonl."""
    log = tmp_path / "counts.jsonl"
    repo = make_repo(
        {
            "slowlib/__init__.py": "",
            "slowlib/core.py": counted(DILUTED_CORE.format(passes=1), "target", log, "A"),
            "tests/test_core.py": counted_tests(DILUTED_TESTS, "slowlib.core"),
        },
        name="slowlib",
    )
    git(repo, "tag", "a")
    b_code = counted(DILUTED_CORE.format(passes=2), "target", log, "B")
    write(repo, {"slowlib/core.py": b_code}, "Two passes: 2x slower")
    git(repo, "tag", "b")
    return repo


# Only inputs of a million items take the branch; B changes what it returns: the tests never
# execute the one changed line.
def _huge(result: str) -> str:
    return CORE.format(passes=1).replace(
        "def checksum(data):\n",
        f"def checksum(data):\n    if len(data) > 10**6:\n        return {result}\n",
    )


UNREACHED_A = _huge("checksum(list(data)[:10])")
UNREACHED_B = _huge("sum(data) % 1000003")


@pytest.fixture
def unreached_repo(make_repo: RepoFactory) -> Path:
    repo = make_repo(
        {
            "fastlib/__init__.py": "",
            "fastlib/core.py": UNREACHED_A,
            "tests/test_core.py": TESTS.format(size=3000),
        },
        name="unreached",
    )
    git(repo, "tag", "a")
    write(repo, {"fastlib/core.py": UNREACHED_B}, "A faster path for huge inputs")
    git(repo, "tag", "b")
    return repo


@pytest.fixture
def uncollectable_repo(make_repo: RepoFactory) -> Path:
    """At A the test file does not even parse (as old code on a newer Python): 2 errors."""
    repo = fastlib_at_a(
        make_repo,
        {
            "tests/test_core.py": TESTS.format(size=300) + "\nprint 'python 2'\n",
            "tests/test_more.py": "from fastlib.core import no_such_name\n",
        },
        name="uncollectable",
    )
    write(repo, {"fastlib/core.py": core(1)}, "One pass")
    git(repo, "tag", "b")
    return repo


def renamed_test_repo(make_repo: RepoFactory, log: Path | None = None) -> Path:
    """A repository whose test of checksum is renamed at HEAD (tag a: 2 passes, HEAD: 1): no
    test calls checksum under one name at both revisions (more-itertools 10.4.0 split
    SlidingWindowTests.test_basic so). `log`: the work counted there (`counted`)."""
    tests = UNITTEST_TESTS if log is None else counted_tests(UNITTEST_TESTS, "fastlib.core")
    renamed = tests.replace("def test_checksum(self)", "def test_checksum_once(self)")

    def code(passes: int, side: str) -> str:
        return core(passes) if log is None else counted(core(passes), "checksum", log, side)

    repo = make_repo(
        {
            "fastlib/__init__.py": "",
            "fastlib/core.py": code(2, "A"),
            "tests/__init__.py": "",
            "tests/test_core.py": tests,
        },
        name="renamed",
    )
    git(repo, "tag", "a")
    write(
        repo,
        {"fastlib/core.py": code(1, "B"), "tests/test_core.py": renamed},
        "Compute the checksum once; its test renamed",
    )
    return repo


def check_renamed_replay(result: CompareResult, log: Path | None = None) -> None:
    """B's renamed test gave the calls, replayed at both. With the work counted (`log`): the
    test ran in one worker at most, at its first import (capturing the calls into the file),
    and every loop timed was one call of checksum (check_only_the_calls_timed). Its ratio is
    the bench's question; B is faster, that is all one compare is asked here."""
    assert result.harness["tests"] == ["tests/test_core.py::ChecksumTests::test_checksum_once"]
    assert result.harness["timed"].endswith(", captured at B, replayed at both"), result.harness
    assert result.verdict.speedup > 1, result.summary()
    if log is not None:
        check_only_the_calls_timed(result, log, spins=(0, SPINS_PER_TEST))
