"""Arguments that hold one object between them are kept as one value (issue 22, "no reproducible
call"): sqlparse 0.4.4's `ReindentFilter._flatten_up_to_token(self, token)` looks for `token`
among the nodes of `self._curr_stmt`, comparing with `is` (Token has no __eq__). Each argument
was encoded apart, so a replayed `token` was a copy that no node of the copied statement is:
the generator yielded one token more, and all 40 recorded calls differed on the reference. A
small real repository with both shapes (a method whose argument is a node of a tree its object
holds, a function given a list and one of its items): the calls are kept, readably, and a bug
planted in each target that the repository's own tests catch is caught by its harness; a call
whose arguments share nothing keeps one encoding per argument."""

from __future__ import annotations

import base64
import pickle

import pytest

from simulator.harness.format import TracedCall, derived_count, readable_share, render_traced
from simulator.harness.runtime import reposim_harness_support as support
from simulator.harness.runtime.reposim_tracer import _shares
from simulator.harness.target import Target
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

TREE = '''\
"""Trees of nodes compared by identity (no __eq__), as sqlparse's tokens are."""


class Node:
    def __init__(self, value, children=()):
        self.value = value
        self.children = list(children)

    def leaves(self):
        if not self.children:
            yield self
        for child in self.children:
            yield from child.leaves()


class Walker:
    """Walks a tree's leaves up to a given one (as sqlparse's ReindentFilter does)."""

    def __init__(self, tree):
        self.tree = tree

    def before(self, node):
        """The leaves before `node`, one at a time."""
        for leaf in self.tree.leaves():
            if leaf == node:
                break
            yield leaf


def index_in(leaves, leaf, start=0):
    """Where `leaf` is among `leaves` from `start` on (from the end when negative), or -1."""
    if start < 0:
        start = len(leaves) + start
    for at in range(start, len(leaves)):
        if leaves[at] == leaf:
            return at
    return -1


def position(leaves, leaf):
    """Where `leaf` is among `leaves`, or -1."""
    for index, item in enumerate(leaves):
        if item == leaf:
            return index
    return -1
'''

TESTS = """\
from walk.tree import Node, Walker, index_in, position


def tree():
    a, b, c = Node("a"), Node("b"), Node("c")
    return Node("root", [Node("x", [a, b]), c]), a, b, c


def test_before():
    root, a, b, c = tree()
    walker = Walker(root)
    assert [n.value for n in walker.before(c)] == ["a", "b"]
    assert [n.value for n in walker.before(b)] == ["a"]


def test_position():
    root, a, b, c = tree()
    leaves = list(root.leaves())
    assert position(leaves, b) == 1
    assert position(leaves, c) == 2
    assert position(leaves, Node("b")) == -1


def test_index_in():
    root, a, b, c = tree()
    leaves = list(root.leaves())
    assert index_in(leaves, a, start=0) == 0
    assert index_in(leaves, c, start=1) == 2
"""

PROJECT = {"walk/__init__.py": "", "walk/tree.py": TREE, "tests/test_tree.py": TESTS}

# target qualname -> (what the reference says, the planted bug), both caught by the tests
PLANTED = {
    "Walker.before": ("                break\n", "                continue\n"),
    "position": ("return index\n", "return index + 1\n"),
    "index_in": ("range(start, len(leaves))", "range(start + 1, len(leaves))"),
}

traced = traced_fixture(PROJECT, "walk", PLANTED)


async def test_arguments_sharing_an_object_are_replayed_together(traced: Traced) -> None:
    session, problems = traced
    # every call is kept and reproducible (before: Walker.before had none, position one)
    assert_harnessed_and_valid(problems)
    before, found = problems["Walker.before"].harness, problems["position"].harness
    assert before is not None and found is not None
    assert before.cases == 2 and found.cases == 3, (before.notes, found.notes)
    # the calls with a node of the tree are passed as one value, readably (no pickle); the
    # call whose arguments share nothing keeps one encoding per argument
    for text in (before.text, found.text):
        assert readable_share(text) == (readable_share(text)[1],) * 2
    assert before.text.count("        shared=G(") == 2
    assert found.text.count("        shared=G(") == 2
    # one argument holds the other's object, written once (N) and referred to (R)
    for text in (before.text, found.text):
        shared = [line for line in text.splitlines() if line.startswith("        shared=G(")]
        assert all("R(" in line for line in shared)
    alone = [line for line in found.text.splitlines() if line.startswith("        args=(")]
    assert len(alone) == 1 and "O('walk.tree:Node', value='b'" in alone[0]
    # the shared calls seed derived cases too, their arguments taken apart: `start` changed
    # takes the branches no test takes (a negative start, a leaf not found); before, such
    # calls seeded none (coverage 67%)
    index_in = problems["index_in"]
    assert index_in.harness is not None and derived_count(index_in.harness.text) >= 1
    assert index_in.validation is not None and index_in.validation.coverage_rate == 1.0

    planted = {name: ("walk/tree.py", good, bad) for name, (good, bad) in PLANTED.items()}
    await assert_planted_bugs_caught(session, problems, planted, "tests/test_tree.py")


class Item:
    def __init__(self, name: str) -> None:
        self.name = name


def test_what_counts_as_shared() -> None:
    item = Item("a")
    holder = Item("b")
    holder.inner = [item]  # type: ignore[attr-defined]
    assert _shares([holder, item])  # one holds the other
    assert _shares([[item], {"k": (item,)}])  # both hold a third, inside a tuple
    assert _shares([[1, 2], [1, 2]]) is False  # equal, not one
    one = [1, 2]
    assert _shares([one, one])  # the same list twice
    assert not _shares([Item("a"), Item("a"), "text", 3])
    # values whose identity nothing observes do not count: a class, a function, strings
    assert not _shares([[Item, len, "s"], (Item, len, "s")])
    assert not _shares([holder, item], limit=2)  # past the walk's bound: taken as not shared


def test_arguments_kept_together_as_a_pickle_are_named_one_by_one_and_stay_one_object() -> None:
    item = Item("a")
    holder = Item("b")
    holder.inner = [item]  # type: ignore[attr-defined]
    data = base64.b64encode(pickle.dumps(((holder, item), {}))).decode()
    call = TracedCall(
        args=[{"p": "eA==", "s": "Item(name='b', inner=[Item(name='a')])"}, {"r": "C('x:Item')"}],
        kwargs={},
        returns={"r": "True"},
        shared={"p": data},
    )
    target = Target("m.py::holds", "m.py", "holds", "holds", "function", 1, 1, 2, "", None, "", "")
    text = render_traced(target, "m", [call])
    assert f"        shared=P({data!r})," in text and "args=(" not in text
    assert "    # args[0]: Item(name='b', inner=[Item(name='a')])" in text
    assert "    # args[1]: C('x:Item')" in text
    assert readable_share(text) == (0, 1)
    # replayed, the function is given one object where the test gave one

    def holds(outer: Item, inner: Item) -> bool:
        return any(member is inner for member in outer.inner)  # type: ignore[attr-defined]

    support.check_call(holds, shared=support.P(data), returns=True)
    with pytest.raises(AssertionError, match="returned False, the reference returned True"):
        support.check_call(holds, args=(support.P(data).load()[0][0], Item("a")), returns=True)
