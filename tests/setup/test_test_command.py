"""The project's own test command: read from its files, parsed into a known runner with checked
values (never a shell line from the repository), run first by the oracle."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.setup.testcmd import TestCommand, parse_command, project_test_commands
from tests.setup import repos
from tests.setup.conftest import SetUp


def test_lines_become_known_runners_with_checked_values_only(tmp_path: Path) -> None:
    root = repos.write_repo(
        tmp_path / "r", {"tests/runtests.py": "", "src/pkg/__init__.py": "", "x.txt": ""}
    )
    cases = {
        "pytest --cov=x -n auto tests/ ; rm -rf /": ("pytest", ("tests/",)),
        "coverage run -m pytest -x tests": ("pytest", ("tests",)),
        "{envpython} -m pytest {posargs}": ("pytest", ()),
        "poetry run pytest -p evil --rootdir=/ tests": ("pytest", ("tests",)),
        "python -m unittest discover -s src/pkg -p '*_tests.py'": (
            "unittest",
            ("discover", "-s", "src/pkg", "-p", "*_tests.py"),
        ),
        "python tests/runtests.py --verbose": ("script", ("tests/runtests.py",)),
    }
    for line, (runner, args) in cases.items():
        command = parse_command(line, root)
        assert command is not None and (command.runner, command.args) == (runner, args), line
    for line in (
        "python -m unittest discover -s ../../etc",  # outside the tree
        "python -m unittest discover -s src -p '$(touch x)'",  # not a pattern
        "python setup.py test",
        "tox -e py311",
        "bash -c 'pytest'",
    ):
        assert parse_command(line, root) is None, line
    quoted = TestCommand("unittest", ("discover", "-s", "a b", "-p", "*_tests.py"), "x")
    assert quoted.command("py") == "py -m unittest discover -s 'a b' -p '*_tests.py'"


def test_a_root_test_script_running_a_runner_module_of_the_project_is_its_command(
    tmp_path: Path,
) -> None:
    """tornado 6.1's runtests.sh: `python -m tornado.test.runtests "$@"`, a runner module in
    the project's own tree. A module not in the tree, or one that runs no tests, is not."""
    root = repos.write_repo(
        tmp_path / "r",
        {
            "runtests.sh": (
                '#!/bin/sh\n# run them\ncd $(dirname $0)\npython -m pkg.test.runtests "$@"\n'
            ),
            "pkg/__init__.py": "",
            "pkg/test/__init__.py": "",
            "pkg/test/runtests.py": "",
            "pkg/tool.py": "",
        },
    )
    commands = project_test_commands(root)
    assert [(c.runner, c.args, c.source) for c in commands] == [
        ("script", ("-m", "pkg.test.runtests"), "runtests.sh")
    ], commands
    assert commands[0].command("/venv/bin/python") == "/venv/bin/python -m pkg.test.runtests"
    for line in ("python -m pkg.tool", "python -m other.test.runtests", "python -m pip install ."):
        assert parse_command(line, root) is None, line


def test_candidates_are_ranked_ci_first(tmp_path: Path) -> None:
    root = repos.write_repo(
        tmp_path / "r",
        {
            "tests/test_a.py": "",
            "README.md": "```\n$ python -m pytest tests\n```\n",
            "Makefile": "test:\n\tpytest tests/test_a.py\n",
            "tox.ini": "[testenv]\ncommands =\n    pytest {posargs} tests\n",
            ".github/workflows/ci.yml": (
                "jobs:\n  t:\n    steps:\n      - run: |\n          pip install .\n"
                "          python -m unittest discover -s tests\n"
                "      - run: python -m pytest -p no:randomly 'tests/test_a.py'\n"
                '      - run: "pytest tests"\n'
            ),
        },
    )
    commands = project_test_commands(root)
    assert [(c.runner, c.args, c.source) for c in commands] == [
        ("unittest", ("discover", "-s", "tests"), "CI workflow ci.yml"),
        ("pytest", ("tests/test_a.py",), "CI workflow ci.yml"),
        ("pytest", ("tests",), "CI workflow ci.yml"),
    ]


def _benchmark_beside_tests(root: Path) -> Path:
    """ujson 4.3.0: a benchmark workflow (sorted before test.yml) runs tests/benchmark.py, which
    imports the libraries it compares against; the test workflow runs pytest."""
    return repos.write_repo(
        root,
        {
            "setup.py": "from setuptools import setup\nsetup(name='calc', packages=['calc'])\n",
            "calc/__init__.py": "def add(a, b):\n    return a + b\n",
            "tests/test_calc.py": (
                "from calc import add\n\n"
                + "".join(
                    f"def test_{i}():\n    assert add({i}, 1) == {i + 1}\n\n" for i in range(6)
                )
            ),
            "tests/benchmark.py": (
                "import timeit\n\nimport reposim_absent_rival_json\n\nimport calc\n\n"
                "print(timeit.timeit(lambda: calc.add(1, 2)))\n"
            ),
            ".github/workflows/benchmark.yml": (
                "on: push\njobs:\n  bench:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - run: python -m pip install .\n"
                "      - run: python tests/benchmark.py\n"
            ),
            ".github/workflows/test.yml": (
                "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - run: python -m pip install -U pytest\n"
                "      - run: |\n          pytest\n"
            ),
        },
    )


def test_a_benchmark_is_not_the_projects_test_command(tmp_path: Path) -> None:
    root = _benchmark_beside_tests(tmp_path / "r")
    commands = project_test_commands(root)
    assert [(c.runner, c.args) for c in commands] == [("pytest", ())], commands
    for line in ("python tests/benchmark.py", "python tests/bench_test.py", "python perf_test.py"):
        assert parse_command(line, root) is None, line


@pytest.mark.docker
@pytest.mark.slow
async def test_a_benchmark_script_in_the_test_folder_does_not_decide_the_verdict(
    tmp_path: Path, set_up: SetUp
) -> None:
    """ujson 4.3.0 in the hard corpus: `python tests/benchmark.py` from its benchmark workflow
    was taken as the test command, its import of a rival library (nujson) failed, and the
    verdict said 0 of 1 passed with the library as the cause. The test workflow's pytest
    decides; the rival library is not installed."""
    _, result = await set_up(_benchmark_beside_tests(tmp_path / "repo"))
    assert result.verdict.ready and result.verdict.tests["passed"] == 6, result.verdict.line()
    assert "benchmark" not in (result.verdict.test_command or "")
    assert not any("reposim_absent_rival_json" in i for i in result.installed), result.installed


def unittest_calc(module: str) -> dict[str, str]:
    """A setuptools package `calc` whose twelve unittest cases are in `module`."""
    cases = "".join(
        f"    def test_{i}(self):\n        self.assertEqual(add({i}, 1), {i + 1})\n"
        for i in range(12)
    )
    return {
        "setup.py": "from setuptools import setup\nsetup(name='calc', packages=['calc'])\n",
        "calc/__init__.py": "def add(a, b):\n    return a + b\n",
        module: f"import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n{cases}",
    }


@pytest.mark.docker
@pytest.mark.slow
async def test_the_ci_command_finds_unittest_files_pytest_does_not_collect(
    tmp_path: Path, set_up: SetUp
) -> None:
    """`*_tests.py` inside the package, run by CI with unittest discover: pytest collects
    nothing and there is no tests/ folder."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            **unittest_calc("calc/core_tests.py"),
            ".github/workflows/ci.yml": (
                "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - run: python -m unittest discover -s calc -p '*_tests.py'\n"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert "*_tests.py" in (result.verdict.test_command or "")


def test_a_readme_cd_before_a_test_script_names_the_scripts_folder(tmp_path: Path) -> None:
    """docutils 0.17's README: `cd <archive_directory_path>/test` then `./alltests.py` (and
    `python alltests.py` on Windows, after a backslash `cd`): the script is test/alltests.py."""
    root = repos.write_repo(tmp_path / "r", {"test/alltests.py": "", "alltests_not.txt": ""})
    (root / "README.txt").write_text(
        "Run the tests::\n\n    cd <archive_directory_path>/test\n    ./alltests.py\n\n"
        "Under Windows::\n\n    cd <archive_directory_path>\\test\n    python alltests.py\n\n"
        "Elsewhere::\n\n    ./alltests.py\n"
    )
    commands = project_test_commands(root)
    assert [(c.runner, c.args) for c in commands] == [("script", ("test/alltests.py",))]


@pytest.mark.docker
@pytest.mark.slow
async def test_the_readmes_test_script_runs_tests_that_need_their_own_folder(
    tmp_path: Path, set_up: SetUp
) -> None:
    """docutils 0.17.1 in the hard corpus: its tests run as `cd test; ./alltests.py` (the
    README says so), which changes to the test folder first; its modules read data relative
    to it at import, so pytest from the root fails to collect them. The README's script runs
    them all."""
    cases = "".join(
        f"    def test_{i}(self):\n        self.assertEqual(DATA, 'x{i % 1}')\n" for i in range(12)
    )
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "setup.py": "from setuptools import setup\nsetup(name='rst', packages=['rst'])\n",
            "rst/__init__.py": "",
            "test/data.txt": "x0",
            "test/test_rst.py": (
                "import unittest\nimport rst\n\nDATA = open('data.txt').read()\n\n"
                f"class T(unittest.TestCase):\n{cases}"
            ),
            "test/alltests.py": (
                "import os, sys, unittest\n"
                "os.chdir(os.path.dirname(os.path.abspath(__file__)))\n"
                "sys.path.insert(0, os.getcwd())\n"
                "suite = unittest.defaultTestLoader.discover('.', pattern='test_*.py')\n"
                "result = unittest.TextTestRunner(verbosity=1).run(suite)\n"
                "sys.exit(not result.wasSuccessful())\n"
            ),
            "README.txt": "Testing\n=======\n\nRun::\n\n    cd <archive>/test\n    ./alltests.py\n",
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert "test/alltests.py" in (result.verdict.test_command or "")


@pytest.mark.docker
@pytest.mark.slow
async def test_a_root_test_module_pytest_does_not_collect_by_name_is_run(
    tmp_path: Path, set_up: SetUp
) -> None:
    """python-slugify 5.0.2 in the hard corpus keeps its unittest suite in a root `test.py`,
    a name pytest does not collect by default ("no tests ran") and there is no test folder for
    the unittest fallback. Named on pytest's command line it runs."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            **unittest_calc("test.py"),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests["passed"] == 12, result.verdict.line()
    assert (result.verdict.test_command or "").endswith("test.py")


# docutils 0.17.1's way: a script that imports every test_*.py itself, takes each module's
# suite() (its tests are built from data, so pytest collects none of them) and leaves out a
# module that raises ImportError, naming it; any other error at import stops it.
_ALLTESTS = """\
import os, sys, unittest
os.chdir(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.getcwd())
suite = unittest.TestSuite()
for name in sorted(f[:-3] for f in os.listdir('.') if f.startswith('test_') and f.endswith('.py')):
    try:
        module = __import__(name)
    except ImportError:
        print("ERROR: Can't import %s, skipping its tests:" % name, file=sys.stderr)
        sys.excepthook(*sys.exc_info())
        continue
    if hasattr(module, 'suite'):
        suite.addTest(module.suite())
    else:
        suite.addTest(unittest.defaultTestLoader.loadTestsFromModule(module))
result = unittest.TextTestRunner(verbosity=1).run(suite)
sys.exit(not result.wasSuccessful())
"""
# Built from data by suite(): no `def test...`, no TestCase class, nothing pytest collects.
_SUITE_MODULE = """\
import unittest
from rst import shout

CASES = [(f'w{i}', f'W{i}') for i in range(12)]


def suite():
    s = unittest.TestSuite()
    for given, wanted in CASES:
        s.addTest(unittest.FunctionTestCase(lambda g=given, w=wanted: _check(g, w)))
    return s


def _check(given, wanted):
    assert shout(given) == wanted
"""
# docutils 0.17.1's test_tables.py: the error message csv gave for a NUL byte is taken at
# import; Python 3.11's csv takes NUL bytes, no exception, and `None[0]` raises TypeError.
_PY39_MODULE = """\
import csv
import unittest


def exception_data(func, *args):
    try:
        func(*args)
    except Exception as detail:
        return detail, detail.args


null_bytes_exception = exception_data(lambda: next(csv.reader(['a\\0b'])))[0]


class T(unittest.TestCase):
    def test_message(self):
        self.assertIn('NUL', str(null_bytes_exception))
"""


def _suite_script_repo(root: Path, classifiers: list[str]) -> Path:
    return repos.write_repo(
        root,
        {
            "setup.py": (
                "from setuptools import setup\n"
                "setup(name='rst', version='0.17', packages=['rst'],\n"
                f"      classifiers={classifiers!r})\n"
            ),
            "rst/__init__.py": "def shout(text):\n    return text.upper()\n",
            "test/alltests.py": _ALLTESTS,
            "test/test_shout.py": _SUITE_MODULE,
            "test/test_tables.py": _PY39_MODULE,
            "README.txt": "Testing\n=======\n\nRun::\n\n    cd <archive>/test\n    ./alltests.py\n",
        },
    )


_MIXIN_TESTS = (
    "import unittest\n\nfrom mixed import add\n\n\n"
    "class TestAddMixin:\n"
    + "".join(
        f"    def test_{n}(self):\n        assert add(self.base, {n}) == self.base + {n}\n\n"
        for n in range(10)
    )
    + "\nclass SmallAddTest(TestAddMixin, unittest.TestCase):\n"
    "    def setUp(self):\n        self.base = 1\n\n\n"
    "class BigAddTest(TestAddMixin, unittest.TestCase):\n"
    "    def setUp(self):\n        self.base = 10**20\n"
)
_RUNTESTS_MODULE = (
    "import sys\nimport unittest\n\n\ndef main():\n"
    "    suite = unittest.defaultTestLoader.loadTestsFromName('mixed.test.add_test')\n"
    "    result = unittest.TextTestRunner(verbosity=2).run(suite)\n"
    "    sys.exit(0 if result.wasSuccessful() else 1)\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


@pytest.mark.docker
@pytest.mark.slow
async def test_the_projects_runner_module_runs_its_suite_where_pytest_collects_its_mixins(
    tmp_path: Path, set_up: SetUp
) -> None:
    """tornado 6.1 (stop 44's fresh pins): its tests are unittest classes built from mixins
    named Test...Mixin, which pytest collects alone and fails (`'TestIOStreamMixin' object has
    no attribute 'io_loop'`); the project runs them with `python -m tornado.test.runtests`
    (runtests.sh). Before, the default pytest decided: runs/attribute-error, and the
    removed-name rule looked for a dependency to pin. The fixture: a mixin of 10 tests, two
    TestCase classes using it (20 tests), a runner module and a root runtests.sh."""
    repo = repos.write_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": repos.setuptools_pyproject("mixed", [], package="mixed"),
            "mixed/__init__.py": "def add(a, b):\n    return a + b\n",
            "mixed/test/__init__.py": "",
            "mixed/test/add_test.py": _MIXIN_TESTS,
            "mixed/test/runtests.py": _RUNTESTS_MODULE,
            "runtests.sh": '#!/bin/sh\n\ncd $(dirname $0)\n\npython -m mixed.test.runtests "$@"\n',
        },
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready and verdict.tests.get("passed") == 20, verdict.line()
    assert (verdict.test_command or "").endswith(" -m mixed.test.runtests"), verdict.test_command
    assert not [r for r in result.repairs if r["fix"] == "removed"], result.repairs


@pytest.mark.docker
@pytest.mark.slow
async def test_a_test_module_that_stops_the_projects_script_is_left_out_and_named(
    tmp_path: Path, set_up: SetUp
) -> None:
    """docutils 0.17.1 in the hard corpus: its own command (`cd test; ./alltests.py`, the
    README) stopped at test_tables.py, which raises TypeError at import on 3.11 (csv takes NUL
    bytes since 3.11), before any test; pytest then collected a fifth of the suite (the rest is
    built by each module's suite()), and the verdict was "runs/collection". The script runs
    again with that module left out (it skips a module that raises ImportError); the module,
    raising in its own code on a Python newer than the project declares (3.9), is named as
    written for another Python, and the 12 suite()-built tests decide."""
    repo = _suite_script_repo(
        tmp_path / "repo",
        [f"Programming Language :: Python :: 3.{m}" for m in (7, 8, 9)],
    )
    _, result = await set_up(repo)
    verdict = result.verdict
    assert verdict.ready and verdict.tests["passed"] == 12, verdict.line()
    assert "reposim_leave_out test/test_tables.py " in (verdict.test_command or "")
    assert (verdict.test_command or "").endswith("test/alltests.py"), verdict.test_command
    assert [s.split(":")[0] for s in verdict.skipped] == ["test/test_tables.py"], verdict.skipped
    assert "written for another Python" in verdict.skipped[0], verdict.skipped
    assert "TypeError" in verdict.skipped[0], verdict.skipped
    # The generated Dockerfile writes the same runner module its default command runs.
    from simulator.setup.envimage import dockerfile_text

    dockerfile = dockerfile_text(result, "reposim/base:bookworm-2", "c")
    assert "reposim_leave_out" in dockerfile.split("\nCMD ")[0], dockerfile


@pytest.mark.docker
@pytest.mark.slow
async def test_a_suite_script_in_the_test_folder_runs_when_discovery_finds_nothing(
    tmp_path: Path, set_up: SetUp
) -> None:
    """feedparser 6.0.8 in the hard corpus: its tests are one script, `tests/runtests.py`,
    which adds a test method per data file to its TestCase classes and runs them under its
    `__main__` guard, from the root (it globs `./tests/...`). No file has a name pytest or
    unittest discovery looks for ("Ran 0 tests": no-tests), and the sdist names no test
    command. The script is the suite: it runs from the root and decides."""
    cases = {f"tests/cases/case{i}.txt": f"{i} {2 * i}\n" for i in range(12)}
    repo = repos.package_repo(
        tmp_path / "repo",
        "feedy",
        "def twice(x):\n    return 2 * x\n",
        {
            **cases,
            "tests/runtests.py": (
                "import glob, os, sys, unittest\n"
                "import feedy\n\n"
                "class TestCase(unittest.TestCase):\n"
                "    def test_zero(self):\n        self.assertEqual(feedy.twice(0), 0)\n\n"
                "def build(path):\n"
                "    def test(self):\n"
                "        x, want = open(path).read().split()\n"
                "        self.assertEqual(feedy.twice(int(x)), int(want))\n"
                "    return test\n\n"
                "if __name__ == '__main__':\n"
                "    for n, path in enumerate(sorted(glob.glob(os.path.join('.', 'tests', "
                "'cases', '*.txt')))):\n"
                "        setattr(TestCase, 'test_%03d' % n, build(path))\n"
                "    suite = unittest.defaultTestLoader.loadTestsFromTestCase(TestCase)\n"
                "    result = unittest.TextTestRunner(verbosity=1).run(suite)\n"
                "    sys.exit(not result.wasSuccessful())\n"
            ),
        },
    )
    _, result = await set_up(repo)
    assert result.verdict.ready and result.verdict.tests["passed"] == 13, result.verdict.line()
    assert (result.verdict.test_command or "").endswith("tests/runtests.py")
