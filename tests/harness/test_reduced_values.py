"""Values a pickle keeps through their own reduction — an exception with attributes beside its
args (marshmallow's ValidationError), a bound method passed as a callback, an object of a class
with its own __reduce__ — are written as constructor expressions, not pickled (issue 22 item 7:
"`__reduce__` with plain arguments"); a harness made of them still catches a bug the
repository's tests catch."""

from __future__ import annotations

from pathlib import Path

from simulator.harness.runtime import reposim_harness_support as support
from simulator.harness.runtime.reposim_tracer import encode
from tests.conftest import RepoFactory
from tests.harness.planted import check_planted

RULES = '''\
"""Checking a form field by field."""


class Invalid(ValueError):
    def __init__(self, message, field="_form"):
        super().__init__(message)
        self.field = field


class Rules:
    def __init__(self, low):
        self.low = low

    def check(self, name, value):
        """An Invalid when `value` is below the lowest allowed, else None."""
        if value < self.low:
            return Invalid(f"{name} is below {self.low}", field=name)
        return None


def errors(check, form):
    """What `check` finds wrong in a form, field by field, in order."""
    found = []
    for name, value in form.items():
        problem = check(name, value)
        if problem is not None:
            found.append(problem)
    return found
'''

TESTS = """\
from forms.rules import Rules, errors


def test_errors():
    rules = Rules(3)
    found = errors(rules.check, {"a": 1, "b": 5, "c": 2})
    assert [e.field for e in found] == ["a", "c"]
    assert str(found[0]) == "a is below 3"
    assert errors(rules.check, {}) == []
"""

# target -> (what the reference says, the planted bug): bugs the repository's tests catch
PLANTED = {
    "errors": ("found.append(problem)", "found.insert(0, problem)"),
    "Rules.check": ("field=name)", 'field="_form")'),
}


async def test_exceptions_and_bound_methods_are_rebuilt_readably_and_catch_planted_bugs(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    callback = "C('builtins:getattr', O('forms.rules:Rules', low=3), 'check')"
    error = "F(C('forms.rules:Invalid', 'a is below 3'), field='a')"
    await check_planted(
        make_repo, tmp_path, "forms", (RULES, TESTS), PLANTED, {"errors": [callback, error]}
    )


class Point:
    def __new__(cls, x: int, y: int) -> Point:  # (made its own way: only its reduction rebuilds it)
        made = super().__new__(cls)
        made.x, made.y = x, y
        return made

    def __reduce__(self) -> tuple[type[Point], tuple[int, int]]:
        return (Point, (self.x, self.y))


def test_an_own_reduce_and_an_exception_s_fields_are_kept() -> None:
    assert encode(Point(1, 2), 1000) == {"r": f"C('{__name__}:Point', 1, 2)"}
    error = KeyError("k")
    error.note = "kept"  # type: ignore[attr-defined]
    encoded = encode(error, 1000)
    assert encoded == {"r": "F(C('builtins:KeyError', 'k'), note='kept')"}
    rebuilt = eval(encoded["r"], vars(support))
    assert support.same(rebuilt, error) and not support.same(rebuilt, KeyError("k"))


class Link:
    """cachetools' TTL link: its reduction keeps the key, not the neighbours."""

    def __init__(self, key: str, after: Link | None = None) -> None:
        self.key, self.after = key, after

    def __reduce__(self) -> tuple[type[Link], tuple[str]]:
        return (Link, (self.key,))


def test_a_reduction_that_keeps_less_than_the_fields_does_not_replace_them() -> None:
    chain = Link("a", Link("b"))
    encoded = encode(chain, 1000)
    assert encoded == {
        "r": f"O('{__name__}:Link', key='a', after=O('{__name__}:Link', key='b', after=None))"
    }


class Countdown:
    """An iterator whose fields a constructor expression could write."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Countdown:
        return self

    def __next__(self) -> int:
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n


def test_recording_an_iterator_does_not_consume_it() -> None:
    """Checking an expression compares what the values yield: an iterator the test run is
    still to read (parse's findall result) must come out of the recording as it went in."""
    items = Countdown(3)
    encode(items, 1000)
    assert list(items) == [2, 1, 0]
