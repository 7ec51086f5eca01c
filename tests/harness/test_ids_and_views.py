"""Two things a check in situ compared wrongly on glom 23.5.0 (`Call.glomit`: all 7 calls "not
reproducible"): a cache keyed by `id()` of an argument (glom's `_ArgValuator` caches by
`id(spec)`; the reference's copy of the spec has another id, so the scope it leaves holds
another key), and a dict view as the result (`dict_values` has no `==`: two views of equal
dicts never compared equal). A small real repository has both; its traced harnesses keep the
calls and catch a bug planted in each target that the repository's own tests catch."""

from __future__ import annotations

from simulator.harness.runtime import reposim_harness_support as support
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

EVAL = '''\
"""Specs evaluated in a scope whose valuator caches what it made by id(spec), as glom's does."""


class Valuator:
    def __init__(self):
        self.cache = {}

    def value(self, spec):
        if id(spec) in self.cache:
            return self.cache[id(spec)]
        result = self.cache[id(spec)] = [item * 2 for item in spec]
        return result


def evaluate(spec, scope):
    """The spec's value, made by the scope's valuator (one is put there on first use)."""
    valuator = scope.setdefault("valuator", Valuator())
    return valuator.value(spec)


def amounts(table):
    """The amounts of `table` (a view: it follows the table)."""
    return {name: row["amount"] for name, row in table.items()}.values()
'''

TESTS = """\
from calc.evaluate import amounts, evaluate


def test_evaluate():
    spec = [1, 2]
    scope = {"on_error": lambda exc: None}  # a lambda: the call is checked in situ
    assert evaluate(spec, scope) == [2, 4]
    assert evaluate(spec, scope) is evaluate(spec, scope)


def test_amounts():
    table = {"a": {"amount": 1}, "b": {"amount": 5}}
    assert list(amounts(table)) == [1, 5]
"""

PROJECT = {"calc/__init__.py": "", "calc/evaluate.py": EVAL, "tests/test_evaluate.py": TESTS}

PLANTED = {
    "evaluate": ("calc/evaluate.py", "item * 2 for item", "item + 2 for item"),
    "amounts": ("calc/evaluate.py", 'row["amount"] for', 'row["amount"] + 1 for'),
}

traced = traced_fixture(PROJECT, "calc", PLANTED)


async def test_an_id_kept_as_a_key_and_a_dict_view_compare_by_what_they_stand_for(
    traced: Traced,
) -> None:
    session, problems = traced
    # before: evaluate's calls differed from the reference's copy ("argument 1.valuator.cache"
    # held another id), amounts' result was never equal to the reference's (dict_values)
    assert_harnessed_and_valid(problems)
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_evaluate.py")


def test_ids_as_keys_follow_the_pairing_and_views_compare_by_content() -> None:
    spec, spec_copy = [1], [1]
    cache = {id(spec): "made"}
    cache_copy = {id(spec_copy): "made"}
    pairs = support._Pairs()
    # the spec met first (an earlier argument): its id names the copy's spec in the cache
    assert support.same(spec, spec_copy, pairs) and support.same(cache, cache_copy, pairs)
    assert not support.same(cache, {id(spec_copy): "other"}, pairs)
    # with nothing met before, an id key is a plain number
    assert not support.same(cache, cache_copy)
    assert not support.same({id(spec): 1}, {id(spec) + 8: 1})
    # dict views: by what they hold, in order
    assert support.same({"a": 1}.values(), {"a": 1}.values())
    assert not support.same({"a": 1}.values(), {"a": 2}.values())
    assert support.same({"a": 1}.items(), {"a": 1}.items())
    assert not support.same({"a": 1}.keys(), {"b": 1}.keys())
