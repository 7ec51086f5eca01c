"""`reposim setup LIST`: a killed batch resumes without redoing finished repositories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.setup import repos

pytestmark = pytest.mark.slow


def _records(store: Path) -> list[dict[str, object]]:
    if not store.exists():
        return []
    return [json.loads(line) for line in store.read_text().splitlines() if line.strip()]


def _setup(listing: Path, store: Path, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reposim",
            "setup",
            str(listing),
            "--backend",
            "local",
            "--jobs",
            "1",
            "--results",
            str(store),
            "--trajectory-dir",
            str(tmp_path / "traj"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_killed_batch_resumes_without_redoing_finished_repositories(tmp_path: Path) -> None:
    builders = [repos.yaml_repo, repos.syntax_error_repo, repos.env_var_repo]
    paths = [build(tmp_path / build.__name__) for build in builders]
    listing = tmp_path / "repos.txt"
    listing.write_text("# three repositories\n" + "\n".join(str(p) for p in paths) + "\n")
    store = tmp_path / "results.jsonl"

    first = _setup(listing, store, tmp_path)
    deadline = time.monotonic() + 600
    while not _records(store) and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.2)
    assert first.poll() is None, first.communicate()[0]  # still running: killed mid-batch
    os.killpg(first.pid, signal.SIGKILL)  # the driver and its workers
    first.wait()
    done_before = [r["key"] for r in _records(store)]
    assert len(done_before) == 1, _records(store)

    second = _setup(listing, store, tmp_path)
    output, _ = second.communicate(timeout=900)
    assert second.returncode == 0, output
    records = _records(store)
    keys = [r["key"] for r in records]
    assert keys.count(done_before[0]) == 1  # not redone
    assert sorted(set(keys)) == sorted(str(p) for p in paths)
    by_key = {r["key"]: r for r in records}
    env_var = by_key[str(paths[2])]
    assert env_var["status"] == "failed" and env_var["category"] == "test-failures"
    assert "assert 'production' == 'test'" in str(env_var["evidence"])
    assert "(1 were already done)" in output and "test-failures 1" in output
    for path in paths[:2]:
        assert by_key[str(path)]["status"] == "ok"
