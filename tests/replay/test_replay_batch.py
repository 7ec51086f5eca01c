"""`reposim replay DIR --verify`: every trajectory of a folder re-executed through the batch
layer, one record each, resumable."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from simulator.session import Session
from tests.replay.replay_helpers import SMALL_PROJECT, record_session
from tests.replay.test_replay_cli import reposim


async def test_a_folder_of_trajectories_is_verified_one_task_each(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo(SMALL_PROJECT, name="calc")
    folder = tmp_path / "recorded"
    await record_session(repo, folder / "steady.jsonl")
    async with await Session.open(repo, trajectory_path=folder / "nested" / "random.jsonl") as s:
        await s.exec("echo $RANDOM$RANDOM$RANDOM")  # a different number every time it runs
    (folder / "notes.jsonl").write_text("this is not a trajectory\n")
    results = tmp_path / "results.jsonl"
    args = ["replay", str(folder), "--verify", "--results", str(results), "--jobs", "2"]
    first = reposim(*args, "--trajectory", str(tmp_path / "again"))
    assert first.returncode == 1, first.stderr
    records = {Path(r["key"]).name: r for r in map(json.loads, results.read_text().splitlines())}
    assert set(records) == {"steady.jsonl", "random.jsonl", "notes.jsonl"}
    steady = records["steady.jsonl"]
    assert steady["status"] == "ok" and steady["result"]["differed"] == 0
    assert steady["result"]["matched"] >= 10 and steady["result"]["backend"] == "local"
    assert Path(steady["trajectory"]).parent == tmp_path / "again"
    random = records["random.jsonl"]
    assert (random["status"], random["category"]) == ("failed", "differs")
    assert "first difference at step" in random["evidence"]
    assert records["notes.jsonl"]["category"] == "unreadable"
    assert "random.jsonl: failed (differs)" in first.stdout

    again = reposim(*args)
    assert "3 were already done" in again.stderr and again.returncode == 1
