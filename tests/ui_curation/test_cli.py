"""`reposim curate`'s errors a user can cause: one sentence, exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from simulator.dataset.schema import Problem
from simulator.dataset.writers import write_jsonl
from simulator.harness.target import find_targets


def curate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reposim", "curate", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        # An unknown model imports litellm: 66 s alone at load 100, and this test's two runs took
        # 297 s at load ~30 (this stop). A deadline only; pytest-timeout's 900 s bounds the test.
        timeout=600,
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


def test_a_target_that_picks_nothing_is_an_error_naming_it(
    tools_repo: Path, tmp_path: Path
) -> None:
    """`--target` used to drop what it did not find: a person asking for two targets with one
    mistyped got one, unsaid (and over a problems file --target was ignored)."""
    out = tmp_path / "out.jsonl"
    typo = curate(str(tools_repo), "--target", "clamp", "--target", "clmap*", "-o", str(out))
    assert typo.returncode == 2, typo.stderr
    assert "'clmap*'" in typo.stderr and "'clamp'" not in typo.stderr
    assert "Traceback" not in typo.stderr
    assert typo.stderr.splitlines()[0].startswith(
        "reposim: error: --target 'clmap*' picks no target"
    )
    dataset = tmp_path / "problems.jsonl"
    source = {"name": "tools", "source": str(tools_repo), "commit": None}
    problems = [
        Problem(f"tools@worktree:{t.id}", source, t.as_dict(), t.module)
        for t in find_targets(tools_repo)
    ]
    write_jsonl(problems, dataset)
    over_file = curate(str(dataset), "--target", "tools/math.py::nosuch", "-o", str(out))
    assert over_file.returncode == 2, over_file.stderr
    assert "'tools/math.py::nosuch'" in over_file.stderr
    assert not out.exists()
