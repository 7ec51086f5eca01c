"""F5's test command: set per repository (remembered), else detected, else pytest."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from textual.widgets import Input, OptionList, Static

from simulator import test_command
from simulator.session import Session
from tests.conftest import SessionOn
from tests.ui.helpers import f5_run, running, wait_for
from widgets.app import RepoSimApp
from widgets.tests_panel import TestsPanel

RepoFactory = Callable[..., Path]

C_REPO = {
    "add.c": "int add(int a, int b) { return a + b; }\n",
    "test_add.c": (
        "#include <stdio.h>\nint add(int, int);\n"
        'int main(void) { if (add(2, 2) != 4) return 1; puts("1 test passed"); return 0; }\n'
    ),
    "Makefile": "test:\n\tcc -o test_add test_add.c add.c && ./test_add\n",
}


@asynccontextmanager
async def opened(repo: Path, session_on: SessionOn) -> AsyncIterator[tuple[RepoSimApp, Any]]:
    """The app on `repo` at 120x40, its test command chosen as `reposim open` chooses it: the
    one remembered for the repository, else the one detected."""
    session = await session_on(repo, "t.jsonl", test_command=test_command.choose(repo, None))
    async with running(session) as (app, pilot):
        yield app, pilot


def test_a_c_repository_gets_its_make_target_and_cmake_gets_ctest(
    make_repo: RepoFactory,
) -> None:
    assert test_command.detect(make_repo(C_REPO, name="c")) == "make test"
    cmake = make_repo({"CMakeLists.txt": "project(x C)\n", "x.c": "int x;\n"}, name="cm")
    assert "ctest --test-dir build" in (test_command.detect(cmake) or "")
    python = make_repo({"pkg/__init__.py": "", "tests/test_x.py": "def test_x(): pass\n"})
    assert test_command.detect(python) is None  # pytest, the default


def test_a_given_command_is_remembered_per_repository(make_repo: RepoFactory) -> None:
    one, two = make_repo(C_REPO, name="one"), make_repo(C_REPO, name="two")
    assert test_command.choose(one, "make check") == "make check"
    assert test_command.choose(one, None) == "make check"  # next time, without the option
    assert test_command.choose(two, None) == "make test"  # another repository: detected
    assert test_command.choose(one, "") == "make test"  # an empty one forgets it
    assert test_command.remembered(one) is None


async def test_f5_on_a_c_repository_runs_its_tests(
    make_repo: RepoFactory, session_on: SessionOn
) -> None:
    async with opened(make_repo(C_REPO, name="clib"), session_on) as (app, pilot):
        tests = await f5_run(pilot, app)
        assert tests.result is not None
        assert tests.result.passed and tests.result.command == "make test"
        assert "1 test passed" in tests.result.output


# A C library whose test tooling carries two Python helper scripts (issue 26, major 3).
C_WITH_HELPERS = {
    **C_REPO,
    "Makefile": (
        "test:\n\tcc -o test_add test_add.c add.c && ./test_add\n"
        "check:\n\t@echo 'check: 3 cases ok'\n"
    ),
    "tests/tools/gen_cases.py": "print('generating cases')\n",
    "tests/tools/lib/compare.py": "def same(a, b):\n    return a == b\n",
}


def test_helper_scripts_do_not_make_a_c_library_python(make_repo: RepoFactory) -> None:
    assert test_command.detect(make_repo(C_WITH_HELPERS, name="clib")) == "make test"
    # Python packaging wins, and a Python project's Makefile without C sources stays pytest
    packaged = make_repo({**C_WITH_HELPERS, "pyproject.toml": "[project]\nname='x'\n"})
    assert test_command.detect(packaged) is None
    python_make = make_repo(
        {"Makefile": "test:\n\tpytest\n", "pkg/__init__.py": "", "tests/test_x.py": ""},
        name="pymake",
    )
    assert test_command.detect(python_make) is None


async def test_the_tests_panel_shows_the_command_and_changes_it(
    make_repo: RepoFactory, session_on: SessionOn
) -> None:
    repo = make_repo(C_WITH_HELPERS, name="clib")
    async with opened(repo, session_on) as (app, pilot):
        await pilot.press("alt+3")
        tests = app.query_one(TestsPanel)
        field = tests.query_one("#tests-command", Input)
        assert field.value == "make test"
        await pilot.press("f5")
        await wait_for(pilot, lambda: tests.result is not None, "the test run")
        assert tests.result is not None and tests.result.command == "make test"
        assert tests.result.passed, tests.result.output
        summary = str(tests.query_one("#tests-summary", Static).render())
        assert "make test" in summary, summary
        # change it in the panel: Enter keeps it for the repository and runs it
        field.focus()
        await pilot.press("ctrl+a", "ctrl+k", *"make check", "enter")
        await wait_for(
            pilot,
            lambda: tests.result is not None and tests.result.command == "make check",
            "the changed command's run",
        )
        assert "3 cases ok" in tests.result.output
        assert app.session.test_command == "make check"
        assert test_command.remembered(repo) == "make check"


async def test_e_in_the_tests_list_edits_the_command_by_keyboard(session: Session) -> None:
    async with running(session, (80, 24)) as (app, pilot):
        await pilot.press("alt+3", "alt+3")
        tests = app.query_one(TestsPanel)
        field = tests.query_one("#tests-command", Input)
        await wait_for(pilot, lambda: app.focused is tests.query_one("#tests-list"), "the list")
        await pilot.press("e")
        await wait_for(pilot, lambda: field.has_focus, "the command input")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not field.has_focus, "back to the list")


UNITTEST_REPO = {
    "calc/__init__.py": "",
    "calc/ops.py": "def ratio(a, b):\n    return a / b\n",
    "tests/__init__.py": "",
    "tests/test_ops.py": (
        "import unittest\n\nfrom calc.ops import ratio\n\n\n"
        "class Ops(unittest.TestCase):\n"
        "    def test_half(self):\n        self.assertEqual(ratio(1, 2), 0.5)\n\n"
        "    def test_zero(self):\n"
        '        """Dividing by zero gives zero."""\n'
        "        self.assertEqual(ratio(1, 0), 0)\n\n"
        "    def test_wrong(self):\n        self.assertEqual(ratio(4, 2), 3)\n\n"
        "    @unittest.skip('not today')\n"
        "    def test_later(self):\n        pass\n"
    ),
}


async def test_f5_with_a_unittest_command_shows_a_row_per_test(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """The command setup leaves when only unittest runs (an offline container: no pytest in
    its venv) still gives F5 a row per test with its outcome, and Enter on a failure opens the
    frame that raised — not unittest's dots as plain text."""
    repo = make_repo(UNITTEST_REPO, name="unit")
    command = "python3 -m unittest discover -s tests -t . -p 'test*.py'"
    session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl", test_command=command)
    try:
        async with running(session) as (app, pilot):
            await pilot.press("f5")
            tests = app.query_one(TestsPanel)
            await wait_for(pilot, lambda: tests.result is not None, "the test run")
            result = tests.result
            assert result is not None and result.structured, result
            outcomes = {t.id: t for t in result.tests}
            assert {k: t.outcome for k, t in outcomes.items()} == {
                "tests.test_ops.Ops.test_half": "passed",
                "tests.test_ops.Ops.test_zero": "error",
                "tests.test_ops.Ops.test_wrong": "failed",
                "tests.test_ops.Ops.test_later": "skipped",
            }
            zero = outcomes["tests.test_ops.Ops.test_zero"]
            assert (zero.file, zero.line) == ("calc/ops.py", 2), zero
            assert "ZeroDivisionError" in zero.message
            wrong = outcomes["tests.test_ops.Ops.test_wrong"]
            assert (wrong.file, wrong.line) == ("tests/test_ops.py", 15), wrong
            assert "AssertionError: 2.0 != 3" in wrong.message
            assert result.command == command  # as set, without the -v F5 adds
            summary = str(tests.query_one("#tests-summary", Static).render())
            assert "1 passed, 1 failed, 1 error, 1 skipped" in summary, summary
            rows = tests.query_one("#tests-list", OptionList)
            assert rows.option_count == 4
            assert "tests/test_ops.py:15" in str(rows.get_option_at_index(0).prompt)  # failed
            assert "calc/ops.py:2" in str(rows.get_option_at_index(1).prompt)  # then errors
    finally:
        await session.close()
