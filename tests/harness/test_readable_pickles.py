"""Values a traced harness keeps as pickles are shown readably beside them (a comment above the
case); the pickle is still what runs."""

from __future__ import annotations

import collections
import itertools
import operator
import pickle
from pathlib import Path

from simulator.harness.runtime.reposim_tracer import shown
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from tests.conftest import RepoFactory

BAG = '''\
"""Keeping the last few items."""
import collections
import itertools


class Box:
    def __init__(self, size):
        self.size = size


def tail(items, n):
    """The last `n` items, as a deque bounded to `n`."""
    if n <= 0:
        return collections.deque()
    return collections.deque(items, maxlen=n)


def grow(box, by):
    """A bigger box (never a smaller one)."""
    if by < 0:
        raise ValueError("a box does not shrink")
    return Box(box.size + by)
'''

TESTS = """\
from bag.keep import Box, grow, tail


def test_tail():
    assert list(tail([1, 2, 3], 2)) == [2, 3]
    assert list(tail([1, 2, 3], 0)) == []


def test_grow():
    assert grow(Box(1), 2).size == 3
"""


class Point:
    def __init__(self, x: int) -> None:
        self.x = x


def test_the_readable_form_drops_addresses_and_names_functions() -> None:
    assert shown(collections.deque([1, 2], maxlen=2)) == "deque([1, 2], maxlen=2)"
    assert shown(operator.add) == "_operator.add"
    assert shown(Point) == f"{__name__}.Point"
    assert shown(Point(1)) == f"<{__name__}.Point object>"
    assert len(shown(list(range(10_000)))) < 60
    # an iterator: what it yields, read from a copy (the value itself is not consumed)
    numbers = map(str, range(20))
    assert shown(numbers, pickle.dumps(numbers, protocol=4)) == (
        "<map yielding ['0', '1', '2', '3', '4', '5', '6', '7', …]>"
    )
    assert next(numbers) == "0"
    # an iterator that would run project code (or never end) is not read: its repr stands
    seen: list[int] = []
    mapped = map(_remember(seen), [1, 2])
    assert shown(mapped, pickle.dumps(mapped, protocol=4)) == "<map object>"
    assert seen == []
    endless = filter(None, itertools.repeat(0))
    assert shown(endless, pickle.dumps(endless, protocol=4)) == "<filter object>"


class _remember:
    def __init__(self, seen: list[int]) -> None:
        self.seen = seen

    def __call__(self, value: int) -> int:
        self.seen.append(value)
        return value


async def test_a_traced_harness_shows_its_pickled_values_readably(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(
        {"bag/__init__.py": "", "bag/keep.py": BAG, "tests/test_keep.py": TESTS}, name="bag"
    )
    session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl")
    try:
        targets = find_targets(repo)
        options = HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=4))
        problems = await make_problems(session, targets, options)
    finally:
        await session.close()
    by_name = {p.target["qualname"]: p for p in problems}
    tail = by_name["tail"]
    assert tail.harness is not None and tail.validation is not None
    text = tail.harness.text
    # a deque is rebuilt by a constructor expression (issue 22), not pickled
    assert "returns=C('collections:deque', [2, 3], 2)," in text
    assert "returns=C('collections:deque', [], None)," in text
    assert "P('" not in text
    assert tail.validation.passed, tail.validation.log
    grow = by_name["grow"]
    assert grow.harness is not None
    # a plain object is rebuilt by a constructor expression, not pickled (issue 22)
    assert "args=(O('bag.keep:Box', size=1), 2)," in grow.harness.text
    assert "returns=O('bag.keep:Box', size=3)," in grow.harness.text
