"""`reposim demo`: a bundled example project with a bug one test exposes, and a bundled
trajectory of an agent fixing it.

The trajectory is a scripted demonstration written by hand (no model provider was reachable when
it was made; `simulator.demo.script` holds the turns and re-records it). Replaying it runs every
tool for real against a fresh copy of the project.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from importlib import resources
from pathlib import Path

from simulator.git import GitError, run_git
from simulator.session import SessionError

DEMO_TASK = (
    "One of the tests of this project fails. Find out why, fix the code (not the test), "
    "and make the whole suite pass."
)

_GIT_IDENTITY = ["-c", "user.name=RepoSim demo", "-c", "user.email=demo@reposim.invalid"]


def example_repo() -> Path:
    """The bundled example project (package data)."""
    return Path(str(resources.files("simulator") / "demo_repo"))


def bundled_trajectory() -> Path:
    return Path(str(resources.files("simulator.demo") / "trajectory.jsonl"))


def test_command() -> str:
    """The demo's tests run with the interpreter RepoSim runs on, which has pytest; the plugins
    installed beside RepoSim are left out so that their warnings do not clutter the output."""
    return f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {shlex.quote(sys.executable)} -m pytest"


def prepare_workspace(destination: Path) -> Path:
    """Copy the example project to `destination/cart` and make it a git repository with one
    commit, so that the session records where it came from."""
    target = destination / "cart"
    if target.exists():
        raise SessionError(f"{target} already exists; choose an empty directory for the demo.")
    shutil.copytree(
        example_repo(),
        target,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"),
    )
    try:
        for args in (
            ["init", "-q", "-b", "main"],
            ["add", "-A"],
            [*_GIT_IDENTITY, "commit", "-q", "-m", "The cart example project"],
        ):
            run_git(target, *args)
    except GitError as exc:
        raise SessionError(f"Could not make the demo workspace a git repository: {exc}") from None
    return target
