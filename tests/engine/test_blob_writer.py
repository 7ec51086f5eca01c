"""Blobs are compressed off the recording thread (the UI's event loop during a terminal flood)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import simulator.trajectory as trajectory_module
from simulator.events import Actor, Event, Kind
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter, blob_dir, read_trajectory
from tests.conftest import WAIT

ROOT = Path(__file__).resolve().parents[2]


def test_blobs_are_compressed_in_another_thread_and_readable_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compressed_on: list[threading.Thread] = []
    real_compress = gzip.compress

    def compress(data: bytes, *args: Any, **kwargs: Any) -> bytes:
        compressed_on.append(threading.current_thread())
        return real_compress(data, *args, **kwargs)

    monkeypatch.setattr(trajectory_module.gzip, "compress", compress)
    path = tmp_path / "t.jsonl"
    texts = ["".join(f"{n} output line {i}\r\n" for i in range(5_000)) for n in range(3)]
    writer = TrajectoryWriter(path, TrajectoryHeader.new("b"))
    for seq, text in enumerate(texts, 1):
        writer.write(Event(seq, 0.1 * seq, Actor.HUMAN, Kind.TERMINAL_OUTPUT, {"data": text}))
    # Read back while the writer is open (a blob may still be in flight): the reader waits.
    recorded = read_trajectory(path)
    assert [recorded.load_blob(e, "data") for e in recorded.events] == texts
    writer.close()
    assert len(compressed_on) == 3
    assert all(thread is not threading.current_thread() for thread in compressed_on)
    recorded = read_trajectory(path)
    assert [recorded.load_blob(e, "data") for e in recorded.events] == texts


RECORDER = """
import base64, os, sys
from pathlib import Path
from simulator.events import Actor, Event, Kind
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter

writer = TrajectoryWriter(Path(sys.argv[1]), TrajectoryHeader.new("killed"))
body = base64.b64encode(os.urandom(768 * 1024)).decode()  # 1 MiB that compresses slowly
seq = 0
while True:  # faster than the blobs compress: some always wait for the writer thread
    seq += 1
    payload = {"data": f"{seq}{body}"}
    writer.write(Event(seq, 0.01 * seq, Actor.HUMAN, Kind.TERMINAL_OUTPUT, payload))
"""


def test_a_killed_recording_keeps_the_bytes_of_every_event_it_wrote(tmp_path: Path) -> None:
    """SIGKILL while blobs wait for compression (issue 25): every event line in the file has its
    bytes. Blobs queued for the writer thread used to die with the process while the lines that
    named them were already written, so the trajectory loaded with outputs missing."""
    path = tmp_path / "t.jsonl"
    recorder = subprocess.Popen([sys.executable, "-c", RECORDER, str(path)])
    try:
        deadline = time.monotonic() + WAIT
        while not path.exists() or path.read_bytes().count(b"\n") < 21:  # the header and 20
            assert recorder.poll() is None, "the recorder ended before it was killed"
            assert time.monotonic() < deadline, "the recorder wrote no 20 events in time"
            time.sleep(0.05)
    finally:
        recorder.kill()
        recorder.wait()
    recorded = read_trajectory(path)
    assert len(recorded.events) >= 20
    for event in recorded.events:
        text = recorded.load_blob(event, "data")  # TrajectoryError if its blob is missing
        assert text.startswith(str(event.seq)) and len(text) == len(str(event.seq)) + (1 << 20)


STALLED = """
import sys, threading
from pathlib import Path
from simulator.events import Actor, Event, Kind
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter

# Hold a blob's last step (its rename) for good, as a SIGKILL in that instant finds it: the
# compressed copy of the first blob (in the writer thread) and the plain bytes of the second.
real_replace, parts = Path.replace, []

def replace(self, target):
    if self.parent.name.endswith(".blobs") and self.name.endswith(".part"):
        parts.append(self)
    if self.parent.name.endswith(".blobs") and (self.name.endswith(".tmp") or len(parts) > 1):
        threading.Event().wait()
    return real_replace(self, target)

Path.replace = replace
writer = TrajectoryWriter(Path(sys.argv[1]), TrajectoryHeader.new("stalled"))
for seq in (1, 2):
    payload = {"data": f"blob {seq} " + "x" * 40_000}
    writer.write(Event(seq, 0.01 * seq, Actor.HUMAN, Kind.TERMINAL_OUTPUT, payload))
"""


def test_gc_removes_the_unfinished_blobs_of_a_killed_writer_and_nothing_else(
    tmp_path: Path,
) -> None:
    """A recording SIGKILLed while a blob was half-way (written under a temporary name, not yet
    renamed) leaves `.part`/`.tmp` files (issue 25): `reposim gc` removes those of writers that
    are gone, and keeps a live writer's, files it did not name, and the finished blobs."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    killed, live = tmp_path / "killed.jsonl", tmp_path / "live.jsonl"
    writers = {
        path: subprocess.Popen([sys.executable, "-c", STALLED, str(path)], env=env, cwd=ROOT)
        for path in (killed, live)
    }
    try:

        def stalled(path: Path) -> bool:
            names = [p.name for p in blob_dir(path).iterdir()] if blob_dir(path).is_dir() else []
            return any(n.endswith(".part") for n in names) and any(
                n.endswith(".tmp") for n in names
            )

        deadline = time.monotonic() + WAIT
        while not all(stalled(path) for path in writers):
            assert all(w.poll() is None for w in writers.values()), "a writer ended early"
            assert time.monotonic() < deadline, "the writers did not reach their stalled rename"
            time.sleep(0.05)
        writers[killed].kill()  # SIGKILL: no cleanup code runs
        writers[killed].wait()
        unfinished = sorted(p for p in blob_dir(killed).iterdir() if p.suffix in (".part", ".tmp"))
        assert len(unfinished) == 2
        live_files = sorted(blob_dir(live).iterdir())
        digest = "0" * 64  # same place and shape, but no writer of RepoSim's named them
        decoys = [blob_dir(killed) / f"{digest}.part", blob_dir(killed) / f"{digest}.tmp"]
        for decoy in decoys:
            decoy.write_bytes(b"someone else's")

        def gc(*args: str) -> str:
            done = subprocess.run(
                [sys.executable, "-m", "reposim", "gc", *args],
                capture_output=True, text=True, cwd=ROOT, env=env, timeout=WAIT, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            return done.stdout

        pid = writers[killed].pid
        dry = gc("--dry-run")
        for path in unfinished:
            assert f"would remove unfinished blob {path} (owner pid {pid} is gone)" in dry
        assert str(live) not in dry and digest not in dry
        assert all(path.exists() for path in unfinished)
        done = gc()
        for path in unfinished:
            assert f"removed unfinished blob {path} (owner pid {pid} is gone)" in done
            assert not path.exists()
        assert all(decoy.exists() for decoy in decoys)
        assert sorted(blob_dir(live).iterdir()) == live_files  # a live writer keeps its own
        recorded = read_trajectory(killed)  # the finished blob stays, and loads
        assert [recorded.load_blob(e, "data")[:7] for e in recorded.events] == ["blob 1 "]
        assert "unfinished blob" not in gc("--dry-run")  # the writer's record is gone too
    finally:
        for writer in writers.values():
            writer.kill()
            writer.wait()


def test_a_blob_is_written_when_the_private_state_cannot_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record gc needs is best effort: with no usable state folder (here a file in its
    place) a recording still keeps its blobs."""
    (tmp_path / "state").write_text("not a folder")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, TrajectoryHeader.new("b"))
    text = "x" * 40_000
    writer.write(Event(1, 0.1, Actor.HUMAN, Kind.TERMINAL_OUTPUT, {"data": text}))
    writer.close()
    recorded = read_trajectory(path)
    assert recorded.load_blob(recorded.events[0], "data") == text
