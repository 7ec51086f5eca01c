"""Time to verdict in the repair loop, on a real container: after a fix only the test files that
failed run again, the whole suite runs once more before the verdict, and rounds stop at the
ladder's time budget (with a note that says so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.setup import SetupResult, run_setup
from simulator.setup.envimage import dockerfile_text
from simulator.setup.ladder import SetupOptions
from simulator.setup.oracle import Category, Tier
from tests.setup import repos
from tests.setup.conftest import SessionFactory, SetUp

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# Each run of the passing module appends a line to this file in the container's home.
COUNTED = (
    "import os\n\n"
    "def _count():\n"
    "    with open(os.path.expanduser('~/counted-runs'), 'a') as f:\n"
    "        f.write('ran\\n')\n\n"
    "def test_one():\n    _count()\n\n"
    "def test_two():\n    assert 1 + 1 == 2\n"
)


def _two_repairs_repo(root: Path) -> Path:
    """Two test modules each need one repair (pkg_resources, then NumPy 2's removed np.NaN);
    a third module passes from the start."""
    return repos.write_repo(
        root,
        {
            "pyproject.toml": repos.setuptools_pyproject("twofix", ["numpy"], package="twofix"),
            "twofix/__init__.py": "def double(x):\n    return 2 * x\n",
            "tests/test_counted.py": COUNTED,
            "tests/test_meta.py": (
                "def test_version():\n"
                "    import pkg_resources\n"
                "    assert pkg_resources.parse_version('1.2').release == (1, 2)\n"
            ),
            "tests/test_num.py": (
                "import math\nimport numpy as np\n\n"
                "def test_nan():\n    assert math.isnan(np.NaN)\n"
            ),
        },
    )


def _stages(path: Path) -> list[dict[str, object]]:
    """The setup run's finished stages, in order, from the trajectory."""
    out = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        payload = event.get("payload") or {}
        if event.get("kind") == "workflow.step" and payload.get("status") != "running":
            out.append(payload)
    return out


async def test_a_repair_reruns_only_the_failing_files_then_the_whole_suite_once(
    tmp_path: Path, set_up: SetUp
) -> None:
    repo = _two_repairs_repo(tmp_path / "repo")
    session, result = await set_up(repo)
    assert result.verdict.ready, result.verdict.line()
    assert result.verdict.tests.get("passed") == 4, result.verdict.tests
    assert [r["fix"] for r in result.repairs] == ["install", "downgrade"], result.repairs
    # The passing module ran twice: the first whole run and the one that confirms the repairs,
    # never in the rounds between (each round re-ran only the files that had failed).
    runs = await session.exec("wc -l < ~/counted-runs")
    assert runs.output.decode().strip() == "2", runs.output
    stages = [s for s in _stages(session.trajectory_path) if s.get("step") == "retest"]
    files = [s["detail"]["files"] for s in stages]  # type: ignore[index]
    assert files == [["tests/test_meta.py", "tests/test_num.py"], ["tests/test_num.py"]], stages
    # The verdict is the whole suite's, with the project's own files named, not the retest's.
    assert "test_counted.py" not in (result.verdict.test_command or "")


async def test_repairs_stop_at_the_time_budget_and_say_so(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    repo = _two_repairs_repo(tmp_path / "repo")
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(budget=1.0))
    assert not result.verdict.ready, result.verdict.line()
    assert result.repairs == [], result.repairs
    assert any("time budget" in n and "not tried: install" in n for n in result.notes), result.notes


async def test_a_suite_longer_than_the_budget_gets_a_timeout_verdict_within_it(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """pint 0.17 in the hard corpus: its suite (with numpy) ran past the batch's limit, which
    killed the task with no tier, category or evidence. The test run is cut at what is left of
    the ladder's budget instead: a timeout verdict, said in the notes, within the budget."""
    repo = repos.write_repo(
        tmp_path / "slow",
        {
            "setup.py": "from setuptools import setup\nsetup(name='slow', packages=['slow'])\n",
            "slow/__init__.py": "X = 1\n",
            "tests/test_slow.py": (
                "import time\n\ndef test_slow():\n    time.sleep(400)\n\n"
                "def test_fast():\n    assert True\n"
            ),
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(budget=120.0))
    assert result.verdict.category is Category.TIMEOUT, result.verdict.line()
    assert result.verdict.tier is Tier.COLLECTS, result.verdict.line()
    assert result.seconds < 300, result.seconds
    assert any("cut at" in n and "time budget (120 s)" in n for n in result.notes), result.notes


async def _set_up_outlasting(
    tmp_path: Path, docker_session: SessionFactory, quick_test: str, n: int
) -> SetupResult:
    """Setup (each test run's limit the least a run gets, 60 s) of a project whose
    tests/test_a.py holds `quick_test` (`{i}` numbering it) n times and whose tests/test_z.py
    sleeps for 600 s: every run of the suite is cut at its limit."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("slowsuite", package="slowsuite"),
            "slowsuite/__init__.py": "def one():\n    return 1\n",
            "tests/test_a.py": "".join(quick_test.format(i=i) for i in range(n)),
            "tests/test_z.py": "import time\n\ndef test_long():\n    time.sleep(600)\n",
        },
    )
    session = await docker_session(repo)
    return await run_setup(session, SetupOptions(test_timeout=40.0))


async def test_a_test_run_cut_at_its_limit_reports_the_tests_that_ran(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """A suite that outlasts its limit (filterpy, ecdsa and networkx in the hard corpus, at load
    24) was killed with nothing to show: "collects", no test counted. pytest is now interrupted
    a little before the limit, like Ctrl+C, so its report of what ran survives: the verdict says
    how many tests ran and passed, with the CPU time the container had, and is not ready."""
    quick = "from slowsuite import one\n\ndef test_{i}():\n    assert one() == 1\n\n"
    verdict = (await _set_up_outlasting(tmp_path, docker_session, quick, 3)).verdict
    assert (verdict.tier, verdict.category) == (Tier.RUNS, Category.TIMEOUT), verdict.line()
    assert verdict.tests.get("passed") == 3, verdict.tests
    assert verdict.evidence is not None
    assert "after 3 tests (3 passed, 0 failed)" in verdict.evidence, verdict.evidence
    assert "s of CPU in the run's" in verdict.evidence, verdict.evidence


async def test_the_failures_of_a_run_cut_at_its_limit_are_still_repaired(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """seaborn 0.11.2 in the hard corpus: after one repair its suite ran into its time limit
    with 141 of 320 tests failed on removed pandas names, and the verdict (a timeout) named no
    cause, so no repair was tried for them. The failures of a cut run are diagnosed like those
    of a finished one, and repaired: here a module the tests import inside their functions
    (not installed up front). About 2 minutes: two runs cut at 60 s (the least a run gets)."""
    quick = "def test_{i}():\n    import yaml\n    assert yaml.safe_load('{i}') == {i}\n\n"
    result = await _set_up_outlasting(tmp_path, docker_session, quick, 4)
    verdict = result.verdict
    assert [r["ok"] for r in result.repairs if "yaml" in r["reason"]] == [True], result.repairs
    assert (verdict.tier, verdict.category) == (Tier.RUNS, Category.TIMEOUT), verdict.line()
    assert verdict.tests.get("passed") == 4 and not verdict.tests.get("failed"), verdict.line()


async def test_a_suite_cut_at_its_limit_with_every_test_passing_is_judged_on_a_sample(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """lz4 3.1.10 in the hard corpus: its suite (parametrized by the thousand) ran into the
    time budget after 19,012 tests, all passed, and was never called ready. pytest collects
    every module before it runs a test, so a cut run has shown that the suite imports; a sample
    of the collected tests spread over every test file then decides, and the verdict says it is
    a sample and how much of the suite ran. Here the second file is reached only by the
    sample. About 2 minutes: a run cut at 60 s (the least a run gets) and a sample of half as
    many tests."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("sampled", package="sampled"),
            "sampled/__init__.py": "def one():\n    return 1\n",
            "tests/test_a.py": (
                "import time\nimport pytest\nfrom sampled import one\n\n"
                "@pytest.mark.parametrize('i', range(300))\n"
                "def test_a(i):\n    time.sleep(0.25)\n    assert one() == 1\n"
            ),
            "tests/test_b.py": (
                "import pytest\nfrom sampled import one\n\n"
                "@pytest.mark.parametrize('i', range(40))\n"
                "def test_b(i):\n    assert one() + i >= 1\n"
            ),
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(test_timeout=30.0))
    verdict = result.verdict
    assert verdict.ready, verdict.line()
    assert verdict.sample and "of 340" in verdict.sample, verdict.line()
    assert "sampled" in verdict.line()
    # The sample reached the second file, which the cut run never did.
    assert 0 < verdict.tests["passed"] < 340 and not verdict.tests.get("failed"), verdict.tests


async def test_a_sample_that_falls_short_on_a_cause_a_rule_repairs_is_repaired_and_resampled(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """hmmlearn 0.2.7 in the hard corpus: its suite ran into the time budget after 110 tests,
    all passed; a sample of 56 spread over every test file then failed 19 on
    `'TestMultinomailHMM' object has no attribute 'n_components'` (set in a nose-style
    `setup()`, which pytest 8 no longer calls), and that was final: the sample's failures were
    never repaired, though a rule (pytest<8) fixes them. Here the first file's slow tests run
    into the limit, all passing; the second file, reached only by the sample, is a nose-style
    class. Before, not ready (the sample's failures in the evidence); now the rule's fix is
    applied and a second sample decides: ready. About 3 minutes: a run cut at 60 s (the least a
    run gets) and two samples."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("nosecut", package="nosecut"),
            "nosecut/__init__.py": "def one():\n    return 1\n",
            "tests/test_a.py": (
                "import time\nimport pytest\nfrom nosecut import one\n\n"
                "@pytest.mark.parametrize('i', range(300))\n"
                "def test_a(i):\n    time.sleep(0.25)\n    assert one() == 1\n"
            ),
            "tests/test_b.py": (
                "import pytest\nfrom nosecut import one\n\n\n"
                "class TestModel:\n"
                "    def setup(self):\n        self.n = one()\n\n"
                "    @pytest.mark.parametrize('i', range(80))\n"
                "    def test_b(self, i):\n        assert self.n + i >= 1\n"
            ),
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(test_timeout=30.0))
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.notes)
    assert verdict.sample and "of 380" in verdict.sample, verdict.line()
    assert [r["fix"] for r in result.repairs] == ["downgrade"], result.repairs
    assert any("pytest<8" in item for item in result.installed), result.installed
    assert any("a sample of the cut suite fell short" in n for n in result.notes), result.notes


async def test_a_cut_suite_with_a_test_the_memory_limit_killed_is_still_judged_on_a_sample(
    tmp_path: Path,
) -> None:
    """lz4 3.1.10 in the hard corpus (stop 41, budget 900 s): `test_huge` was killed by the
    memory limit and left out (named), the rest ran into the time limit with 14,131 of 14,131
    passed, and no sample followed, since a sample was only taken of a cut run with nothing
    left out: the cut stayed the verdict, at every stop. A test the memory limit killed is
    named in the verdict either way; the sample now decides, and the ready verdict still names
    it. A 300 MB container, the 800 MB test first, then 300 slow tests and 40 quick ones.
    Before: runs [timeout], not ready; now ready on a sample, `test_huge` named. About 3
    minutes: two killed runs, a run cut at 60 s (the least a run gets) and a sample."""
    from simulator.backend_factory import BackendOptions, make_backend
    from simulator.session import Session
    from tests.setup.conftest import SETUP_IMAGE, docker_or_skip

    docker_or_skip()
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("hungrycut", package="hungrycut"),
            "hungrycut/__init__.py": "def one():\n    return 1\n",
            "tests/test_0big.py": ("def test_huge():\n    assert len(b'x' * (800 * 2**20)) > 0\n"),
            "tests/test_a.py": (
                "import time\nimport pytest\nfrom hungrycut import one\n\n"
                "@pytest.mark.parametrize('i', range(300))\n"
                "def test_a(i):\n    time.sleep(0.25)\n    assert one() == 1\n"
            ),
            "tests/test_b.py": (
                "import pytest\nfrom hungrycut import one\n\n"
                "@pytest.mark.parametrize('i', range(40))\n"
                "def test_b(i):\n    assert one() + i >= 1\n"
            ),
        },
    )
    backend = make_backend(
        "docker", repo, options=BackendOptions(image=SETUP_IMAGE, network=True, memory="300m")
    )
    session = await Session.open(repo, backend=backend, trajectory_path=tmp_path / "t.jsonl")
    try:
        result = await run_setup(session, SetupOptions(test_timeout=30.0))
    finally:
        await session.close()
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.notes)
    assert verdict.sample and "collected tests" in verdict.sample, verdict.line()
    assert any("tests/test_0big.py::test_huge" in s and "killed" in s for s in verdict.skipped), (
        verdict.skipped
    )


async def test_the_projects_own_command_cut_at_its_limit_decides(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """emcee 3.0.2 in the hard corpus (budget 540 s): its own command (`pytest src/emcee/tests`)
    was cut at its limit before any test finished, and the default pytest run followed with
    another minute, past the budget into the batch's limit, which killed the task with no
    verdict. A run of the project's own command cut at its limit is the verdict: the suite does
    not fit, and another runner of the same tests would not either. About 90 s: one run cut at
    60 s (the least a run gets); two before."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("slowsuite", package="slowsuite"),
            "slowsuite/__init__.py": "def one():\n    return 1\n",
            "tox.ini": "[testenv]\ncommands = pytest tests/test_slow.py\n",
            "tests/test_slow.py": "import time\n\ndef test_long():\n    time.sleep(600)\n",
            "tests/test_fast.py": "def test_one():\n    assert 1\n",
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(test_timeout=40.0))
    verdict = result.verdict
    assert (verdict.tier, verdict.category) == (Tier.COLLECTS, Category.TIMEOUT), verdict.line()
    assert "tests/test_slow.py" in (verdict.test_command or ""), verdict.line()
    runs = [
        json.loads(line)["payload"]["command"]
        for line in session.trajectory_path.read_text().splitlines()
        if json.loads(line).get("kind") == "test.run"
    ]
    assert len(runs) == 1, runs


async def test_a_suite_the_budget_will_cut_is_cut_at_half_so_its_sample_fits(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """lz4 3.1.10 in the hard corpus (budget 540 s): the whole-suite run took what was left of
    the budget, so the sample that would have decided had no time ("no time left in the budget
    for a sample"). A whole-suite pytest run now gets half of what is left: cut there, the rest
    runs the sample. Here the suite (1,200 quarter-second tests, 300 s) outlasts the budget (240
    s); before, the run was cut near the budget's end and no sample ran (not ready). About 2.5
    minutes, within the budget and the minute a last run may take."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("halfcut", package="halfcut"),
            "halfcut/__init__.py": "def one():\n    return 1\n",
            "tests/test_a.py": (
                "import time\nimport pytest\nfrom halfcut import one\n\n"
                "@pytest.mark.parametrize('i', range(1200))\n"
                "def test_a(i):\n    time.sleep(0.25)\n    assert one() == 1\n"
            ),
            "tests/test_b.py": (
                "import pytest\nfrom halfcut import one\n\n"
                "@pytest.mark.parametrize('i', range(40))\n"
                "def test_b(i):\n    assert one() + i >= 1\n"
            ),
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(budget=240.0))
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.notes)
    assert verdict.sample and "of 1240" in verdict.sample, verdict.line()
    assert any("50% of what was left of the time budget (240 s)" in n for n in result.notes), (
        result.notes
    )
    assert result.seconds < 240 + 60, result.seconds


async def test_hypothesis_examples_past_their_deadline_are_rerun_without_it(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numdifftools 0.9.39 in the hard corpus at load 20-30: its hypothesis tests failed with
    DeadlineExceeded (an example slower than hypothesis's 200 ms, by the machine's load), and
    the diagnosis named a pytest config warning printed after them, so nothing was repaired.
    The deadline error is read from the run's output first: setup's plugin module turns the
    deadline off, the failing file runs again, the verdict is ready and the notes and the
    generated Dockerfile say so. Here an example takes 300 ms on any machine; 12 other tests
    pass (12 of 13 is below the 95% a ready verdict needs)."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject(
                "slowex", ["hypothesis"], package="slowex"
            ),
            "slowex/__init__.py": "def twice(x):\n    return 2 * x\n",
            "tests/test_prop.py": (
                "import time\nfrom hypothesis import given, settings, strategies as st\n"
                "from slowex import twice\n\n\n"
                "@settings(max_examples=3)\n@given(st.integers())\n"
                "def test_twice(x):\n    time.sleep(0.3)\n    assert twice(x) == x + x\n"
            ),
            "tests/test_plain.py": "from slowex import twice\n\n"
            + "".join(f"def test_{n}():\n    assert twice({n}) == {2 * n}\n\n" for n in range(12)),
        },
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.repairs, result.notes)
    assert verdict.tests.get("passed") == 13, verdict.tests
    assert [r["fix"] for r in result.repairs] == ["no-deadline"], result.repairs
    assert "reposim_no_deadline" in (verdict.test_command or ""), verdict.test_command
    assert any("deadline of 200.00ms" in n for n in result.notes), result.notes
    assert result.no_deadline
    text = dockerfile_text(result, "reposim/base:bookworm-2", "0" * 40)
    assert "reposim_no_deadline" in text and "deadline=None" in text, text


async def test_a_deadline_the_test_sets_itself_is_lifted_too(tmp_path: Path, set_up: SetUp) -> None:
    """numdifftools 0.9.39 in the hard corpus (stop 41, container at a few per cent of a CPU):
    the sample's two hypothesis failures were examples past deadlines the tests set themselves
    (`@settings(deadline=800.0)`: "Test took 1044.34ms, which exceeds the deadline of
    800.00ms"), which setup's no-deadline profile left in place (a test's own settings win over
    a profile). The plugin now lifts those too, so the repair round makes the run pass. Here an
    example takes 300 ms on any machine against its own 100 ms deadline; 12 other tests pass
    (12 of 13 is below the 95% a ready verdict needs)."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject(
                "ownline", ["hypothesis"], package="ownline"
            ),
            "ownline/__init__.py": "def twice(x):\n    return 2 * x\n",
            "tests/test_prop.py": (
                "import time\nfrom hypothesis import given, settings, strategies as st\n"
                "from ownline import twice\n\n\n"
                "@settings(max_examples=3, deadline=100.0)\n@given(st.integers())\n"
                "def test_twice(x):\n    time.sleep(0.3)\n    assert twice(x) == x + x\n"
            ),
            "tests/test_plain.py": "from ownline import twice\n\n"
            + "".join(f"def test_{n}():\n    assert twice({n}) == {2 * n}\n\n" for n in range(12)),
        },
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.repairs, result.notes)
    assert verdict.tests.get("passed") == 13, verdict.tests
    assert [r["fix"] for r in result.repairs] == ["no-deadline"], result.repairs
    assert any("deadline of 100.00ms" in n for n in result.notes), result.notes


async def test_an_install_is_cut_at_what_is_left_of_the_budget(
    tmp_path: Path, docker_session: SessionFactory
) -> None:
    """autograd 1.3 on pypy3 in the hard corpus: the numpy<1.24 pin had no wheel for PyPy and
    NumPy's source build ran on with its own 900 s limit, past the budget (540 s) into the
    batch's limit, which kills the task with no verdict. An install's limit is now what is left
    of the budget (at least a minute), said in the notes. Here a requirement's build sleeps
    for 300 s under a budget of 90 s."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": "from setuptools import setup\nsetup(name='cut', packages=['cut'])\n",
            "cut/__init__.py": "X = 1\n",
            "requirements.txt": "./slowdep\n",
            "slowdep/setup.py": (
                "import time\nfrom setuptools import setup\n\ntime.sleep(300)\n"
                "setup(name='slowdep', version='0.1', py_modules=[])\n"
            ),
            "tests/test_x.py": "from cut import X\n\ndef test_x():\n    assert X == 1\n",
        },
    )
    session = await docker_session(repo)
    result = await run_setup(session, SetupOptions(budget=90.0))
    assert any("an install was cut at" in n and "-r requirements.txt" in n for n in result.notes), (
        result.notes
    )
    assert result.seconds < 240, result.seconds


async def test_a_deadline_failure_above_the_outputs_tail_is_still_seen(
    tmp_path: Path, set_up: SetUp
) -> None:
    """numdifftools 0.9.39 in stop 42's run D: the cut run's two failures were DeadlineExceeded,
    but pytest's warnings summary (hundreds of lines) came after them, so the 60 lines of tail
    the rule read did not have it, and nothing was repaired. The failed tests' own messages
    are read too. Here a deadline failure with a long test id (the short summary line cuts its
    message) and 40 warnings after it; 13 other tests pass (13 of 14 is below the 95% a
    ready verdict needs)."""
    warned = (
        "import warnings\n\n\ndef test_warns():\n    for n in range(40):\n"
        "        warnings.warn(f'warning number {n} of the fixture')\n"
    )
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject(
                "tailex", ["hypothesis"], package="tailex"
            ),
            "tailex/__init__.py": "def twice(x):\n    return 2 * x\n",
            "tests/test_prop.py": (
                "import time\nfrom hypothesis import given, settings, strategies as st\n"
                "from tailex import twice\n\n\n"
                "@settings(max_examples=3)\n@given(st.integers())\n"
                "def test_a_property_whose_name_is_long_enough_to_cut_the_summary_line(x):\n"
                "    time.sleep(0.3)\n    assert twice(x) == x + x\n"
            ),
            "tests/test_warns.py": warned,
            "tests/test_plain.py": "from tailex import twice\n\n"
            + "".join(f"def test_{n}():\n    assert twice({n}) == {2 * n}\n\n" for n in range(12)),
        },
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready, (verdict.line(), result.repairs, result.notes)
    assert [r["fix"] for r in result.repairs] == ["no-deadline"], result.repairs
