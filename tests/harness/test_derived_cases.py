"""Cases derived from recorded calls (issue 22: coverage beyond what the repository's tests reach,
with no model). boolean.py's `pretty(indent, debug)` is only ever called with `debug=False`, so
its debug branches stay uncovered and the harness invalid at 50-75% coverage. The reference is
the oracle: recorded arguments changed by type (a flipped bool, a nearby int, a shortened
string, another recorded value) that run new arcs, deterministically, become cases with the
reference's results, marked as derived; a bug planted in a branch only a derived case reaches
is then caught, where the repository's own tests miss it. A branch whose result is not
deterministic gets no derived case."""

from __future__ import annotations

from simulator.harness.env import PythonEnv
from simulator.harness.format import derived_count, readable_share
from tests.harness.conftest import Traced, assert_harnessed_and_valid, traced_fixture

SHOW = '''\
"""Nodes shown as text."""
import itertools

_serial = itertools.count()


class Node:
    def __init__(self, name, *kids):
        self.name = name
        self.kids = kids

    def pretty(self, indent=0, debug=False):
        """The node as text, one line per node; `debug` adds each node's child count."""
        head = " " * indent + self.name
        if debug:
            head += f" <{len(self.kids)} kids>"
        lines = [head]
        for kid in self.kids:
            lines.append(kid.pretty(indent + 2, debug))
        return "\\n".join(lines)

    def tag(self, fresh=False):
        """The node's tag: its name, or a fresh serial number each time when `fresh`."""
        if fresh:
            return f"{self.name}-{next(_serial)}"
        return self.name
'''

TESTS = """\
from show.nodes import Node


def test_pretty():
    tree = Node("a", Node("b"), Node("c", Node("d")))
    assert tree.pretty() == "a\\n  b\\n  c\\n    d"
    assert Node("x").pretty(indent=4) == "    x"


def test_tag():
    assert Node("a").tag() == "a"
"""

PROJECT = {"show/__init__.py": "", "show/nodes.py": SHOW, "tests/test_nodes.py": TESTS}

traced = traced_fixture(PROJECT, "show", ["Node.pretty", "Node.tag"])


async def test_derived_cases_reach_branches_the_tests_never_take(traced: Traced) -> None:
    session, problems = traced
    assert_harnessed_and_valid(problems)
    pretty = problems["Node.pretty"]
    assert pretty.harness is not None and pretty.validation is not None
    text = pretty.harness.text
    # the debug branch, which no test takes, is reached by a derived case: full coverage
    assert pretty.validation.coverage_rate == 1.0, (pretty.validation.coverage, text)
    assert derived_count(text) >= 1, text
    assert "kwargs['debug'] flipped: False -> True" in text or "args[2] flipped" in text, text
    assert "(not recorded: the expected values are the reference's)" in text
    assert any("derived from recorded calls" in note for note in pretty.harness.notes)
    assert readable_share(text)[0] == readable_share(text)[1] > 0, text

    # a bug in the debug branch: the repository's tests miss it, the harness catches it
    env = PythonEnv()
    source = (await session.read_bytes("show/nodes.py")).decode()
    await session.write("show/nodes.py", source.replace("len(self.kids)}", "len(self.kids) + 1}"))
    try:
        suite = await session.run_tests("tests/test_nodes.py", command=env.pytest())
        assert suite.passed, "the repository's tests were meant to miss this bug"
        run = await session.run_tests(pretty.harness.path, command=env.pytest(".reposim/harness"))
        assert not run.passed, "the harness misses a bug in the branch its derived case reaches"
    finally:
        await session.write("show/nodes.py", source)

    # a branch whose result differs from run to run gets no derived case
    tag = problems["Node.tag"]
    assert tag.harness is not None and tag.validation is not None
    assert derived_count(tag.harness.text) == 0, tag.harness.text
    assert tag.validation.coverage_rate is not None and tag.validation.coverage_rate < 1.0
