"""A class state only a pickle keeps, left out where the case does not need it (sqlparse 0.4.4:
508 of its 561 cases carried `classes=P(...)`, a 13 KB pickle of the default lexer that
`Lexer.get_default_instance()` builds lazily and keeps on the class: the harness's readable
share was 14%). A harness process builds the same default on first use, so a case that passes
on the reference without the state is written without it; a case whose test had changed the
default (a rule added) fails without it and keeps it. A small real repository in sqlparse's
shape; its harness catches a bug planted in the target that the repository's tests catch."""

from __future__ import annotations

from simulator.harness.format import readable_share
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

LEXER = '''\
"""A lexer whose default instance is built on first use and kept on the class."""
import re


class Lexer:
    _default = None

    @classmethod
    def get_default_instance(cls):
        if cls._default is None:
            cls._default = cls()
            cls._default.default_initialization()
        return cls._default

    def default_initialization(self):
        self.rules = [
            (re.compile(r"[0-9]+").match, "number"),
            (re.compile(r"[a-z]+").match, "word"),
            (re.compile(r"\\s+").match, None),
        ]

    def add_rule(self, pattern, kind):
        self.rules.insert(0, (re.compile(pattern).match, kind))


def tokenize(text):
    """(kind, text) of each token; whitespace is skipped, an unknown character is an error."""
    rules = Lexer.get_default_instance().rules
    pos, found = 0, []
    while pos < len(text):
        for match, kind in rules:
            matched = match(text, pos)
            if matched:
                if kind:
                    found.append((kind, matched.group()))
                pos = matched.end()
                break
        else:
            found.append(("error", text[pos]))
            pos += 1
    return found
'''

# (the first test builds the default lexer: every later call starts with it on the class)
TESTS = """\
from lex.lexer import Lexer, tokenize


def test_a_rule_added():
    lexer = Lexer.get_default_instance()
    lexer.add_rule(r"if\\b", "keyword")
    try:
        assert tokenize("if x!") == [("keyword", "if"), ("word", "x"), ("error", "!")]
    finally:
        lexer.default_initialization()


def test_tokenize():
    assert tokenize("ab 12") == [("word", "ab"), ("number", "12")]
"""

PROJECT = {"lex/__init__.py": "", "lex/lexer.py": LEXER, "tests/test_lexer.py": TESTS}
PLANTED = {"tokenize": ("lex/lexer.py", "if kind:", "if kind or pos:")}

traced = traced_fixture(PROJECT, "lex", PLANTED)


async def test_a_pickled_class_state_is_kept_only_by_the_cases_that_need_it(
    traced: Traced,
) -> None:
    session, problems = traced
    assert_harnessed_and_valid(problems)
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_lexer.py")
    harness = problems["tokenize"].harness
    assert harness is not None and harness.cases == 2, harness
    # the lexer with its compiled patterns is a pickle: before, both cases carried it; now
    # only the one recorded after a rule was added, which fails without it
    assert harness.text.count("classes=P(") == 1, harness.text
    assert readable_share(harness.text) == (1, 2), harness.text
    added = harness.text.index("# recorded in tests/test_lexer.py::test_a_rule_added")
    assert "classes=P(" in harness.text[added:]
    assert any("1 call(s) replayed without the class state" in n for n in harness.notes), (
        harness.notes
    )
