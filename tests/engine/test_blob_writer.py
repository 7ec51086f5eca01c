"""Blobs are compressed off the recording thread (the UI's event loop during a terminal flood)."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path
from typing import Any

import pytest

import simulator.trajectory as trajectory_module
from simulator.events import Actor, Event, Kind
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter, read_trajectory


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
