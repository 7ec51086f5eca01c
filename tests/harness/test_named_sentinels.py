"""Sentinels that carry their own name (boltons' `make_sentinel`, which glom uses for the keys
of its scopes: `LAST_CHILD_SCOPE`, `MODE`, `CHILD_ERRORS`): each is the one instance of a
class made for it, its only state the name it is held under. A check in situ gives the
reference a copy of the call's arguments; a copy of such a sentinel is another object, so
every scope lookup keyed by it misses (glom 23.5.0: `_unpack_stack`, `format_oneline_trace`,
`arg_val`, `Call.glomit` were all rejected as "not reproducible": the reference's copy
stopped at the first scope or raised KeyError). A small real repository in glom's shape; its
traced harnesses keep the calls and catch a bug planted in each target that the repository's
own tests catch."""

from __future__ import annotations

import copy

from simulator.harness.runtime import reposim_harness_support as support
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

SCOPES = '''\
"""Scopes keyed by sentinels, in the style of glom (whose sentinels are boltons')."""


def make_sentinel(name):
    """A new instance of a new class: compared by identity, shown by its name."""

    class Sentinel:
        def __init__(self):
            self.name = name
            self.var_name = None

        def __repr__(self):
            return f"Sentinel({self.name!r})"

        def __bool__(self):
            return False

    return Sentinel()


LAST_CHILD = make_sentinel("LAST_CHILD")
MODE = make_sentinel("MODE")
_MISSING = make_sentinel("_MISSING")


def child_scope(scope, mode=_MISSING):
    """A scope below `scope`; it inherits the mode unless one is given."""
    child = {"parent": scope, MODE: scope[MODE] if mode is _MISSING else mode}
    scope[LAST_CHILD] = child
    return child


def depth(scope):
    """How many scopes hang below `scope`, following the last child each time."""
    count = 0
    while LAST_CHILD in scope:
        scope = scope[LAST_CHILD]
        count += 1
    return count


def modes(scope):
    """The modes from `scope` down to its deepest child."""
    found = [scope[MODE]]
    while LAST_CHILD in scope:
        scope = scope[LAST_CHILD]
        found.append(scope[MODE])
    return found
'''

TESTS = """\
from flow.scopes import child_scope, depth, modes, MODE


def make():
    root = {MODE: "strict"}
    child_scope(child_scope(root, "loose"))
    return root


def test_depth():
    assert depth(make()) == 2
    assert depth({MODE: "strict"}) == 0


def test_modes():
    assert modes(make()) == ["strict", "loose", "loose"]
    assert child_scope({MODE: "a"}, "b")[MODE] == "b"
"""

PROJECT = {"flow/__init__.py": "", "flow/scopes.py": SCOPES, "tests/test_scopes.py": TESTS}

PLANTED = {
    "depth": ("flow/scopes.py", "count += 1", "count += 2"),
    "modes": ("flow/scopes.py", "found.append(scope[MODE])", "found.append(MODE)"),
    "child_scope": ("flow/scopes.py", "if mode is _MISSING", "if mode is not _MISSING"),
}

traced = traced_fixture(PROJECT, "flow", PLANTED)


async def test_named_sentinels_stay_themselves_in_the_reference_s_copy(traced: Traced) -> None:
    session, problems = traced
    # before: every call was "not reproducible" (the reference's copy of the scope had copies
    # of LAST_CHILD and MODE for keys: depth 0 instead of 2, KeyError for modes)
    assert_harnessed_and_valid(problems)
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_scopes.py")


class Holder:
    """A module-level object with state of its own: a name, but not the one it is held under
    (a setting a call may change)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_a_sentinel_is_kept_only_when_it_carries_the_name_it_is_held_under() -> None:
    sentinel = type("Sentinel", (), {})()
    sentinel.name, sentinel.var_name = "_MISSING", None
    assert support.identity_object(sentinel, "_MISSING")
    assert support.identity_object(sentinel, "MISSING")  # leading underscores aside
    # without the name it is held under, or with a state of its own, it is copied
    assert not support.identity_object(sentinel)
    assert not support.identity_object(Holder("parser"), "current")
    assert not support.identity_object(Holder("default"), "current")
    mutable = type("Sentinel", (), {})()
    mutable.name, mutable.seen = "MISSING", [1]
    assert not support.identity_object(mutable, "MISSING")
    # in a copy the reference gets, a module's named sentinel stays itself
    memo = support._kept_as_is("tests.harness")
    scope = {SENTINEL: 1, "setting": SETTING}
    copied = copy.deepcopy(scope, memo)
    assert copied[SENTINEL] == 1 and copied["setting"] is not SETTING


SENTINEL = type("Sentinel", (), {"__init__": lambda self: setattr(self, "name", "SENTINEL")})()
SETTING = Holder("SETTING-like but not a name")
