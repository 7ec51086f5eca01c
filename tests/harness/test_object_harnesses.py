"""Traced harnesses on object-heavy code (issue 22): a parse tree kept in `__slots__`, a graph
with reference cycles, sets of objects, a generator, a function that prints, an object holding
a lambda, a TestCase helper, and a suite with a collection error. For each, a bug planted in the
target that the repository's own tests catch is caught by the traced harness too."""

from __future__ import annotations

import collections
import pickle
import re
from decimal import Decimal

import pytest

from simulator.harness.format import readable_share
from simulator.harness.runtime.reposim_harness_support import discriminates, dump, same
from simulator.harness.workflow import summarize
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)
from widgets.curation.model import COLUMNS, Row

TREE = '''\
"""A tiny expression parser whose nodes keep their state in __slots__."""


class Base:
    """No __slots__ here: every node also has an (empty) __dict__."""


class Node(Base):
    __slots__ = ("kind", "children", "text")

    def __init__(self, kind, children=(), text=""):
        self.kind = kind
        self.children = list(children)
        self.text = text


def parse(source):
    """`a+b*c` as a tree: a sum of products of names."""
    terms = []
    for part in source.split("+"):
        names = [Node("name", text=t.strip()) for t in part.split("*")]
        terms.append(Node("product", names))
    return Node("sum", terms)
'''

GRAPH = '''\
"""A graph whose blocks point back to it (reference cycles)."""


class Block:
    def __init__(self, graph, name):
        self.graph = graph
        self.name = name
        self.succ = []


class Graph:
    def __init__(self):
        self.blocks = {}


def build(edges):
    """The graph of `edges` (pairs of names)."""
    graph = Graph()
    for a, b in edges:
        for name in (a, b):
            if name not in graph.blocks:
                graph.blocks[name] = Block(graph, name)
        graph.blocks[a].succ.append(graph.blocks[b])
    return graph
'''

MISC = '''\
"""Sets of objects, a generator, printing, an object holding a lambda."""
import collections


class Item:
    def __init__(self, name, weight):
        self.name = name
        self.weight = weight


def heavy(items, limit):
    """The items heavier than `limit`, as a set."""
    return {item for item in items if item.weight > limit}


def pairs(items):
    """Each item with the next one."""
    for i in range(len(items) - 1):
        yield items[i], items[i + 1]


def report(totals):
    """Print one line per total; return how many."""
    for name, value in sorted(totals.items()):
        print(f"{name}: {value}")
    return len(totals)


class Registry:
    def __init__(self):
        self.entries = collections.defaultdict(lambda: None)


def register(registry, name, value):
    """Add an entry; the names that have a value."""
    registry.entries[name] = value
    return sorted(k for k, v in registry.entries.items() if v is not None)
'''

HELPER = '''\
"""A TestCase helper the tests inherit (its `self` is a TestCase)."""
import unittest

from objs.tree import parse


class ParserCase(unittest.TestCase):
    def kinds(self, source):
        """The kinds of the top-level children, times `self.repeat`."""
        return [child.kind for child in parse(source).children] * self.repeat
'''

TESTS = """\
from objs.graph import build
from objs.misc import Item, Registry, heavy, pairs, register, report
from objs.testing import ParserCase
from objs.tree import parse


def test_parse():
    tree = parse("a+b*c")
    assert [t.kind for t in tree.children] == ["product", "product"]
    assert [n.text for n in tree.children[1].children] == ["b", "c"]
    assert parse("x").children[0].children[0].text == "x"


def test_build():
    graph = build([("a", "b"), ("b", "c"), ("c", "a")])
    assert [s.name for s in graph.blocks["a"].succ] == ["b"]
    assert graph.blocks["c"].succ[0] is graph.blocks["a"]


def test_heavy():
    items = [Item("a", 1), Item("b", 2), Item("c", 3)]
    assert {i.name for i in heavy(items, 2)} == {"c"}
    assert {i.name for i in heavy(items, 0)} == {"a", "b", "c"}


def test_pairs():
    assert list(pairs([1, 2, 3])) == [(1, 2), (2, 3)]
    assert list(pairs([])) == []


def test_report(capsys):
    assert report({"b": 2, "a": 1}) == 2
    assert capsys.readouterr().out == "a: 1\\nb: 2\\n"


def test_register():
    registry = Registry()
    assert register(registry, "a", 1) == ["a"]
    assert register(registry, "b", None) == ["a"]


class TestKinds(ParserCase):
    def test_kinds(self):
        self.repeat = 2
        assert self.kinds("a+b") == ["product", "product"] * 2
"""

PROJECT = {
    "objs/__init__.py": "",
    "objs/tree.py": TREE,
    "objs/graph.py": GRAPH,
    "objs/misc.py": MISC,
    "objs/testing.py": HELPER,
    "tests/test_objs.py": TESTS,
    # a test module that does not import: the rest of the suite must still be traced
    "tests/test_broken.py": "import objs.no_such_module\n",
}

# target qualname -> (file, what the reference says, the planted bug): each bug is one the
# repository's own tests catch
PLANTED = {
    "parse": ("objs/tree.py", 'Node("product", names)', 'Node("product", names[:1])'),
    "build": ("objs/graph.py", "succ.append(graph.blocks[b])", "succ.append(graph.blocks[a])"),
    "heavy": ("objs/misc.py", "item.weight > limit", "item.weight >= limit"),
    "pairs": ("objs/misc.py", "yield items[i], items[i + 1]", "yield items[i + 1], items[i]"),
    "report": ("objs/misc.py", 'print(f"{name}: {value}")', 'print(f"{name}={value}")'),
    "register": ("objs/misc.py", "if v is not None)", "if v is None)"),
    "ParserCase.kinds": ("objs/testing.py", "* self.repeat", "* 1"),
}


traced = traced_fixture(PROJECT, "objs", PLANTED)


async def test_object_heavy_targets_get_harnesses_that_catch_planted_bugs(traced: Traced) -> None:
    session, problems = traced
    # every target is called despite the collection error, and keeps its calls
    assert_harnessed_and_valid(problems)
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_objs.py")

    # the generator is compared by what it yields; the printing function by what it printed
    pairs_text = problems["pairs"].harness.text  # type: ignore[union-attr]
    assert "yields=[(1, 2), (2, 3)]," in pairs_text
    assert "stdout='a: 1\\nb: 2\\n'," in problems["report"].harness.text  # type: ignore[union-attr]
    # objects are rebuilt readably where a constructor expression gives them back
    parse_text = problems["parse"].harness.text  # type: ignore[union-attr]
    assert "O('objs.tree:Node', kind='sum'" in parse_text
    assert readable_share(parse_text)[0] == readable_share(parse_text)[1] > 0
    # the TestCase helper's self is rebuilt from the test's own state, not pickled
    kinds_text = problems["ParserCase.kinds"].harness.text  # type: ignore[union-attr]
    assert "T('test_objs:TestKinds', 'test_kinds', repeat=2)" in kinds_text
    # the lambda inside a defaultdict only cloudpickle keeps: checked in situ, with a dump
    register_text = problems["register"].harness.text  # type: ignore[union-attr]
    assert "IN_SITU = [" in register_text and "P(" not in register_text
    assert "#   args[0]: Registry(entries=defaultdict(" in register_text, register_text
    # a graph whose blocks point back to it is written with named references (N, R), not
    # pickled; its harness still catches the planted bug (above)
    build_text = problems["build"].harness.text  # type: ignore[union-attr]
    assert readable_share(build_text)[0] == readable_share(build_text)[1] > 0, build_text
    graph = (
        "returns=G(N(1, O('objs.graph:Graph', blocks={'a': N(2, O('objs.graph:Block', graph=R(1)"
    )
    assert graph in build_text, build_text

    # the curation table shows the share of readable cases and the outcome
    row = Row.of(problems["parse"])
    assert (
        row.readable == 1.0 and dict(zip(COLUMNS, row.cells(), strict=True))["no pickle"] == "100%"
    )
    assert Row.of(problems["register"]).why in ("valid", "too few mutants", "no mutant")

    summary = summarize(list(problems.values()))
    assert summary["with_cases"] == len(PLANTED)
    assert sum(summary["reasons"].values()) == len(PLANTED)


class Leaf:
    pass


class Slotted(Leaf):
    __slots__ = ("children", "kind")

    def __init__(self, kind: str, children: list[Slotted]) -> None:
        self.kind = kind
        self.children = children


class Vertex:
    def __init__(self, name: str) -> None:
        self.name = name
        self.edges: list[Vertex] = []
        self.owner: Vertex | None = None


class Evens:
    """An iterator with state of its own: the even items of a list."""

    def __init__(self, items: list[int]) -> None:
        self.items = list(items)
        self.at = 0

    def __iter__(self) -> Evens:
        return self

    def __next__(self) -> int:
        while self.at < len(self.items):
            self.at += 1
            if self.items[self.at - 1] % 2 == 0:
                return self.items[self.at - 1]
        raise StopIteration


def test_the_comparator_sees_slots_cycles_and_sets() -> None:
    one = Slotted("sum", [Slotted("name", [])])
    other = Slotted("sum", [Slotted("call", [])])
    assert same(one, Slotted("sum", [Slotted("name", [])]))
    assert not same(one, other)  # the empty __dict__ of Leaf is not all there is
    assert dump(one) == "Slotted(children=[Slotted(children=[], kind='name')], kind='sum')"

    a, b = Vertex("a"), Vertex("b")
    a.edges.append(b)
    b.edges.append(a)
    a.owner = b.owner = a
    first, second = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(a))
    assert same(first, second)  # no RecursionError, equal
    second.edges[0].name = "c"
    assert not same(first, second)

    assert same({Vertex("x"), Vertex("y")}, {Vertex("y"), Vertex("x")})
    assert not same({Vertex("x"), Vertex("y")}, {Vertex("y"), Vertex("z")})
    assert same({Vertex("k"): 1}, {Vertex("k"): 1})
    assert not same({Vertex("k"): 1}, {Vertex("k"): 2})

    assert discriminates([one, other]) is None
    assert discriminates([1, 2, 1]) is None
    # iterators are told apart by what they yield, not their state: two that yield the same
    # items from different inputs are not a blind spot
    assert discriminates([Evens([1, 2, 4]), Evens([2, 3, 4])]) is None
    assert discriminates([Slotted("x", []), Slotted("y", [])]) is None


def test_a_builtin_method_is_compared_with_its_object() -> None:
    """sqlparse's Lexer keeps `(re.compile(...).match, token type)` pairs: a mutant that drops
    re.IGNORECASE from the patterns survived, the methods compared by their name alone."""
    plain, ignoring = re.compile("select").match, re.compile("select", re.IGNORECASE).match
    assert not same(plain, ignoring) and same(plain, re.compile("select").match)
    assert discriminates([plain, ignoring]) is None
    assert not same([1].append, [2].append) and same(len, len)


def test_decimals_differ_by_their_places() -> None:
    """marshmallow's Decimal(places=1) returns 12.0 where a mutant returns 12: == calls them
    equal, and the self-check called the comparator blind for Number._validated."""
    assert Decimal("12") == Decimal("12.0") and not same(Decimal("12"), Decimal("12.0"))
    assert discriminates([Decimal("12"), Decimal("12.0")]) is None
    assert same(Decimal("NaN"), Decimal("NaN")) and same(Decimal("1.50"), Decimal("1.50"))


def test_collections_are_rebuilt_readably_and_lambdas_are_pickled_by_cloudpickle() -> None:
    from simulator.harness.runtime import reposim_harness_support as support
    from simulator.harness.runtime.reposim_tracer import encode

    values = [
        collections.defaultdict(list, {"a": [1]}),
        collections.OrderedDict(a=1),
        collections.Counter("aab"),
        collections.deque([1, 2], 3),
    ]
    for value in values:
        encoded = encode(value, 20000)
        assert "r" in encoded, encoded
        rebuilt = eval(encoded["r"], vars(support))
        assert same(rebuilt, value) and type(rebuilt) is type(value)
    # what the standard pickle refuses is kept by cloudpickle ("c"), with a dump to read
    encoded = encode(collections.defaultdict(lambda: None, {"a": 1}), 20000)
    assert encoded.get("c") == "1" and encoded["s"] == "defaultdict({'a': 1})"
    assert same(support.P(encoded["p"]).load(), {"a": 1}) is False  # a defaultdict, not a dict
    assert dict(support.P(encoded["p"]).load()) == {"a": 1}


class Parented:
    __slots__ = ("children", "kind", "parent", "tags")

    def __init__(self, kind: str, parent: Parented | None = None) -> None:
        self.kind = kind
        self.children: list[Parented] = []
        self.parent = parent
        self.tags: tuple[object, ...] = ()


def test_cycles_and_shared_members_are_rebuilt_with_named_references() -> None:
    from simulator.harness.runtime import reposim_harness_support as support
    from simulator.harness.runtime.reposim_tracer import encode

    root = Parented("sum")
    for kind in ("name", "num"):
        child = Parented(kind, root)
        child.tags = (root, kind)  # a back-reference inside a tuple
        root.children.append(child)
    shared = [1, 2]
    a, b = Vertex("a"), Vertex("b")
    a.edges, b.edges = shared, shared  # one list held twice, no cycle
    for value in (root, a, [a, b]):
        encoded = encode(value, 20000)
        assert "r" in encoded, encoded  # an expression, not a pickle
        rebuilt = eval(encoded["r"], vars(support))
        assert same(rebuilt, value) and dump(rebuilt) == dump(value)
        copied = support.materialize(rebuilt)  # what check_call passes: a fresh copy
        assert same(copied, value)
    text = encode(root, 20000)["r"]
    assert text.startswith(f"G(N(1, O('{__name__}:Parented', children=[O("), text
    assert "parent=R(1), tags=(R(1), 'name')" in text
    rebuilt = eval(text, vars(support))
    assert all(c.parent is rebuilt and c.tags[0] is rebuilt for c in rebuilt.children)
    copied = support.materialize(rebuilt)
    assert copied is not rebuilt and all(c.parent is copied for c in copied.children)
    pair = eval(encode([a, b], 20000)["r"], vars(support))
    assert pair[0].edges is pair[1].edges  # shared stays shared, as a pickle keeps it
    assert "R(" not in encode(Vertex("c"), 20000)["r"]  # nothing shared: no references
    # a reference to nothing is an error of the value, said plainly
    with pytest.raises(ValueError, match=r"R\(2\) refers to no N\(2, \.\.\.\)"):
        support.G([support.N(1, []), support.R(2)])


def test_ast_nodes_are_rebuilt_readably() -> None:
    import ast

    from simulator.harness.runtime import reposim_harness_support as support
    from simulator.harness.runtime.reposim_tracer import encode

    tree = ast.parse("total = price * (1 + rate)")
    encoded = encode(tree, 20000)
    assert "r" in encoded, encoded  # not a pickle (astor's trees were, at stop 32)
    assert "O('ast:Module', body=[O('ast:Assign', targets=[O('ast:Name', id='total'" in encoded["r"]
    rebuilt = eval(encoded["r"], vars(support))
    assert same(rebuilt, tree) and ast.unparse(rebuilt) == "total = price * (1 + rate)"
    other = ast.parse("total = price * (1 - rate)")
    assert not same(rebuilt, other)
