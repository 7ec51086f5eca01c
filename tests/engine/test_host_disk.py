"""Host disk has a total cap (issue 25 item 8): blobs are gzip-compressed, a session keeps at
most its output budget, and `reposim gc` deletes the output spools a killed run left behind
(only those RepoSim's private state records, whose process is gone)."""

from __future__ import annotations

import gzip
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import simulator.trajectory as trajectory_module
from simulator.events import Actor, Event, Kind
from simulator.session import Session
from simulator.trajectory import (
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryWriter,
    blob_dir,
    blob_path,
    read_trajectory,
)

ROOT = Path(__file__).resolve().parents[2]


def _disk_use(out: Path) -> int:
    """Bytes the trajectory and its blobs take."""
    total = out.stat().st_size
    if blob_dir(out).is_dir():
        total += sum(p.stat().st_size for p in blob_dir(out).iterdir())
    return total


def test_blobs_are_compressed_and_plain_blobs_of_older_files_still_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    big = "".join(f"line {n} of a long note\n" for n in range(20_000))
    writer = TrajectoryWriter(path, TrajectoryHeader.new("b"))
    writer.write(Event(1, 0.1, Actor.HUMAN, Kind.NOTE, {"text": big}))
    writer.close()
    digest = hashlib.sha256(big.encode()).hexdigest()
    stored = blob_path(path, digest)
    assert stored.name.endswith(".gz") and stored.stat().st_size < len(big) // 4
    recorded = read_trajectory(path)
    assert recorded.load_blob(recorded.events[0], "text") == big
    # A file written before blobs were compressed: `<digest>`, plain.
    (blob_dir(path) / digest).write_bytes(gzip.decompress(stored.read_bytes()))
    stored.unlink()
    assert read_trajectory(path).load_blob(recorded.events[0], "text") == big


def test_a_blob_that_inflates_past_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bomb.jsonl"
    writer = TrajectoryWriter(path, TrajectoryHeader.new("b"))
    writer.write(Event(1, 0.1, Actor.HUMAN, Kind.NOTE, {"text": "x" * 40_000}))
    writer.close()
    monkeypatch.setattr(trajectory_module, "MAX_BLOB", 10_000)
    recorded = read_trajectory(path)
    with pytest.raises(TrajectoryError, match="inflates to more than 10000 bytes"):
        recorded.load_blob(recorded.events[0], "text")


NOISE = "head -c 1500000 /dev/urandom | base64 -w 100"  # ~2 MB that gzip shrinks only to ~75%


async def test_a_session_keeps_no_more_output_than_its_budget(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"README": "budget\n"})
    budget = 3 << 20
    growth = {}
    for name, limit in (("unbounded", 1 << 40), ("budget", budget)):
        out = tmp_path / f"{name}.jsonl"
        async with await Session.open(repo, trajectory_path=out, output_budget=limit) as session:
            results = [await session.exec(NOISE) for _ in range(5)]
        growth[name] = _disk_use(out)
        print(f"{name}: 5 x {results[0].output_size} bytes printed, {growth[name]} bytes on disk")
    assert growth["unbounded"] > 5 << 20  # the same commands without a budget keep it all
    assert growth["budget"] <= budget * 1.1
    assert all(r.exit_code == 0 for r in results)
    assert b"the session's output budget is used up" in results[-1].output
    notes = [e for e in read_trajectory(out).events if e.kind == Kind.NOTE]
    assert len(notes) == 1 and "output budget (3 MiB) is used up" in notes[0].payload["text"]


SPOOLING = """
import asyncio, sys
from simulator.session import Session

async def main():
    session = await Session.open(sys.argv[1], trajectory_path=sys.argv[2])
    await session.exec("head -c 2000000 /dev/zero | tr '\\\\0' x; echo; sleep 600")

asyncio.run(main())
"""


def test_gc_deletes_the_spool_a_killed_run_left_and_nothing_else(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"README": "spool\n"})
    out = tmp_path / "killed.jsonl"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen(
        [sys.executable, "-c", SPOOLING, str(repo), str(out)], cwd=ROOT, env=env
    )
    try:
        deadline = time.monotonic() + 180
        records = tmp_path / "state" / "reposim" / "spools"
        # Wait for the spool and its owner record: the file is made only once the output outgrew
        # the window. (Its size stays 0 here: 2 MB of one byte gzip to less than the file's
        # write buffer, so waiting for bytes on disk ran to the deadline, 180 s, every time.)
        while time.monotonic() < deadline:
            spools = list(blob_dir(out).glob("*.partial")) if blob_dir(out).is_dir() else []
            if spools and list(records.glob("*.json")):
                break
            assert proc.poll() is None, "the session ended early"
            time.sleep(0.1)
        else:
            raise AssertionError("no output spool within 180 s")
        (spool,) = spools
    finally:
        proc.send_signal(signal.SIGKILL)  # no cleanup code gets to run
        proc.wait()
    decoy = blob_dir(out) / "not-ours.partial"  # same place and name, but never recorded
    decoy.write_bytes(b"someone else's")

    def gc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reposim", "gc", *args],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False,
        )  # fmt: skip

    dry = gc("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove output spool {spool} (owner pid {proc.pid} is gone)" in dry.stdout
    assert "not-ours" not in dry.stdout and spool.exists()
    done = gc()
    assert f"removed output spool {spool}" in done.stdout, done.stdout + done.stderr
    assert not spool.exists() and decoy.exists()
    assert not list((tmp_path / "state" / "reposim" / "spools").glob("*.json"))
