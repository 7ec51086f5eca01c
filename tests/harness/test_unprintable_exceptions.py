"""An exception whose `str()` raises (glom 23.5.0: `glom(1, S.a)` raises a PathAccessError whose
message builds a Path that refuses the `S` root, so `str()` of it raises ValueError). The
tracer wrote each raised exception's message with `str()` inside its trace function, so the
ValueError escaped into the test: glom's `test_s_magic` failed only under the tracer, was rerun
without it, and `_s_first_magic`'s KeyError branch was never recorded (branch coverage 50%). A
small real repository in that shape; its traced harness keeps the raising call and catches a
bug planted in that branch that the repository's own tests catch."""

from __future__ import annotations

from simulator.harness.runtime import reposim_harness_support as support
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

SCOPE = '''\
"""Lookups in a scope whose error cannot be shown (its message is built lazily and fails)."""


class Missing(KeyError):
    def __init__(self, key, root):
        self.key, self.root = key, root

    def __str__(self):
        if self.root != "T":
            raise ValueError(f"path segment must be path from T, not {self.root}")
        return f"could not access {self.key!r}"


def lookup(scope, key, root="S"):
    """`scope[key]`; Missing (from `root`) when there is none."""
    try:
        return scope[key]
    except KeyError:
        raise Missing(key, root) from None
'''

TESTS = """\
import pytest

from scopes.lookup import Missing, lookup


def test_lookup():
    assert lookup({"a": 1}, "a") == 1
    with pytest.raises(Missing):
        lookup({}, "b")
    with pytest.raises(Missing):
        lookup({}, "c", root="T")
"""

PROJECT = {"scopes/__init__.py": "", "scopes/lookup.py": SCOPE, "tests/test_lookup.py": TESTS}
PLANTED = {"lookup": ("scopes/lookup.py", "raise Missing(key, root) from None", "return None")}

traced = traced_fixture(PROJECT, "scopes", PLANTED)


async def test_an_exception_whose_str_raises_is_recorded_and_compared(traced: Traced) -> None:
    session, problems = traced
    # before: the test failed under the tracer (the ValueError of str() escaped into it), so
    # the raising calls were never recorded and the planted bug went uncaught
    assert_harnessed_and_valid(problems)
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_lookup.py")
    harness = problems["lookup"].harness
    assert harness is not None
    assert "raises=('scopes.lookup.Missing', '<str() failed: ValueError>')," in harness.text
    assert "raises=('scopes.lookup.Missing', \"could not access 'c'\")," in harness.text


def test_a_message_that_cannot_be_made_is_named_by_what_failed() -> None:
    class Unshown(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    assert support.message(Unshown()) == "<str() failed: ValueError>"
    assert support.message(KeyError("k")) == "'k'"
