"""Fixtures for the agent tests: a buggy project, a session on it, the fake model server."""

from __future__ import annotations

from tests.conftest import project_fixtures

BUGGY_PROJECT = {
    "stats/__init__.py": "",
    "stats/core.py": (
        "def total(values):\n    return sum(values)\n\n\n"
        "def mean(values):\n    return total(values) / (len(values) - 1)\n"
    ),
    "tests/test_core.py": (
        "from stats.core import mean, total\n\n\n"
        "def test_total():\n    assert total([1, 2, 3]) == 6\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    ),
}

BUG = "total(values) / (len(values) - 1)"
FIX = "total(values) / len(values)"


buggy_repo, session = project_fixtures(
    BUGGY_PROJECT, repo="buggy_repo", name="buggy", trajectory="run.jsonl"
)
