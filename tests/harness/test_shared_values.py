"""Values neither pickle nor cloudpickle kept (issue 22, the corpus's biggest cause of invalid
harnesses): module-level singletons whose class answers any attribute (sqlparse's token types:
unpickling asks them for `__setstate__` and gets a new token type back), sentinels compared by
identity (`value is missing`), and regular-expression match objects (parse, parsimonious). A
small real repository has each; its traced harnesses keep the calls and catch a bug planted in
each target that the repository's own tests catch."""

from __future__ import annotations

import copy
import pickle
import re

import pytest

from simulator.harness.format import readable_share
from simulator.harness.runtime import reposim_harness_support as support
from simulator.harness.runtime.reposim_tracer import encode
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

TOKENS = '''\
"""Token types in the style of pygments and sqlparse: a tuple that makes children on demand."""


class _TokenType(tuple):
    parent = None

    def __getattr__(self, name):
        new = _TokenType(self + (name,))
        setattr(self, name, new)
        new.parent = self
        return new

    def __repr__(self):
        return "Token" + ("." if self else "") + ".".join(self)


Token = _TokenType()
Keyword = Token.Keyword
Name = Token.Name
Number = Token.Literal.Number
'''

LEXER = '''\
"""A lexer whose tokens point at module-level token types, compared by identity."""
import re

from toks import tokens as T

RULES = [
    (re.compile(r"\\s+"), None),
    (re.compile(r"[0-9]+"), T.Number),
    (re.compile(r"(select|from)\\b", re.I), T.Keyword),
    (re.compile(r"\\w+"), T.Name),
]
PAIR = re.compile(r"(\\w+)=([0-9]+)")


class Tok:
    __slots__ = ("ttype", "value")

    def __init__(self, ttype, value):
        self.ttype = ttype
        self.value = value

    def match(self, ttype, values):
        """Whether this token is of `ttype` and one of `values` (any case)."""
        if self.ttype is not ttype:
            return False
        return self.value.upper() in values


def tokenize(text):
    """The tokens of `text`, whitespace left out."""
    out, at = [], 0
    while at < len(text):
        for pattern, ttype in RULES:
            found = pattern.match(text, at)
            if found:
                if ttype is not None:
                    out.append(Tok(ttype, found.group()))
                at = found.end()
                break
        else:
            raise ValueError(f"no token at {at}")
    return out


def evaluate(match):
    """The name and number a `name=number` match holds."""
    return match.group(1), int(match.group(2))


def find(text):
    """The first `name=number` match in `text`, or None."""
    return PAIR.search(text)


class _Missing:
    def __repr__(self):
        return "<missing>"


missing = _Missing()


def get(mapping, key, default=missing):
    """`mapping[key]`; `default` when it is absent; "absent" when no default is given."""
    value = mapping.get(key, missing)
    if value is missing:
        return "absent" if default is missing else default
    return value
'''

TESTS = """\
from toks import tokens as T
from toks.lexer import PAIR, Tok, evaluate, find, get, tokenize


def test_tokenize():
    tokens = tokenize("select a from b1 2")
    assert [t.ttype for t in tokens] == [T.Keyword, T.Name, T.Keyword, T.Name, T.Number]
    assert tokens[0].ttype is T.Keyword


def test_match():
    assert Tok(T.Keyword, "select").match(T.Keyword, ("SELECT",))
    assert not Tok(T.Name, "select").match(T.Keyword, ("SELECT",))
    assert not Tok(T.Keyword, "from").match(T.Keyword, ("SELECT",))


def test_evaluate():
    assert evaluate(PAIR.search("x a=12")) == ("a", 12)
    assert evaluate(PAIR.match("b=3")) == ("b", 3)


def test_find():
    assert find("x a=12").group() == "a=12"
    assert find("nothing") is None


def test_get():
    assert get({"a": 1}, "a") == 1
    assert get({"a": 1}, "b") == "absent"
    assert get({"a": 1}, "b", 0) == 0
"""

PROJECT = {
    "toks/__init__.py": "",
    "toks/tokens.py": TOKENS,
    "toks/lexer.py": LEXER,
    "tests/test_toks.py": TESTS,
}

# target qualname -> (what the reference says, the planted bug), all in toks/lexer.py; each bug
# is one the repository's own tests catch
PLANTED = {
    "tokenize": ("out.append(Tok(ttype, found.group()))", "out.append(Tok(T.Name, found.group()))"),
    "Tok.match": ("return self.value.upper() in values", "return self.value in values"),
    "evaluate": ("match.group(1), int(match.group(2))", "match.group(0), int(match.group(2))"),
    "find": ("return PAIR.search(text)", "return PAIR.match(text)"),
    "get": ('"absent" if default is missing', "None if default is missing"),
}


traced = traced_fixture(PROJECT, "toks", PLANTED)


async def test_singletons_sentinels_and_matches_are_kept_and_catch_planted_bugs(
    traced: Traced,
) -> None:
    session, problems = traced
    assert_harnessed_and_valid(problems)
    # every call the tests made is kept: none dropped, none unreproducible
    assert problems["get"].harness is not None and problems["get"].harness.cases == 3
    assert problems["Tok.match"].harness is not None
    assert problems["Tok.match"].harness.cases == 3
    # module-level singletons are named, readably, not copied
    match_text = problems["Tok.match"].harness.text  # type: ignore[union-attr]
    assert "ttype=named('toks.tokens:Keyword')" in match_text
    assert "named('toks.lexer:missing')" in problems["get"].harness.text  # type: ignore[union-attr]
    # matches are read as the call that finds them, not pickled
    evaluate_text = problems["evaluate"].harness.text  # type: ignore[union-attr]
    assert "M(C('re:compile', '(\\\\w+)=([0-9]+)', 32), 'search', 'x a=12', 0, 6)" in evaluate_text
    assert readable_share(evaluate_text)[0] == readable_share(evaluate_text)[1] == 2

    planted = {qualname: ("toks/lexer.py", good, bad) for qualname, (good, bad) in PLANTED.items()}
    await assert_planted_bugs_caught(session, problems, planted, "tests/test_toks.py")


class _Kind(tuple):
    """A tuple that answers any attribute (as sqlparse's token types do)."""

    def __getattr__(self, name: str) -> _Kind:
        new = _Kind((*self, name))
        setattr(self, name, new)
        return new


ROOT = _Kind()
WORD = ROOT.Word
MARK = object()  # a bare marker compared with `is`


def test_the_pickler_names_singletons_and_rebuilds_matches() -> None:
    # the standard pickle copies a token type and cannot load it back
    with pytest.raises(TypeError):
        pickle.loads(pickle.dumps([WORD]))
    # ours names it: what comes back is the module's object itself
    assert pickle.loads(support.dumps([WORD, ROOT.Word.Deep]))[0] is WORD
    assert pickle.loads(support.dumps(ROOT.Word.Deep)) is WORD.Deep
    assert pickle.loads(support.dumps(re)) is re  # a module, by name
    assert pickle.loads(support.dumps({"m": MARK}))["m"] is MARK
    assert pickle.loads(support.dumps(object())) is not MARK  # only what a module holds
    found = re.compile(r"(a|ab)(c?)").fullmatch("abc", 0)
    assert found is not None
    for value in (found, re.compile("b+").search("abbb", 1), re.compile("x").match("yx", 1)):
        again = pickle.loads(support.dumps(value))
        assert (again.re, again.string, again.pos, again.endpos) == (
            value.re,
            value.string,
            value.pos,
            value.endpos,
        )
        assert again.regs == value.regs and support.same(again, value)
    # the comparator tells two matches apart by what they matched
    assert not support.same(re.compile("b+").search("abb"), re.compile("b+").search("abbb"))
    # a match reads as the pattern method that finds it again; a pattern as re.compile
    encoded = encode(re.compile("b+").search("abbb"), 20000)
    assert encoded == {"r": "M(C('re:compile', 'b+', 32), 'search', 'abbb', 0, 4)"}
    flags = re.IGNORECASE | re.DOTALL  # a combined flag has no member name of its own
    assert encode(flags, 20000) == {"r": "C('re:RegexFlag', 18)"}
    for value in (re.compile("b+").search("abbb"), re.compile(r"(\w)", re.I | re.M), flags):
        rebuilt = eval(encode(value, 20000)["r"], vars(support))
        assert support.same(rebuilt, value) and type(rebuilt) is type(value)


class Marker:
    """State of its own, no __eq__: two copies are equal by structure, not by `==`."""

    def __init__(self, key: int) -> None:
        self.key = key


class Rule:
    """Equality that compares a member with `==` (parsimonious's expressions compare their
    `regex` patterns so, which have no __eq__)."""

    __slots__ = ("marker", "name")

    def __init__(self, name: str, marker: Marker) -> None:
        self.name, self.marker = name, marker

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rule) and (self.name, self.marker) == (other.name, other.marker)

    __hash__ = None  # type: ignore[assignment]


def test_an_eq_that_compares_members_by_identity_does_not_make_copies_unequal() -> None:
    rule = Rule("a", Marker(1))
    copy = pickle.loads(pickle.dumps(rule))
    assert copy != rule  # its own __eq__ says different: the marker is another object
    assert support.same(copy, rule)  # all its state is equal
    assert not support.same(Rule("a", Marker(2)), rule)
    assert not support.same(Rule("b", Marker(1)), rule)
    # a compiled pattern is its source and flags
    assert support.same(pickle.loads(pickle.dumps(re.compile("a+", re.I))), re.compile("a+", re.I))
    assert not support.same(re.compile("a+"), re.compile("a+", re.I))


class Rooted:
    """A path whose root is a module-level marker naming itself, as glom's `T`, `S` and `A`
    (`T.__ops__ == (T,)`; `T.a.b` is a path rooted in T): scopes are dicts keyed by the roots,
    looked up with the module's own objects."""

    __slots__ = ("__ops__",)

    def __init__(self, *ops: object) -> None:
        self.__ops__ = ops or (self,)

    def child(self, name: str) -> Rooted:
        return Rooted(self.__ops__[0], ".", name)


ROOTED = Rooted()


def test_a_root_marker_naming_itself_stays_itself_in_copies() -> None:
    path = ROOTED.child("a")
    scope = {ROOTED: "the target", "spec": path}
    # a recorded value keeps the module's root, not a copy of it that no lookup finds
    again = pickle.loads(support.dumps(scope))
    assert again[ROOTED] == "the target"
    assert again["spec"].__ops__[0] is ROOTED and again["spec"] is not path  # paths copied
    # the copy a check in situ gives the reference keeps it too
    copied = copy.deepcopy(scope, support._kept_as_is("tests"))
    assert copied[ROOTED] == "the target" and copied["spec"] is not path
    # a path is not a root: it has state of its own
    assert not support.identity_object(path) and support.identity_object(ROOTED)


OTHER_ROOT = Rooted()


def test_two_root_markers_alike_in_structure_are_told_apart() -> None:
    # glom's T and S: each a root whose only state is a tuple naming itself, so a structural
    # comparison met (T, S) in that cycle and called them equal, and dumped them alike: a
    # harness passed Path(S.a) for Path(T.a) (Path.from_t's `is S` negated survived)
    assert support.same(ROOTED, ROOTED) and not support.same(ROOTED, OTHER_ROOT)
    assert not support.same(ROOTED.child("a"), OTHER_ROOT.child("a"))
    assert support.same(ROOTED.child("a"), ROOTED.child("a"))
    assert support.dump(ROOTED.child("a")) != support.dump(OTHER_ROOT.child("a"))
    assert support.discriminates([ROOTED.child("a"), OTHER_ROOT.child("a")]) is None
