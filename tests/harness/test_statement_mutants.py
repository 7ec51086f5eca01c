"""A function the operator, constant, condition and return swaps leave untouched gets mutants
that remove its statements (issue 22 item 6; sqlparse 0.4.4, a fresh sample of stop 36: 3 of
its 10 invalid targets were "no mutant can be made", Lexer.clear, Lexer.default_initialization
and Token.flatten, a setter and a generator that yields itself; marshmallow's handle_error).
Such a harness could never be valid, however well it caught a dropped statement. A small real
repository has a setter and a generator of that kind: their harnesses kill every statement
removed and are valid."""

from __future__ import annotations

from pathlib import Path

from simulator.harness.mutate import mutants
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from tests.conftest import RepoFactory

TOKENS = '''\
"""Tokens and a lexer's tables, in the style of sqlparse."""


class Token:
    def __init__(self, value, children=()):
        self.value = value
        self.children = list(children)

    def flatten(self):
        """This token, then its children's tokens."""
        yield self
        for child in self.children:
            yield from child.flatten()


class Lexer:
    def __init__(self):
        self.rules = [("x", 1)]
        self.keywords = {"SELECT": 2}

    def clear(self):
        """Forget every rule and keyword."""
        self.rules = []
        self.keywords = {}
'''

TESTS = """\
from lang.tokens import Lexer, Token


def test_flatten():
    tree = Token("a", [Token("b"), Token("c", [Token("d")])])
    assert [t.value for t in tree.flatten()] == ["a", "b", "c", "d"]
    assert [t.value for t in Token("x").flatten()] == ["x"]


def test_clear():
    lexer = Lexer()
    lexer.clear()
    assert lexer.rules == [] and lexer.keywords == {}
"""


def test_statements_are_removed_only_where_nothing_can_be_swapped() -> None:
    clear = mutants(TOKENS, 21, "clear", limit=None)
    assert [m.description for m in clear] == [
        "line 23: `self.rules = []` removed",
        "line 24: `self.keywords = {}` removed",
    ]
    assert {m.operator for m in mutants(TOKENS, 9, "flatten", limit=None)} == {"statement"}
    # a function the swaps change keeps its swaps alone
    assert "statement" not in {m.operator for m in mutants(TOKENS, 17, "__init__", limit=None)}


async def test_a_setter_and_a_generator_get_valid_harnesses(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """Before: both were invalid, "no mutant can be made of it"."""
    repo = make_repo(
        {"lang/__init__.py": "", "lang/tokens.py": TOKENS, "tests/test_tokens.py": TESTS},
        name="lang",
    )
    session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl")
    try:
        wanted = ("Token.flatten", "Lexer.clear")
        targets = [t for t in find_targets(repo, filters=[]) if t.qualname in wanted]
        options = HarnessOptions(thresholds=Thresholds(repeats=1))
        problems = await make_problems(session, targets, options)
    finally:
        await session.close()
    assert len(problems) == 2
    for problem in problems:
        validation = problem.validation
        assert validation is not None, problem.curation.reasons
        figures = validation.mutation or {}
        assert validation.verdict == "valid", (problem.target["qualname"], validation.reasons)
        assert figures["total"] == figures["possible"] == figures["killed"] >= 2, figures
