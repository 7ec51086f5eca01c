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


def test_a_model_that_cannot_be_used_is_one_sentence(tmp_path: Path) -> None:
    only_base = curate(str(tmp_path), "--api-base", "http://127.0.0.1:9/v1")
    assert only_base.returncode == 2 and "--api-base needs --model" in only_base.stderr
    unknown = curate(str(tmp_path), "--model", "no-such-provider/x")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert unknown.stderr.strip().count("\n") == 0, unknown.stderr
