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
