"""`reposim replay / export / import` run as a user runs them: a real process."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import reposim
from tests.replay.replay_helpers import SAMPLES


def test_verify_exit_codes_for_ci(recorded: tuple[Path, Path], tmp_path: Path) -> None:
    repo, original = recorded
    ok = reposim("replay", str(original), "--verify", "--trajectory", str(tmp_path / "a.jsonl"))
    assert ok.returncode == 0, ok.stderr
    assert "0 differ" in ok.stdout and ok.stdout.splitlines()[0].startswith("ok")
    (repo / "calc" / "ops.py").write_text("def add(a, b):\n    return 0\n")
    changed = reposim(
        "replay",
        str(original),
        "--verify",
        "--current",
        "--json",
        "--trajectory",
        str(tmp_path / "b.jsonl"),
    )
    assert changed.returncode == 1
    lines = [json.loads(line) for line in changed.stdout.splitlines()]
    summary = lines[-1]["summary"]
    assert summary["first_difference"] == 1 and summary["differed"] >= 2
    assert "as it is now" in changed.stderr


def test_a_start_that_cannot_be_rebuilt_exits_2_before_running(tmp_path: Path) -> None:
    result = reposim("replay", str(SAMPLES[0]), "--verify")
    assert result.returncode == 2
    assert result.stderr.startswith("reposim: error: The trajectory (imported from")
    assert "Traceback" not in result.stderr


def test_fork_then_exec_prints_the_new_trajectory(original: Path, tmp_path: Path) -> None:
    out = tmp_path / "fork.jsonl"
    result = reposim(
        "replay",
        str(original),
        "--fork-at",
        "6",
        "--then-exec",
        "cat notes.txt",
        "--trajectory",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("first\n")
    assert f"forked at step 6: {out}" in result.stdout
    header = json.loads(out.read_text().splitlines()[0])
    assert header["parent"]["step"] == 6


def test_export_import_and_dump(original: Path, tmp_path: Path) -> None:
    for fmt in ("swe-agent", "mini-swe-agent", "openai-chat", "asciicast"):
        result = reposim("export", str(original), "--to", fmt)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip()
    refused = reposim("import", str(original), "-o", str(tmp_path / "x.jsonl"))
    assert refused.returncode == 2 and "already a RepoSim trajectory" in refused.stderr
    dumped = reposim("replay", str(SAMPLES[1]), "--json")
    assert dumped.returncode == 0
    assert json.loads(dumped.stdout.splitlines()[0])["imported"]["format"] == "swe-agent"


def test_bad_input_is_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    for args in (
        ["replay", str(bad), "--json"],
        ["export", str(bad), "--to", "asciicast"],
        ["replay", str(tmp_path / "missing.jsonl")],
        ["replay", str(bad)],
    ):
        result = reposim(*args)
        assert result.returncode == 2, args
        assert result.stderr.startswith("reposim: error: ") and result.stderr.count("\n") == 1
