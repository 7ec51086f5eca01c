"""Shared helpers for the docker benchmarks: a throwaway repository and percentiles."""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from pathlib import Path

IMAGE = os.environ.get("REPOSIM_TEST_IMAGE", "reposim/base:bookworm-2")


def sample_repo() -> Path:
    """A small git repository (a dozen files) in a temporary directory."""
    root = Path(tempfile.mkdtemp(prefix="reposim-bench-"))
    for i in range(12):
        (root / f"mod{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
    }
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "bench"], check=True, env=env)
    return root


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"machine: {os.cpu_count()} cores, load average {one:.1f} (1 min) {five:.1f} (5 min)"
