"""Calls whose arguments cannot be kept are checked in situ: the repository's test runs again
with the candidate in the target's place, and each named call is compared with the reference
called on a copy of the same live arguments (pycparser's grammar actions get a parser holding
its LR tables; an object holding a lock cannot be pickled at all)."""

from __future__ import annotations

from pathlib import Path

from simulator.harness.format import readable_share
from simulator.harness.runtime.reposim_tracer import Recorder, _support
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)
from tests.harness.test_trace_cost import _traced_module, tracing

PARSER = '''\
"""A parser as ply builds one: its actions get the parser itself, which holds tables far over
the size a case may keep, a lock no pickle takes, and a lexer that is an iterator the parse is
still reading, whose rules are bound methods."""

import threading


class Token:
    __slots__ = ("kind", "text")

    def __init__(self, kind, text):
        self.kind = kind
        self.text = text


current = None  # the lexer made last (ply's lex module keeps one the same way)


class Lexer:
    def __init__(self, text):
        global current
        current = self
        self.groups = 0
        self.words = text.split()
        self.position = 0
        self.rules = [self.number, self.word]

    def __iter__(self):
        return self

    def __next__(self):
        if self.position >= len(self.words):
            raise StopIteration
        self.position += 1
        word = self.words[self.position - 1]
        for rule in self.rules:
            value = rule(word)
            if value is not None:
                return value

    def number(self, word):
        return int(word) if word.isdigit() else None

    def word(self, word):
        return word


class Parser:
    def __init__(self, text):
        self.table = {state: list(range(40)) for state in range(3000)}
        self.lock = threading.Lock()
        self.lexer = Lexer(text)
        self.stack = []

    def reduce(self, items):
        """One grammar action: numbers are added, anything else is joined as text."""
        self.lexer.groups += 1
        if all(isinstance(item, int) for item in items):
            total = sum(items)
            self.stack.append(Token("number", str(total)))
            return total
        text = "".join(str(item) for item in items)
        self.stack.append(Token("text", text))
        return text

    def parse(self):
        results, group = [], []
        for value in self.lexer:
            if value == ";":
                results.append(self.reduce(group))
                group = []
            else:
                group.append(value)
        return results


def first_token(parser):
    """What a helper given the whole parser looks like."""
    if not parser.stack:
        raise LookupError("nothing parsed")
    return parser.stack[0].kind
'''

TESTS = """\
import pytest

from grammar.parse import Parser, first_token


def test_numbers():
    parser = Parser("1 2 3 ; 4 ;")
    assert parser.parse() == [6, 4]
    assert parser.lexer.groups == 2
    assert first_token(parser) == "number"


TEXT = Parser("a 1 ;")  # made at import, read to its end by the test


def test_text():
    assert TEXT.parse() == ["a1"]
    assert [t.text for t in TEXT.stack] == ["a1"]
    assert first_token(TEXT) == "text"


def test_empty():
    with pytest.raises(LookupError):
        first_token(Parser(""))
"""

FILES = {"grammar/__init__.py": "", "grammar/parse.py": PARSER, "tests/test_parse.py": TESTS}

traced = traced_fixture(FILES, "grammar", ["Parser.reduce", "first_token"])

PLANTED = {
    "Parser.reduce": (
        "grammar/parse.py",
        "            total = sum(items)\n",
        "            total = sum(items[1:])\n",
    ),
    "first_token": ("grammar/parse.py", "    return parser.stack[0].kind\n", "    return 'text'\n"),
}


async def test_calls_with_arguments_that_cannot_be_kept_are_checked_in_situ(traced: Traced) -> None:
    session, problems = traced
    assert_harnessed_and_valid(problems)
    for qualname, problem in problems.items():
        assert problem.harness is not None
        text = problem.harness.text
        assert "IN_SITU = [" in text, qualname
        assert "P(" not in text  # nothing pickled: the values stay live
        readable, cases = readable_share(text)
        assert cases == problem.harness.cases and readable == cases
    reduce_text = problems["Parser.reduce"].harness.text  # type: ignore[union-attr]
    # readable: which test, which call, what the arguments and the result looked like
    assert "dict(test='tests/test_parse.py::test_text', call=1)" in reduce_text
    assert "['a', 1]" in reduce_text and "the reference returned 'a1'" in reduce_text
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_parse.py")
    # a bug only the lexer shows, a module-level object of the package (as ply keeps its last
    # lexer): the reference changes a copy of it, so the two calls' changes do not cancel out
    lexer_bug = {"Parser.reduce": ("grammar/parse.py", "groups += 1\n", "groups += 2\n")}
    await assert_planted_bugs_caught(session, problems, lexer_bug, "tests/test_parse.py")


FIELDS = '''\
"""A schema library's field: validators are lambdas, the classes made are the tests' own."""


class Field:
    def __init__(self, validate=None):
        self.validate = validate

    def deserialize(self, value):
        if self.validate is not None and not self.validate(value):
            raise ValueError(f"invalid value {value!r}")
        return value


def make(kind, value):
    """An object of the class a schema names."""
    return kind(value)
'''

FIELD_TESTS = """\
import pytest

from schema_lib.fields import Field, make


def test_validate():
    field = Field(validate=lambda v: v > 0)
    assert field.deserialize(3) == 3
    with pytest.raises(ValueError):
        field.deserialize(-1)


def test_local_class():
    class Box:
        def __init__(self, v):
            self.v = v

    assert make(Box, 2).v == 2
"""

traced_fields = traced_fixture(
    {
        "schema_lib/__init__.py": "",
        "schema_lib/fields.py": FIELDS,
        "tests/test_fields.py": FIELD_TESTS,
    },
    "schema_lib",
    ["Field.deserialize", "make"],
)


async def test_values_only_cloudpickle_keeps_are_checked_in_situ_not_pickled(
    traced_fields: Traced,
) -> None:
    """A lambda validator or a class defined in a test would be a pickle no one can read,
    bound to the test's own code (marshmallow: about 650 of 817 cases): checked in situ."""
    session, problems = traced_fields
    assert_harnessed_and_valid(problems)
    for problem in problems.values():
        assert problem.harness is not None
        assert "IN_SITU = [" in problem.harness.text and "P(" not in problem.harness.text
    text = problems["Field.deserialize"].harness.text  # type: ignore[union-attr]
    assert "the reference raised builtins.ValueError: invalid value -1" in text
    planted = {
        "Field.deserialize": ("schema_lib/fields.py", "and not self.validate", "and self.validate"),
        "make": (
            "schema_lib/fields.py",
            "    return kind(value)\n",
            "    return kind(value + 1)\n",
        ),
    }
    await assert_planted_bugs_caught(session, problems, planted, "tests/test_fields.py")


def test_in_situ_calls_beyond_the_greedy_choice_come_from_other_tests_first() -> None:
    """pycparser's `p[0] = [p[1]] if len(p) == 2 else p[1] + [p[2]]` is one line: its arcs do
    not tell the two shapes of `p` apart, and four calls from one test all had the first (the
    suite killed 8 mutants, the harness 5). The calls added beyond the greedy choice come one
    test at a time, tests not yet rerun first."""
    target = {"id": "t", "path": "m.py", "qualname": "f"}
    recorder = Recorder({"root": "/", "targets": [target]})
    for test, number in [("A", 1), ("A", 2), ("A", 3), ("A", 4), ("B", 1), ("C", 1)]:
        recorder.pool["t"].append(
            {
                "args": [],
                "kwargs": {},
                "test": test,
                "in_situ": {"call": number, "why": "too big", "shown": [], "outcome": ""},
                "arcs": {(1, 2)},
            }
        )
    chosen = [(c["test"], c["in_situ"]["call"]) for c in recorder.choose("t")]
    assert chosen[0] == ("A", 1)  # the greedy choice
    assert {("B", 1), ("C", 1)} <= set(chosen)
    assert len(chosen) == 6  # every candidate: fewer than the extra allowed


STATEFUL_GLOBAL = """
class Lexer:
    def __init__(self):
        self.lineno = 1


class _Missing:
    pass


lexer = Lexer()  # as ply's lex module keeps the last lexer it built
missing = _Missing()
"""


def test_a_module_global_with_state_is_copied_not_named(tmp_path: Path) -> None:
    """jsonpath-ng's tokens hold ply's lexer, which ply also keeps as the module global
    `lex.lexer`: it was written `named('ply.lex:lexer')` (made only when a lexer is built, so
    5 harnesses did not even import), and a call's change to it was invisible. A sentinel
    with no state of its own is still named."""
    module, _, _ = _traced_module(tmp_path, "stateful_globals", STATEFUL_GLOBAL, "Lexer")
    support = _support()
    assert support.shared_name(module.lexer) is None
    assert support.shared_name(module.missing) == "stateful_globals:missing"


DECORATOR = '''
def set_hook(function, registry):
    """What a decorator run when a test module is imported looks like (marshmallow's)."""
    registry.append(function)
    return function
'''


def test_a_call_made_outside_a_test_is_not_checked_in_situ(tmp_path: Path) -> None:
    """marshmallow's decorators run while the test modules are imported: no test id names
    them, and a check in situ with no test ran the whole suite for every mutant."""
    hooks, recorder, target = _traced_module(tmp_path, "hooks", DECORATOR, "set_hook")
    registry = [lambda: None]  # only cloudpickle keeps it
    for test in ("", "tests/test_hooks.py::test_one"):
        recorder.test = test  # "" while the tests are collected
        with tracing(recorder):
            hooks.set_hook(len, registry)
    checked = [c["test"] for c in recorder.pool[target["id"]] if "in_situ" in c]
    assert checked == ["tests/test_hooks.py::test_one"]  # the other is replayed from its pickle
