"""Fixtures for the code-navigation tests: a real session over a small Python + C repository."""

from __future__ import annotations

from tests.analysis.nav_project import NAV_REPO
from tests.conftest import project_fixtures

nav_repo, session = project_fixtures(
    NAV_REPO, repo="nav_repo", name="navrepo", trajectory="run.jsonl"
)
