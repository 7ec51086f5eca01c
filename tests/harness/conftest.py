"""A fixture repository with known functions, hand-checked coverage and mutation figures."""

from __future__ import annotations

from tests.conftest import project_fixtures

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
