"""`reposim curate`'s errors a user can cause: one sentence, exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def curate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reposim", "curate", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_source_or_a_file_without_problems_is_one_sentence(tmp_path: Path) -> None:
    missing = curate(str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    assert "neither a repository directory nor a problems file" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    broken = curate(str(bad))
    assert broken.returncode == 2 and "line 1 of" in broken.stderr
    assert "Traceback" not in broken.stderr
    helped = curate("--help")
    assert helped.returncode == 0 and "accepts" in helped.stdout
