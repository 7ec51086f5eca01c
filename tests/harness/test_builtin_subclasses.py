"""Objects of classes that extend a builtin (a grammar that is an OrderedDict, rule names that
are str, rule bodies that are lists: parsimonious's `Grammar` and `LazyReference`) are written
as constructor expressions, `S(class, content, field=...)`, not pickled (issue 22 item 7); a
harness made of them still catches a bug the repository's tests catch."""

from __future__ import annotations

import collections
from pathlib import Path

from simulator.harness.runtime import reposim_harness_support as support
from simulator.harness.runtime.reposim_tracer import encode
from tests.conftest import RepoFactory
from tests.harness.planted import check_planted

RULES = '''\
"""A tiny grammar: rules by name, each a sequence of literals and references."""
import collections


class Ref(str):
    """A reference to a rule, by its name."""


class Seq(list):
    """A rule's body."""


class Grammar(collections.OrderedDict):
    def __init__(self, text=""):
        super().__init__()
        self.text = text
        for line in text.splitlines():
            name, _, body = line.partition("=")
            words = body.split()
            self[name.strip()] = Seq(w.strip('"') if w[0] == '"' else Ref(w) for w in words)
        self.default = next(iter(self), None)


def expand(grammar, name, depth=0):
    """The literals rule `name` stands for, references followed (8 deep at most)."""
    out = []
    for item in grammar[name]:
        if isinstance(item, Ref) and depth < 8:
            out.extend(expand(grammar, item, depth + 1))
        else:
            out.extend([str(item)])
    return out


def rename(grammar, old, new):
    """A copy of `grammar` with rule `old` called `new`, references to it included."""
    made = Grammar()
    made.text = grammar.text
    for name, body in grammar.items():
        renamed = (Ref(new) if isinstance(i, Ref) and i == old else i for i in body)
        made[new if name == old else name] = Seq(renamed)
    made.default = new if grammar.default == old else grammar.default
    return made
'''

TESTS = """\
from gram.rules import Grammar, Ref, expand, rename

TEXT = 'top = "a" mid\\nmid = "b" low "c"\\nlow = "d"'


def test_expand():
    grammar = Grammar(TEXT)
    assert expand(grammar, "top") == ["a", "b", "d", "c"]
    assert expand(grammar, "low") == ["d"]


def test_rename():
    grammar = Grammar(TEXT)
    made = rename(grammar, "top", "start")
    assert list(made) == ["start", "mid", "low"] and made.default == "start"
    assert expand(made, "start") == ["a", "b", "d", "c"]
    lower = rename(grammar, "low", "bottom")
    assert isinstance(lower["mid"][1], Ref) and lower["mid"][1] == "bottom"
"""

# target -> (what the reference says, the planted bug): bugs the repository's tests catch
PLANTED = {
    "rename": (
        "made.default = new if grammar.default == old else grammar.default",
        "made.default = grammar.default",
    ),
    "expand": ("depth < 8", "depth < 1"),
}


async def test_subclasses_of_builtins_are_rebuilt_readably_and_catch_planted_bugs(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    grammar = [
        "S('gram.rules:Grammar', {'top': S('gram.rules:Seq', ['a', S(",
        "S('gram.rules:Ref', 'mid')",
    ]
    shown = {qualname: grammar for qualname in PLANTED}  # the grammar, bodies, references
    await check_planted(make_repo, tmp_path, "gram", (RULES, TESTS), PLANTED, shown)


class Tagged(collections.OrderedDict):  # type: ignore[type-arg]
    __slots__ = ("tag",)


class Name(str):
    pass


class Count(int):
    pass


def test_content_and_fields_are_both_kept_and_overrides_do_not_run() -> None:
    tagged = Tagged(b=1, a=2)
    tagged.tag = Name("x")
    encoded = encode(tagged, 20_000)
    assert encoded == {
        "r": f"S('{__name__}:Tagged', {{'b': 1, 'a': 2}}, tag=S('{__name__}:Name', 'x'))"
    }
    rebuilt = eval(encoded["r"], vars(support))
    assert type(rebuilt) is Tagged and list(rebuilt.items()) == [("b", 1), ("a", 2)]
    assert type(rebuilt.tag) is Name and rebuilt.tag == "x"
    # an order that differs is a different value: not rebuilt as equal
    assert not support.same(
        eval(encoded["r"].replace("'b': 1, 'a': 2", "'a': 2, 'b': 1"), vars(support)), tagged
    )
    assert encode(Count(7), 100) == {"r": f"S('{__name__}:Count', 7)"}
