"""`reposim extract LIST -o DIR`: many repositories through the batch layer, resumable."""

from __future__ import annotations

import json
from pathlib import Path

from tests.analysis.test_extract_cli import reposim
from tests.conftest import RepoFactory


def test_a_list_of_repositories_is_extracted_one_file_each_and_a_rerun_skips_them(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    one = make_repo({"a.py": 'def double(x):\n    """Twice x."""\n    return x * 2\n'}, name="one")
    two = make_repo({"b.py": "def f(:\n    pass\n\n\ndef g(y):\n    return y\n"}, name="two")
    listing = tmp_path / "repos.txt"
    listing.write_text(f"# two repositories and one that is gone\n{one}\n{two}\n{tmp_path}/gone\n")
    out = tmp_path / "out"
    results = tmp_path / "results.jsonl"
    args = ["extract", str(listing), "-o", str(out), "--filter", "none", "--results", str(results)]
    first = reposim(*args)
    assert first.returncode == 1, first.stderr  # one repository could not be extracted
    lines = [json.loads(x) for x in (out / "one.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "summary"
    assert [x["qualname"] for x in lines if x["type"] == "function"] == ["double"]
    two_lines = [json.loads(x) for x in (out / "two.jsonl").read_text().splitlines()]
    assert two_lines[-1]["files_with_errors"] == ["b.py"]  # a syntax error, reported, not fatal
    records = {r["key"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert records[str(one)]["status"] == "ok" and records[str(one)]["result"]["functions"] == 1
    gone = records[str(tmp_path / "gone")]
    assert gone["status"] == "failed" and gone["category"] == "missing"
    assert "status:" in first.stderr and "failed 1" in first.stderr

    (out / "one.jsonl").unlink()
    second = reposim(*args)
    assert "3 were already done" in second.stderr  # a failure is final too...
    assert not (out / "one.jsonl").exists(), "a finished repository is not extracted again"
    third = reposim(*args, "--retry-failed")  # ...unless asked to try it again
    assert "2 were already done" in third.stderr
    assert not (out / "one.jsonl").exists()


def test_a_list_needs_an_output_folder(tmp_path: Path) -> None:
    listing = tmp_path / "repos.txt"
    listing.write_text("x\n")
    result = reposim("extract", str(listing))
    assert result.returncode == 2
    assert "-o names the folder" in result.stderr
