"""State the test run puts on classes (issue 22, the cause of boolean.py's calls dropped as "not
reproducible"): `BooleanAlgebra()` sets `TRUE`, `FALSE`, `AND`, `OR`... as attributes of its
expression classes, and methods read them through `self` (`self.__class__(*args)` gives a node
whose `identity = self.TRUE`). A harness process that never builds an algebra sees the
classes as their module left them (`TRUE = None`), so every such call differs there.

A small real repository in that style: its traced harnesses keep every call, write the class
state readably, and catch a bug planted in the target that the repository's tests catch. The
same repository's pytest configuration collects every `*.py` and recurses into dot
directories (boolean.py's setup.cfg): the harness's own files must never be collected."""

from __future__ import annotations

import json

from simulator.harness.format import readable_share
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

ALGEBRA = '''\
"""Sums of leaves over an algebra whose zero the algebra puts on the classes."""


class Algebra:
    def __init__(self, zero="0"):
        self.ZERO = Leaf(zero)
        for kind in (Leaf, Sum):
            kind.ZERO = self.ZERO
            kind.algebra = self


class Leaf:
    ZERO = None  # set by Algebra()

    def __init__(self, name):
        self.name = name


class Sum:
    ZERO = None  # set by Algebra()
    algebra = None

    def __init__(self, *terms):
        self.terms = terms

    def subs(self, mapping):
        """This sum with the leaves `mapping` names replaced (by zero where it maps to None)."""
        out = []
        for term in self.terms:
            if isinstance(term, Sum):
                out.append(term.subs(mapping))
            elif term.name in mapping:
                new = mapping[term.name]
                out.append(self.ZERO if new is None else Leaf(new))
            else:
                out.append(term)
        return self.__class__(*out).pruned()

    def pruned(self):
        """This sum without its zeros (zero itself when nothing is left)."""
        kept = [t for t in self.terms if not (isinstance(t, Leaf) and t.name == self.ZERO.name)]
        return self.__class__(*kept) if kept else self.ZERO
'''

TESTS = """\
import unittest

from alg.algebra import Algebra, Leaf, Sum


def names(value):
    if isinstance(value, Leaf):
        return value.name
    return [names(t) for t in value.terms]


class SubsTest(unittest.TestCase):
    def setUp(self):
        self.algebra = Algebra()

    def test_rename(self):
        s = Sum(Leaf("a"), Sum(Leaf("b"), Leaf("c")))
        assert names(s.subs({"a": "x"})) == ["x", ["b", "c"]]
        assert names(s.subs({"b": "y", "c": "z"})) == ["a", ["y", "z"]]

    def test_drop(self):
        s = Sum(Leaf("a"), Sum(Leaf("b"), Leaf("c")))
        assert names(s.subs({"b": None})) == ["a", ["c"]]
        assert s.subs({"a": None, "b": None, "c": None}) is self.algebra.ZERO
"""

PROJECT = {
    "alg/__init__.py": "",
    "alg/algebra.py": ALGEBRA,
    "tests/test_algebra.py": TESTS,
    # boolean.py's pytest configuration: every .py file is a test file, and dot directories
    # are not left out (the harness's .reposim/ is then collected unless it is ignored)
    "setup.cfg": "[tool:pytest]\nnorecursedirs = .git build\npython_files = *.py\n",
}

PLANTED = {
    "Sum.subs": ("alg/algebra.py", "self.ZERO if new is None", "Leaf(None) if new is None"),
}

traced = traced_fixture(PROJECT, "alg", PLANTED)


async def test_class_state_the_tests_set_is_kept_and_no_call_is_dropped(traced: Traced) -> None:
    session, problems = traced
    subs = problems["Sum.subs"]
    assert_harnessed_and_valid(problems)
    assert subs.harness is not None
    # every recorded call reproduces on the reference: none is dropped as not reproducible
    notes = " / ".join(subs.harness.notes)
    assert "not reproducible" not in notes, notes
    assert subs.harness.cases == 8, notes  # 4 calls by the tests, 4 by subs itself
    # the classes' state is written once, readably, and each case names it
    text = subs.harness.text
    assert "CLASS_STATE" in text and "classes=CLASS_STATE[0]" in text, text
    assert "'alg.algebra:Sum': {'ZERO': " in text, text
    assert readable_share(text)[0] == readable_share(text)[1] > 0, text
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_algebra.py")


async def test_the_harness_files_are_never_collected_as_the_projects_tests(
    traced: Traced,
) -> None:
    session, _ = traced
    lines = session.trajectory_path.read_text(encoding="utf-8").splitlines()
    steps = [json.loads(line).get("payload") or {} for line in lines[1:]]
    counts = [
        s["detail"]["collection_errors"]
        for s in steps
        if "collection_errors" in (s.get("detail") or {})
    ]
    # the traced run's step says how many collection errors it met: none here (before, the
    # two copies of reposim_harness_support.py under .reposim/ were collected: 2 errors)
    assert counts == [0], counts
