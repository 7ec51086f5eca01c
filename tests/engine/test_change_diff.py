"""The diffs recorded with file changes: correct for any change, and made by git where difflib
is quadratic (a replace-all over a big file used to freeze the UI for 40-90 s)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from simulator import session as session_module
from simulator.git import diff_texts
from simulator.session import unified_diff


def big_texts(functions: int) -> tuple[str, str]:
    before = "".join(f"def f{i}(x):\n    return x + {i}  # value\n" for i in range(functions))
    return before, before.replace("value", "VALUE")


def applies(tmp_path: Path, path: str, before: str, after: str, diff: str) -> bool:
    """`git apply` of the recorded diff turns `before` into exactly `after`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / path).write_text(before)
    (tmp_path / "change.diff").write_text(diff)
    subprocess.run(["git", "-C", str(repo), "apply", str(tmp_path / "change.diff")], check=True)
    return (repo / path).read_text() == after


def test_a_big_change_is_diffed_by_git_and_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = big_texts(10_500)  # 21,000 lines, every other one changed
    calls: list[int] = []
    monkeypatch.setattr(
        session_module, "diff_texts", lambda a, b: calls.append(1) or diff_texts(a, b)
    )
    diff = unified_diff("pkg/big.py", before, after)
    assert calls == [1]
    assert diff.startswith("--- a/pkg/big.py\n+++ b/pkg/big.py\n@@ -1,21000 +1,21000 @@\n")
    assert diff.count("\n-    return") == diff.count("\n+    return") == 10_500
    assert applies(tmp_path, "big.py", before, after, diff.replace("pkg/big.py", "big.py"))


def test_small_changes_keep_difflib_and_equal_texts_give_no_diff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_module, "diff_texts", lambda a, b: pytest.fail("git used"))
    before = "".join(f"line {i}\n" for i in range(5000))
    after = before.replace("line 2500\n", "line 2500 changed\n")
    diff = unified_diff("a.txt", before, after)
    assert "-line 2500\n+line 2500 changed\n" in diff
    assert unified_diff("a.txt", before, before) == ""
    assert unified_diff("new.txt", "", "x\n") == "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"


def test_git_diff_keeps_a_missing_final_newline(tmp_path: Path) -> None:
    before, after = big_texts(600)
    after = after.rstrip("\n")
    diff = unified_diff("m.py", before, after)
    assert diff.endswith("\\ No newline at end of file\n")
    assert applies(tmp_path, "m.py", before, after, diff)
