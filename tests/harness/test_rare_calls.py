"""A branch a test takes once, after its target's pool of calls is full, is kept (issue 22 item
3, choose calls by coverage; marshmallow 3.20.1's Field.make_error, sample of stop 36: its
KeyError branch is taken by one call in one test, after 120 candidate calls from 237 tests, and
the harness covered 50% of its branches). Calls past the pool's limits are traced for their
arcs alone; one that runs new arcs used to make only the *next* call of the target in that test
be encoded, and there was none. Now the probed call's arguments are pickled before it runs and
it is kept from that pickle."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RepoFactory
from tests.harness.planted import check_planted

RULES = '''\
"""Error messages by key."""


def message(errors, key, **kwargs):
    """The message for `key`, formatted; a key with no message is noted in `errors` and
    refused."""
    try:
        text = errors[key]
    except KeyError:
        errors.setdefault("_missing", []).append(key)
        raise AssertionError(f"no message for {key!r}") from None
    return text.format(**kwargs)
'''

# 12 calls from one test fill its share of the pool; the 13th to 15th are traced for their
# arcs alone, and the last one takes the branch no call before it took
TESTS = """\
import pytest

from errors.rules import message


def test_messages():
    errors = {"required": "{name} is required"}
    for number in range(15):
        assert message(errors, "required", name=f"f{number}") == f"f{number} is required"
    with pytest.raises(AssertionError):
        message(errors, "absent")
    assert errors["_missing"] == ["absent"]
"""

PLANTED = {"message": ('errors.setdefault("_missing", []).append(key)', "pass")}

# the rare call, with the arguments as they were before it ran (no "_missing" entry yet) and
# as it left them
SHOWN = {
    "message": [
        "args=({'required': '{name} is required'}, 'absent')",
        "raises=('builtins.AssertionError', \"no message for 'absent'\")",
        "after=({'required': '{name} is required', '_missing': ['absent']}, 'absent')",
    ]
}


async def test_a_branch_taken_once_after_the_pool_is_full_is_kept(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    """Before: the harness held the 12 calls of the common branch only and missed the bug."""
    await check_planted(make_repo, tmp_path, "errors", (RULES, TESTS), PLANTED, SHOWN)
