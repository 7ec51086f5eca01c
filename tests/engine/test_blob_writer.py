"""Blobs are compressed off the recording thread (the UI's event loop during a terminal flood)."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import simulator.trajectory as trajectory_module
from simulator.events import Actor, Event, Kind
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter, read_trajectory
from tests.conftest import WAIT


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
