"""Honest tiers: each verdict from a real pytest or unittest process (a local session in this
project's own venv) on a fixture that the old oracle misjudged."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from simulator.backend_factory import make_backend
from simulator.session import Session
from simulator.setup.detect import detect
from simulator.setup.imports import scan
from simulator.setup.ladder import SetupOptions, _Env, _installed_or_not, _noexec_in, _unittest
from simulator.setup.oracle import (
    Category,
    Diagnosis,
    Tier,
    Verdict,
    count_generic,
    failure_causes,
    verdict_from_tests,
    warned_missing,
    with_modules_left_out,
)
from tests.setup import repos

PYTEST = f"{sys.executable} -m pytest -p no:cacheprovider --continue-on-collection-errors -q"

Opener = Callable[[Path], Awaitable[Session]]


@pytest.fixture
async def local_session(tmp_path: Path) -> AsyncIterator[Opener]:
    opened: list[Session] = []

    async def open_(repo: Path) -> Session:
        session = await Session.open(
            repo, backend=make_backend("local", repo), trajectory_path=tmp_path / "t.jsonl"
        )
        opened.append(session)
        return session

    yield open_
    for session in opened:
        await session.close()


async def _pytest_verdict(session: Session, repo: Path) -> Verdict:
    run = await session.run_tests(command=PYTEST, timeout=120)
    return verdict_from_tests(
        run.counts(),
        output=run.output,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        command=PYTEST,
        modules=len(scan(repo).test_modules),
    )


async def test_a_type_error_importing_a_test_module_is_a_collection_error(
    tmp_path: Path, local_session: Opener
) -> None:
    """Ten tests in a module that raises TypeError on import were once "1 of 2 tests failed"."""
    broken = "raise TypeError('unsupported operand')\n" + "".join(
        f"def test_{i}():\n    pass\n" for i in range(10)
    )
    repo = repos.write_repo(
        tmp_path / "r",
        {"tests/test_ok.py": "def test_ok():\n    pass\n", "tests/test_broken.py": broken},
    )
    verdict = await _pytest_verdict(await local_session(repo), repo)
    assert not verdict.ready and verdict.category is Category.COLLECTION, verdict.line()
    assert "tests/test_broken.py" in (verdict.evidence or "") and "TypeError" in (
        verdict.evidence or ""
    )


async def test_a_module_needing_a_missing_library_is_named_in_a_ready_verdict(
    tmp_path: Path, local_session: Opener
) -> None:
    files = {f"tests/test_ok{i}.py": "def test_ok():\n    pass\n" for i in range(4)}
    files["tests/test_draw.py"] = (
        "import ctypes\nctypes.CDLL('libreposim-absent-2.0.so.0')\n\ndef test_draw():\n    pass\n"
    )
    repo = repos.write_repo(tmp_path / "r", files)
    verdict = await _pytest_verdict(await local_session(repo), repo)
    assert verdict.ready and verdict.tests["passed"] == 4 and verdict.tests["error"] == 0
    assert verdict.skipped == ["tests/test_draw.py: needs libreposim-absent-2.0.so.0"]
    assert "1 test module not importable: tests/test_draw.py: needs libreposim" in verdict.line()
    assert verdict.skipped_diagnoses[0].category is Category.SYSTEM_LIBRARY


async def test_a_pytest_internal_error_at_start_up_is_not_no_tests(
    tmp_path: Path, local_session: Opener
) -> None:
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "tests/conftest.py": (
                "def pytest_collection_modifyitems(items):\n"
                "    raise RuntimeError('a deprecation turned into an error')\n"
            ),
            "tests/test_a.py": "def test_a():\n    pass\n",
        },
    )
    verdict = await _pytest_verdict(await local_session(repo), repo)
    assert verdict.category is Category.COLLECTION and verdict.tier is Tier.IMPORTS, verdict.line()
    assert "a deprecation turned into an error" in (verdict.evidence or "")


async def _unittest_verdict(session: Session, repo: Path, timeout: float = 120) -> Verdict | None:
    env = _Env(session, SetupOptions(test_timeout=timeout))
    env.python = sys.executable
    return await _unittest(env, detect(repo), scan(repo), env.options)


async def test_a_unittest_fallback_killed_at_its_limit_is_a_timeout(
    tmp_path: Path, local_session: Opener
) -> None:
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "tests/slow_tests.py": (
                "import time, unittest\n\nclass Slow(unittest.TestCase):\n"
                "    def test_slow(self):\n        time.sleep(60)\n"
            )
        },
    )
    verdict = await _unittest_verdict(await local_session(repo), repo, timeout=5)
    assert verdict is not None and verdict.category is Category.TIMEOUT, verdict


async def test_unittest_discovery_follows_the_layout_and_the_projects_pattern(
    tmp_path: Path, local_session: Opener
) -> None:
    """tests/ is not a package (no `-t .`), its modules import a helper beside them, and the
    files are named *_tests.py."""
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "tests/helpers.py": "VALUE = 3\n",
            "tests/math_tests.py": (
                "import unittest\nimport helpers\n\nclass T(unittest.TestCase):\n"
                + "".join(
                    f"    def test_{i}(self):\n        self.assertEqual(helpers.VALUE, 3)\n"
                    for i in range(12)
                )
            ),
        },
    )
    verdict = await _unittest_verdict(await local_session(repo), repo)
    assert verdict is not None and verdict.tier is Tier.READY_PLUS, verdict
    assert verdict.tests["passed"] == 12
    assert " -t " not in (verdict.test_command or "") and "*_tests.py" in (
        verdict.test_command or ""
    )


async def test_a_fallback_that_runs_fewer_tests_than_defined_is_not_ready(
    tmp_path: Path, local_session: Opener
) -> None:
    """pytest-style functions in *_tests.py files (a runner script collects them): unittest
    finds only the one TestCase, 1 of 11 tests."""
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "tests/__init__.py": "",
            "tests/core_tests.py": (
                "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
                "        pass\n\n"
                + "".join(f"def test_f{i}():\n    assert True\n\n" for i in range(10))
            ),
        },
    )
    verdict = await _unittest_verdict(await local_session(repo), repo)
    assert verdict is not None and not verdict.ready, verdict
    assert verdict.category is Category.COLLECTION
    assert "ran 1 tests; the test files define 11" in (verdict.evidence or "")


async def test_a_suite_script_that_stops_importing_a_test_module_is_a_collection_error(
    tmp_path: Path, local_session: Opener
) -> None:
    """docutils 0.17.1's `test/alltests.py` imports every test module itself; on 3.11 one of
    them raises TypeError at import and the script stops with a traceback, before any test.
    That was "1 of 1 tests failed"; it is a test module that does not import, named."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "test/alltests.py": (
                "import importlib, sys, unittest\n"
                "sys.path.insert(0, 'test')\n"
                "suite = unittest.TestSuite()\n"
                "for name in ('test_fine', 'test_tables'):\n"
                "    module = importlib.import_module(name)\n"
                "    suite.addTests(unittest.defaultTestLoader.loadTestsFromModule(module))\n"
                "unittest.TextTestRunner().run(suite)\n"
            ),
            "test/test_fine.py": (
                "import unittest\n\nclass T(unittest.TestCase):\n"
                "    def test_ok(self):\n        pass\n"
            ),
            "test/test_tables.py": "null_bytes_exception = None[0]\n",
        },
    )
    session = await local_session(repo)
    command = f"{sys.executable} test/alltests.py"
    run = await session.run_tests(command=command, timeout=120)
    verdict = verdict_from_tests(
        count_generic(run.output, run.exit_code),
        output=run.output,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        command=command,
    )
    assert (verdict.tier, verdict.category) == (Tier.IMPORTS, Category.COLLECTION), verdict
    assert verdict.evidence is not None
    assert verdict.evidence.startswith("test/test_tables.py did not import"), verdict.evidence
    assert "TypeError" in verdict.evidence, verdict.evidence


def test_a_module_left_out_of_a_suite_script_is_judged_as_a_collection_error_is() -> None:
    """A test module that stopped the project's script, left out of its next run: named, and
    the verdict stays ready only for a cause outside the code under test (here: written for an
    older Python), never for a TypeError of the code; more than a quarter left out is not
    ready either."""
    ready = Verdict(Tier.READY_PLUS, tests={"passed": 1100, "failed": 3}, pass_ratio=0.997)
    older = Diagnosis(
        Category.PYTHON_VERSION,
        "test/test_tables.py: TypeError: 'NoneType' object is not subscriptable (the project "
        "declares Python 3.9 at the newest; this is 3.11)",
    )
    named = with_modules_left_out(ready, [("test/test_tables.py", older)], modules=133)
    assert named.ready, named.line()
    assert named.skipped and named.skipped[0].startswith("test/test_tables.py: written for another")
    assert "1 test module not importable" in named.line()
    assert named.skipped[0].count("test/test_tables.py") == 1, named.skipped
    assert named.skipped[0].endswith("this is 3.11))"), named.skipped
    code = Diagnosis(Category.COLLECTION, "TypeError: 'NoneType' object is not subscriptable")
    broken = with_modules_left_out(ready, [("test/test_tables.py", code)], modules=133)
    assert (broken.tier, broken.category) == (Tier.RUNS, Category.COLLECTION), broken.line()
    assert (broken.evidence or "").startswith("1 of 133 test modules did not import; test/test_t")
    many = [(f"test/test_{i}.py", older) for i in range(3)]
    assert not with_modules_left_out(ready, many, modules=8).ready


async def test_a_test_script_that_runs_fewer_tests_than_the_files_define_does_not_decide(
    tmp_path: Path, local_session: Opener
) -> None:
    """Pillow 8.4.0 in this stop's corpus: tox.ini runs `selftest.py` (a handful of doctests)
    before `pytest`; the script ran, so it decided, and the verdict was "ready (1/1 passed)"
    for a suite of thousands of tests. A script that runs fewer than 80% of the test functions
    the test files define is not the suite: the project's next command runs it."""
    from simulator.setup.ladder import _oracle

    repo = repos.write_repo(
        tmp_path / "r",
        {
            "tox.ini": "[testenv]\ncommands =\n    {envpython} selftest.py\n"
            "    {envpython} -m pytest tests\n",
            "selftest.py": "print('self test: ok')\n",
            "tests/test_things.py": "".join(
                f"def test_{n}():\n    assert {n} == {n}\n\n" for n in range(3)
            ),
        },
    )
    env = _Env(await local_session(repo), SetupOptions(test_timeout=120))
    env.python = sys.executable
    verdict = await _oracle(env, detect(repo), scan(repo), None, env.options)
    assert verdict.ready and verdict.tests.get("passed") == 3, verdict.line()
    assert "pytest" in (verdict.test_command or ""), verdict.test_command


async def test_no_further_runner_starts_once_the_budget_is_spent(
    tmp_path: Path, local_session: Opener
) -> None:
    """Every test run gets at least a minute (a verdict needs a run), so each runner the oracle
    tried after the budget was spent (the default pytest run, a root test module, unittest
    discovery, suite scripts) took the ladder a minute further past `--budget`, into the
    batch's limit. Once the first run has left less than a minute, no further runner starts,
    and the notes say what was not run."""
    repo = repos.write_repo(
        tmp_path / "r",
        {
            "tests/check_things.py": (
                "import unittest\n\n\nclass T(unittest.TestCase):\n"
                "    def test_one(self):\n        self.assertEqual(1, 1)\n"
            ),
        },
    )
    from simulator.setup.ladder import _oracle

    session = await local_session(repo)
    env = _Env(session, SetupOptions(budget=5.0, test_timeout=120))
    env.python = sys.executable
    verdict = await _oracle(env, detect(repo), scan(repo), None, env.options)
    assert verdict.category is Category.NO_TESTS, verdict.line()
    assert any("not run: a root test module, unittest discovery" in n for n in env.notes), env.notes
    runs = [
        line for line in (tmp_path / "t.jsonl").read_text().splitlines() if '"test.run"' in line
    ]
    assert len(runs) == 1, runs


def test_the_failed_tests_messages_give_each_cause_once_most_frequent_first() -> None:
    """cffi 1.15.0's first cut run (stop 41): 1,279 failures behind one diagnosis. Each cause a
    rule can act on is named once, by how many failures show it; a plain assertion is none."""
    messages = [
        *["ModuleNotFoundError: No module named '_cffi_backend'"] * 5,
        *["AttributeError: module 'py' has no attribute 'test'"] * 2,
        "ModuleNotFoundError: No module named 'pycparser'",
        "ModuleNotFoundError: No module named 'pycparser'",
        "ModuleNotFoundError: No module named 'pycparser'",
        "AssertionError: assert 1 == 0",
    ]
    causes = failure_causes(messages)
    assert [(c.category, c.subject) for c in causes] == [
        (Category.MODULE_NOT_FOUND, "_cffi_backend"),
        (Category.MODULE_NOT_FOUND, "pycparser"),
        (Category.ATTRIBUTE_ERROR, "py:test"),
    ]


def test_a_warning_that_a_module_is_missing_names_it_and_a_short_run_carries_it() -> None:
    """numdifftools 0.9.39: `UserWarning: No module named 'line_profiler'` in pytest's warnings
    summary, from a guarded import; a run short of ready carries the name for the repair loop,
    a ready one does not need it."""
    output = (
        "src/numdifftools/profiletools.py:76\n"
        "  /workspace/src/numdifftools/profiletools.py:76: UserWarning: No module named "
        "'line_profiler'\n    warnings.warn(str(error))\n"
        "FAILED tests/test_p.py::test_a - AssertionError: assert 0 > 0\n"
        "1 failed, 3 passed in 0.1s\n"
    )
    assert warned_missing(output) == ["line_profiler"]
    short = verdict_from_tests(
        {"passed": 3, "failed": 1}, output=output, exit_code=1, timed_out=False, command=PYTEST
    )
    assert not short.ready and short.missing == ["line_profiler"], short
    assert "missing" not in short.to_dict() and "causes" not in short.to_dict()


def test_a_project_that_did_not_install_keeps_what_its_failed_tests_show() -> None:
    """cffi 1.15.0 in stop 42's run D: its build failed on ffi.h, and the verdict that says so
    (tier none) was rebuilt without the causes its 690 failed tests showed, so libffi-dev had
    a round alone and `py` waited for another (the budget stopped it)."""
    py_test = Diagnosis(Category.ATTRIBUTE_ERROR, "module 'py' has no attribute 'test'", "py:test")
    ran = Verdict(
        Tier.RUNS,
        Category.TEST_FAILURES,
        "680 of 710 tests failed",
        causes=[py_test],
        missing=["line_profiler"],
        deadline="DeadlineExceeded",
    )
    build = Diagnosis(Category.SYSTEM_LIBRARY, "fatal error: ffi.h: No such file", "ffi.h")
    verdict = _installed_or_not(ran, build)
    assert verdict.tier is Tier.NONE and verdict.subject == "ffi.h", verdict
    assert verdict.causes == [py_test] and verdict.missing == ["line_profiler"], verdict
    assert verdict.deadline == "DeadlineExceeded", verdict


def test_a_shared_object_the_loader_refused_in_a_noexec_tmp_is_named() -> None:
    """cffi 1.15.0 (stop 43 run E): its sample's failures, as pytest reported them; a library
    refused elsewhere, or for another reason, is not this cause."""
    cffi = (
        "OSError: cannot load library '/tmp/ffi-2/testownlibcaf\u00e9.so': /tmp/ffi-2/testownlib"
        "caf\u00e9.so: failed to map segment from shared object.  Additionally, ctypes..."
    )
    found = _noexec_in(cffi)
    assert found is not None and found.endswith("failed to map segment from shared object")
    verify = "ImportError: /tmp/ffi-1/tmpga5x734v/_cffi__x209e6f68.cpython-311-x86_64-linux-gnu.so"
    assert _noexec_in(verify + ": failed to map segment from shared object") is not None
    assert _noexec_in("OSError: /usr/lib/libx.so: failed to map segment from shared object") is None
    assert _noexec_in("OSError: /tmp/x/libf.so: cannot open shared object file") is None
