"""`reposim fleet` as a user runs it (a real process): JSON lines with --once, the folder found
from a batch's results file, clear errors, and a view that waits for a batch about to start."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_commands import reposim
from tests.fleet.helpers import GrowingRun


def test_once_prints_a_line_per_session_from_a_folder_or_a_results_file(tmp_path: Path) -> None:
    folder = tmp_path / "runs.trajectories"
    folder.mkdir()
    GrowingRun(folder, "alpha").command("make test", code=2)
    beta = GrowingRun(folder, "beta")
    beta.command("ls")
    beta.finish("done")
    results = tmp_path / "runs.jsonl"
    results.write_text(json.dumps({"key": "beta", "status": "ok"}) + "\n")

    by_folder = reposim("fleet", str(folder), "--once")
    assert by_folder.returncode == 0, by_folder.stderr
    rows = [json.loads(line) for line in by_folder.stdout.splitlines()]
    assert [(r["session"], r["state"], r["steps"]) for r in rows] == [
        ("alpha", "running", 1),
        ("beta", "finished", 1),
    ]
    assert rows[0]["last_action"] == "$ make test"

    by_results = reposim("fleet", str(results), "--once")
    assert by_results.returncode == 0, by_results.stderr
    verdicts = {r["session"]: r["verdict"] for r in map(json.loads, by_results.stdout.splitlines())}
    assert verdicts == {"alpha": "", "beta": "ok"}


def test_a_target_that_is_not_there_is_one_sentence(tmp_path: Path) -> None:
    missing = reposim("fleet", str(tmp_path / "nothing.jsonl"), "--once")
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith(
        "is neither a folder of trajectories nor a batch's results file."
    )
    assert "Traceback" not in missing.stderr
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_text("")
    lone = reposim("fleet", str(orphan), "--once")
    assert lone.returncode == 2 and "its trajectory folder" in lone.stderr


def test_help_says_how_to_take_a_session_over() -> None:
    shown = reposim("fleet", "--help")
    assert shown.returncode == 0
    assert "`p` takes a running session over" in " ".join(shown.stdout.split())
