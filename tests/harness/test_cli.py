"""reposim harness / dataset on the command line: one repository, a list as a batch, errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import reposim as run_reposim


def reposim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_reposim(*args, cwd=cwd, timeout=600)


def test_harness_then_export_and_import(calc_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.jsonl"
    proc = reposim(
        "harness",
        str(calc_repo),
        "clamp",
        "--repeats",
        "1",
        "--max-mutants",
        "4",
        "-o",
        str(out),
        "--trajectory",
        str(tmp_path / "t.jsonl"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "targets 1, harnesses 1 (1 with a case), valid 1" in proc.stdout
    assert "outcome per target: valid 1" in proc.stdout
    assert "harness: target shapes/calc.py::clamp valid cov 100%" in proc.stderr
    [problem] = [json.loads(line) for line in out.read_text().splitlines()]
    assert problem["curation"]["state"] == "valid"
    assert problem["validation"]["mutation"]["total"] == 4

    r2e = tmp_path / "r2e.json"
    proc = reposim("dataset", "export", str(out), "--to", "r2e", "-o", str(r2e), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    back = tmp_path / "back.jsonl"
    proc = reposim("dataset", "import", str(r2e), "-o", str(back), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(back.read_text()) == problem

    # a list of repositories runs as a batch, and a rerun resumes from its results
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{calc_repo}\n")
    args = (
        "harness",
        str(listing),
        "clamp",
        "--repeats",
        "1",
        "--max-mutants",
        "2",
        "-o",
        str(tmp_path / "many"),
        "--results",
        str(tmp_path / "results.jsonl"),
    )
    proc = reposim(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "valid 1 in 1 repositories" in proc.stderr
    assert "outcome per target: valid 1" in proc.stderr  # the batch summary's reasons
    assert (tmp_path / "many" / "shapes.problems.jsonl").exists()
    proc = reposim(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(1 were already done)" in proc.stderr


def test_user_errors_are_one_sentence(tmp_path: Path) -> None:
    proc = reposim("harness", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().endswith("does not exist.")
    assert "Traceback" not in proc.stderr
    proc = reposim("dataset", "import", str(tmp_path / "none.json"), "-o", "x", cwd=tmp_path)
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    proc = reposim("harness", str(tmp_path), "--generator", "model", cwd=tmp_path)
    assert proc.returncode == 2 and "needs --model" in proc.stderr
