"""`reposim gc` prunes the tags that vouch for trajectories recorded here
($XDG_STATE_HOME/reposim/trajectory-chains) only when their trajectory is provably gone, and
`--dry-run` lists exactly those. Real files, real `reposim gc` processes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from simulator.events import Actor, Event, Kind
from simulator.paths import trajectories_dir
from simulator.replay.reexec import untrusted_line
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter, open_trajectory
from tests.conftest import REPOSIM, WAIT


def tag_files(chains: Path) -> set[str]:
    return {p.name for p in chains.iterdir() if not p.name.endswith(".json")}


def record(path: Path, name: str, chains: Path) -> str:
    """A sealed trajectory of three events at `path`; the name of the tag file it made."""
    before = tag_files(chains) if chains.is_dir() else set()
    header = TrajectoryHeader.new(name)
    writer = TrajectoryWriter(path, header)
    for seq in (1, 2, 3):
        writer.write(Event(seq, 0.1 * seq, Actor.HUMAN, Kind.NOTE, {"text": f"{name} {seq}"}))
    writer.close()
    assert header.seal is not None
    [made] = tag_files(chains) - before
    return made


def gc(env: dict[str, str], *args: str) -> list[str]:
    done = subprocess.run(
        [*REPOSIM, "gc", *args], env=env, capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if "trajectory chain" in line]


def test_gc_prunes_the_tags_of_trajectories_that_are_gone_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = dict(os.environ)
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state")):
        env[var] = str(tmp_path / sub)
        monkeypatch.setenv(var, env[var])
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    monkeypatch.setenv("XDG_DATA_HOME", env["XDG_DATA_HOME"])
    chains = tmp_path / "state" / "reposim" / "trajectory-chains"
    work = tmp_path / "work"
    kept = record(work / "kept.jsonl", "kept", chains)
    deleted = record(work / "deleted.jsonl", "deleted", chains)
    overwritten = record(work / "reused.jsonl", "first", chains)
    second = record(work / "reused.jsonl", "second", chains)  # the same path, another recording
    moved = record(work / "moved.jsonl", "moved", chains)
    trajectories_dir().mkdir(parents=True)
    shutil.move(work / "moved.jsonl", trajectories_dir() / "moved.jsonl")
    older = record(work / "older.jsonl", "older", chains)
    (chains / f"{older}.json").unlink(missing_ok=True)  # tags from before records were kept
    (work / "older.jsonl").unlink()
    (work / "deleted.jsonl").unlink()
    every = {kept, deleted, overwritten, second, moved, older}
    assert tag_files(chains) == every

    listed = gc(env, "--dry-run")
    assert sorted(listed) == sorted(
        [
            f"would remove trajectory chain {chains / deleted} (its trajectory "
            f"{work / 'deleted.jsonl'} is gone)",
            f"would remove trajectory chain {chains / overwritten} (its trajectory "
            f"{work / 'reused.jsonl'} is gone)",
        ]
    )
    assert tag_files(chains) == every

    assert sorted(gc(env)) == sorted(line.replace("would remove", "removed") for line in listed)
    left = every - {deleted, overwritten}
    assert {p.name for p in chains.iterdir()} == left | {f"{n}.json" for n in left - {older}}
    assert gc(env) == []
    # What stays still vouches for its file, line by line.
    for path in (work / "kept.jsonl", work / "reused.jsonl", trajectories_dir() / "moved.jsonl"):
        assert untrusted_line(open_trajectory(path)) is None, path
