"""Look-alike objects at different places in one object graph (issue 22: sqlparse's
`TokenList.get_token_at_offset` was reported blind on the corpus). Two whitespace tokens of one
statement have equal fields, and each points back at its statement; comparing "the token at
offset 1" with "the token at offset 3" must not find them equal by pairing the first with the
second at the top and with itself inside the statement. The comparator pairs each actual object
with one expected object over a whole comparison, so a wrong token that merely looks like the
right one is told apart. The other way stays free: a result that mixes objects of two arguments
(rebuilt one by one in a harness) holds two copies of what the reference shared, as boolean.py's
expressions hold their algebra (the fresh pin of stop 37: 12 of `Expression.subs`'s 14 calls
were dropped as not reproducible when the pairing was one to one both ways).
"""

from __future__ import annotations

import pickle

from simulator.harness.runtime import reposim_harness_support as support
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

TREE = '''\
"""A statement of tokens that point back at it, as sqlparse's do."""


class Token:
    __slots__ = ("value", "parent")

    def __init__(self, value):
        self.value = value
        self.parent = None


class Statement:
    def __init__(self, tokens):
        self.tokens = tokens
        for token in tokens:
            token.parent = self


def parse(text):
    """`text` as a statement of word and whitespace tokens."""
    tokens, word = [], ""
    for char in text:
        if char.isspace():
            if word:
                tokens.append(Token(word))
            tokens.append(Token(char))
            word = ""
        else:
            word += char
    if word:
        tokens.append(Token(word))
    return Statement(tokens)


class Algebra:
    """What every expression of one algebra points at (boolean.py's TRUE, FALSE, classes)."""


class Symbol:
    def __init__(self, algebra, name):
        self.algebra = algebra
        self.name = name


class And:
    def __init__(self, algebra, *args):
        self.algebra = algebra
        self.args = args


def substitute(expr, mapping):
    """`expr` with each symbol whose name `mapping` holds replaced by what it maps to."""
    if isinstance(expr, And):
        return And(expr.algebra, *(substitute(arg, mapping) for arg in expr.args))
    return mapping.get(expr.name, expr)


def next_space(statement, start):
    """The first whitespace token at or after token index `start`, or None."""
    for token in statement.tokens[start:]:
        if token.value.isspace():
            return token
    return None
'''

TESTS = """\
from sqlish.tree import Algebra, And, Symbol, next_space, parse, substitute


def test_next_space():
    statement = parse("select * from t")
    assert next_space(statement, 2) is statement.tokens[3]
    assert next_space(parse("x"), 0) is None


def test_substitute():
    algebra = Algebra()
    a, b, c = (Symbol(algebra, name) for name in "abc")
    replaced = substitute(And(algebra, a, c), {"a": b})
    assert replaced.args == (b, c) and replaced.algebra is algebra
    assert substitute(a, {"b": c}) is a
"""

PROJECT = {"sqlish/__init__.py": "", "sqlish/tree.py": TREE, "tests/test_tree.py": TESTS}

# the bug scans from the start: it returns the first whitespace token, which looks like the
# right one (same value, same parent) but is another token of the statement
PLANTED = {
    "next_space": ("sqlish/tree.py", "statement.tokens[start:]", "statement.tokens"),
    "substitute": ("sqlish/tree.py", "mapping.get(expr.name, expr)", "expr"),
}

traced = traced_fixture(PROJECT, "sqlish", list(PLANTED))


async def test_a_look_alike_token_at_another_place_is_caught(traced: Traced) -> None:
    session, problems = traced
    assert_harnessed_and_valid(problems)
    # a result mixing objects of two arguments reproduces: every call kept (two nested)
    harness = problems["substitute"].harness
    assert harness is not None and harness.cases == 4, harness and harness.notes
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_tree.py")


class Node:
    __slots__ = ("parent", "value")

    def __init__(self, value: str) -> None:
        self.value, self.parent = value, None


class Group:
    def __init__(self, items: list[Node]) -> None:
        self.items = items
        for item in items:
            item.parent = self


def test_the_comparator_pairs_objects_one_to_one() -> None:
    def group() -> Group:
        return Group([Node("a"), Node(" "), Node("b"), Node(" "), Node("c")])

    first, second = group(), group()
    # the same place in two copies: equal; another place with equal fields: not
    assert support.same(first.items[3], second.items[3])
    assert not support.same(first.items[1], second.items[3])
    assert not support.same(first.items[3], second.items[1])
    # one object in two places is not two equal objects the reference kept apart
    node = Node("x")
    assert not support.same([node, node], [Node("x"), Node("x")])
    # the other way is free: a harness rebuilds each argument on its own, so a result mixing
    # them holds two copies of an object the reference shared
    assert support.same([Node("x"), Node("x")], [node, node])
    assert support.same([node, node], pickle.loads(pickle.dumps([node, node])))
    # builtin containers are values: a literal in a harness does not keep which were one list
    row = [1, 2]
    assert support.same([row, row], [[1, 2], [1, 2]])
    # cycles stay safe, and a copy of the whole graph is still equal
    assert support.same(first, pickle.loads(pickle.dumps(first)))
    assert support.same(first, second)
    # the self-check sees the difference the dumps show
    assert support.discriminates([first.items[1], second.items[3]]) is None
