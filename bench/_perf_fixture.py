"""What the perf benchmarks share: git in their fixture repositories, and the harness that
times one function of the fixture package `fastlib` on a list of numbers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@reposim.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@reposim.invalid",
}


def git(repo: Path, *args: str) -> str:
    """`git -C repo ARGS` as the bench author; its output."""
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout.strip()


def harness_text(function: str, items: int) -> str:
    """A harness whose bench() calls fastlib.core.`function` on the numbers below `items`."""
    return (
        f"from fastlib.core import {function}\n\nDATA = list(range({items}))\n\n\n"
        f"def bench():\n    {function}(DATA)\n"
    )
