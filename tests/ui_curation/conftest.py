"""A fixture repository to curate: one function its tests cover well, one they barely cover,
one they cover without checking much."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.session import Session
from tests.conftest import RepoFactory

MATH = '''\
"""Small functions with known branches."""


def clamp(value, low, high):
    """Clamp `value` into [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    if value < low:
        return low
    if value > high:
        return high
    return value


def sign(number, unit=1):
    """`unit`, 0 or -`unit` by the sign of `number`."""
    if number > 0:
        return unit
    if number < 0:
        return -unit
    return number  # zero (or NaN) as it came


def scale(values, factor):
    """Every value times `factor`; an empty list stays empty."""
    if not values:
        return []
    return [v * factor for v in values]
'''

TESTS = """\
import pytest

from tools.math import clamp, scale, sign


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0
    assert clamp(11, 0, 10) == 10
    with pytest.raises(ValueError):
        clamp(1, 5, 0)


def test_sign_positive():
    assert sign(7) == 1


def test_scale():
    assert scale([1, 2], 3) == [3, 6]
    assert scale([], 3) == []
"""

PROJECT = {"tools/__init__.py": "", "tools/math.py": MATH, "tests/test_math.py": TESTS}


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home / "reposim"


@pytest.fixture
def tools_repo(make_repo: RepoFactory) -> Path:
    return make_repo(PROJECT, name="tools")


@pytest.fixture
async def session(tools_repo: Path, tmp_path: Path) -> AsyncIterator[Session]:
    opened = await Session.open(tools_repo, trajectory_path=tmp_path / "curation.jsonl")
    yield opened
    await opened.close()
