"""A fixture repository to curate: one function its tests cover well, one they barely cover,
one they cover without checking much."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.dataset.schema import CurationState, Harness, Problem, Validation
from simulator.harness.mutate import mutants
from simulator.session import Session
from tests.conftest import project_fixtures
from tests.harness.conftest import CLAMP
from widgets.curation.app import target_problems

MATH = (
    CLAMP
    + '''

def sign(number, unit=1):
    """`unit`, 0 or -`unit` by the sign of `number`."""
    if number > 0:
        return unit
    if number < 0:
        return -unit
    return number  # zero (or NaN) as it came


def scale(values, factor):
    """Every value times `factor`; an empty list stays empty."""
    if not values:
        return []
    return [v * factor for v in values]
'''
)

TESTS = """\
import pytest

from tools.math import clamp, scale, sign


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10
    with pytest.raises(ValueError):
        clamp(1, 5, 0)


def test_sign_positive():
    assert sign(7) == 1


def test_scale():
    assert scale([1, 2], 3) == [3, 6]
    assert scale([], 3) == []
"""

PROJECT = {"tools/__init__.py": "", "tools/math.py": MATH, "tests/test_math.py": TESTS}


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home / "reposim"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The curation screen saves decisions as they are made, by default into the current
    folder (`<repo>-problems.jsonl`): never the checkout the tests run from."""
    monkeypatch.chdir(tmp_path)


tools_repo, session = project_fixtures(
    PROJECT, repo="tools_repo", name="tools", trajectory="curation.jsonl"
)


HARNESS = "from tools.math import sign\n\nCASES = [\n    dict(args=(7,), returns=1),\n]\n"


def math_line(text: str) -> int:
    return MATH.splitlines().index(text) + 1


def figured_problems(session: Session) -> list[Problem]:
    """The fixture's targets with fixed figures (no generator run): clamp accepted (100%),
    scale rejected (100%), sign generated with 25% coverage and two surviving mutants (their
    diffs made by the real mutator)."""
    problems = target_problems(session)
    figures = {"clamp": (1.0, 0.9, "accepted"), "scale": (1.0, 0.5, "rejected")}
    figures["sign"] = (0.25, 0.33, "generated")
    for problem in problems:
        name = problem.target["qualname"]
        coverage, mutation, state = figures[name]
        start, end = problem.target["def_line"], problem.target["end_line"]
        statements = list(range(start + 2, end + 1))
        missed = [math_line("        return -unit")] if name == "sign" else []
        partial = [math_line("    if number < 0:")] if missed else []
        survivors = []
        if name == "sign":
            found = mutants(MATH, start, "sign", path="tools/math.py")
            line = math_line("    if number < 0:")
            survivors = [m.summary() for m in found if m.line == line and m.operator != "constant"]
        problem.harness = Harness("traced", HARNESS, cases=1)
        problem.validation = Validation(
            runs=1,
            tests=1,
            passed=True,
            coverage={
                "total": 4,
                "covered": round(coverage * 4),
                "lines_total": len(statements),
                "lines_covered": len(statements) - len(missed),
                "missing": [],
                "rate": coverage,
                "statements": statements,
                "missed_lines": missed,
                "partial_lines": partial,
            },
            mutation={"total": 3, "killed": 1, "score": mutation, "survivors": survivors},
            verdict="valid" if coverage >= 0.8 else "invalid",
            seconds=1.5,
        )
        problem.curation.mark(CurationState(state), by="ada", reason="")
    return problems
