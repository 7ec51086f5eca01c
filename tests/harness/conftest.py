"""A fixture repository with known functions, hand-checked coverage and mutation figures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path

import pytest

from simulator.dataset.schema import Problem
from simulator.harness.env import PythonEnv
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from tests.conftest import RepoFactory, project_fixtures

CLAMP = '''\
"""Small functions with known branches."""


def clamp(value, low, high):
    """Clamp `value` into [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    if value < low:
        return low
    if value > high:
        return high
    return value
'''
"""A module of one function with known branches (other folders' fixtures start from it)."""

CLAMP_TESTS = """\
def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_outside():
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10


def test_clamp_bad_bounds():
    with pytest.raises(ValueError):
        clamp(1, 5, 0)
"""

CALC = (
    CLAMP
    + '''

class Account:  # pragma: no cover
    """A bank account; the pragma above must not hide its methods' branches."""

    def __init__(self, balance=0):
        self.balance = balance

    def withdraw(self, amount):
        """Take `amount` out and return the balance; refuse overdrafts."""
        if amount > self.balance:
            raise ValueError("insufficient funds")
        self.balance -= amount
        return self.balance


def untested(values):
    """Never called by the tests."""
    total = 0
    for v in values:
        total += v
    return total
'''
)

TESTS = (
    "import pytest\n\nfrom shapes.calc import Account, clamp\n\n\n"
    + CLAMP_TESTS
    + """

def test_withdraw():
    account = Account(10)
    assert account.withdraw(3) == 7
    assert account.balance == 7
"""
)

SAME_AS_REFERENCE = """\
@pytest.mark.parametrize(
    "args", [(5, 0, 10), (-1, 0, 10), (11, 0, 10), (0, 0, 10), (10, 0, 10), (3, 3, 3)]
)
def test_same_as_reference(args):
    assert same(candidate(*args), reference(*args))


def test_bad_bounds():
"""
"""The start of a model-written harness for `clamp`: the candidate against the reference on
every branch's arguments, then a test of the bad bounds (its body is each caller's)."""

CANDIDATE_REFUSES_BAD_BOUNDS = """\
    with pytest.raises(ValueError):
        candidate(1, 5, 0)
"""

CLAMP_EQUIVALENCE = SAME_AS_REFERENCE + CANDIDATE_REFUSES_BAD_BOUNDS
"""A model-written harness for `clamp` that the reference passes and a wrong candidate fails."""


def fenced(code: str, before: str = "") -> str:
    """A model's reply: `before`, then `code` in a fenced python block."""
    return f"{before}```python\n{code}```"


def clamp_reply(returns: str, *, message: str | None = "low must not exceed high") -> str:
    """A model's reply holding a `clamp` that returns `returns`, raising ValueError(`message`)
    on bad bounds first (no check at all where `message` is None)."""
    check = (
        f'    if high < low:\n        raise ValueError("{message}")\n'
        if message is not None
        else ""
    )
    return fenced(
        f'def clamp(value, low, high):\n    """Clamp `value` into [low, high]."""\n{check}'
        f"    return {returns}\n"
    )


PROJECT = {
    "shapes/__init__.py": "",
    "shapes/calc.py": CALC,
    "tests/test_calc.py": TESTS,
}

# What `return high` is replaced with to plant a bug.
PLANTED_BUG = ("        return high\n", "        return high - 1\n")


calc_repo, session = project_fixtures(
    PROJECT, repo="calc_repo", name="shapes", trajectory="harness.jsonl"
)


Planted = Mapping[str, tuple[str, str, str]]
"""Target qualname -> (file, what the reference says, the planted bug)."""


Traced = tuple[Session, dict[str, Problem]]
"""What a traced-problems fixture gives: its session, and its problems by target qualname."""


def traced_fixture(
    files: Mapping[str, str], name: str, qualnames: Iterable[str]
) -> Callable[..., AsyncIterator[Traced]]:
    """A fixture: a session on a repository of `files` (tmp_path/`name`) and the traced
    problems (one repeat, no mutants) of the targets named `qualnames`, by qualname; every one
    of them must be found. A test module binds it: `traced = traced_fixture(...)`."""
    wanted = sorted(qualnames)

    async def traced(make_repo: RepoFactory, tmp_path: Path) -> AsyncIterator[Traced]:
        repo = make_repo(dict(files), name=name)
        session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl")
        targets = [t for t in find_targets(repo, filters=[]) if t.qualname in wanted]
        assert sorted(t.qualname for t in targets) == wanted
        problems = await make_problems(
            session, targets, HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=0))
        )
        yield session, {p.target["qualname"]: p for p in problems}
        await session.close()

    return pytest.fixture(traced)


def assert_harnessed_and_valid(problems: Mapping[str, Problem]) -> None:
    """Every problem has a harness with cases, and the reference passes it."""
    for qualname, problem in problems.items():
        assert problem.harness is not None and problem.harness.cases > 0, (
            qualname,
            problem.curation.reasons,
        )
        assert problem.validation is not None and problem.validation.passed, (
            qualname,
            problem.validation.log if problem.validation else None,
        )


async def assert_planted_bugs_caught(
    session: Session, problems: Mapping[str, Problem], planted: Planted, suite: str
) -> None:
    """Plant each bug in turn: the repository's own tests (`suite`) and the target's harness
    both fail on it; the reference is put back after each."""
    env = PythonEnv()
    for qualname, (path, good, bad) in planted.items():
        problem = problems[qualname]
        assert problem.harness is not None
        source = (await session.read_bytes(path)).decode()
        assert source.count(good) == 1, (qualname, good)
        await session.write(path, source.replace(good, bad))
        try:
            suite_run = await session.run_tests(suite, command=env.pytest())
            assert not suite_run.passed, f"the repository's tests miss the bug in {qualname}"
            run = await session.run_tests(
                problem.harness.path, command=env.pytest(".reposim/harness")
            )
            assert not run.passed, f"the harness of {qualname} misses the planted bug"
        finally:
            await session.write(path, source)
