"""`reposim perf` user errors: one sentence and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def reposim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reposim", *args], capture_output=True, text=True, timeout=120
    )


def test_api_and_command_together_is_a_user_error(twox_repo: Path) -> None:
    proc = reposim(
        "perf",
        "compare",
        str(twox_repo),
        "--a",
        "a",
        "--b",
        "b",
        "--api",
        "x.y",
        "--command",
        "true",
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "reposim: error: Give exactly one of --api and --command."


def test_an_unknown_revision_is_one_sentence(twox_repo: Path, tmp_path: Path) -> None:
    proc = reposim(
        "perf",
        "compare",
        str(twox_repo),
        "--a",
        "no-such-rev",
        "--b",
        "b",
        "--command",
        "true",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 2, proc.stderr
    assert "Cannot check out 'no-such-rev' for side A" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_rows_file_without_revisions_is_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("repo,api,a\n/tmp,x.y,HEAD\n")
    proc = reposim("perf", "batch", str(rows), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"reposim: error: Row 1 of {rows} has no b."
