"""Trajectory files: flushed per line, large outputs as blobs, damage reported by line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from simulator.events import Actor, Event, Kind
from simulator.trajectory import (
    BLOB_THRESHOLD,
    SCHEMA,
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryWriter,
    read_trajectory,
)


def _event(seq: int, **payload: object) -> Event:
    return Event(seq=seq, t=seq * 0.1, actor=Actor.HUMAN, kind=Kind.NOTE, payload=dict(payload))


def test_round_trip_and_large_output_blob(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, TrajectoryHeader.new("s1"))
    big = "x" * (BLOB_THRESHOLD * 3) + "END"
    writer.write(_event(1, text="small"))
    writer.write(_event(2, text=big))
    writer.close()
    trajectory = read_trajectory(path)
    assert trajectory.header.schema == SCHEMA and trajectory.problem is None
    assert [e.seq for e in trajectory.events] == [1, 2]
    shortened = trajectory.events[1].payload["text"]
    assert len(shortened) < BLOB_THRESHOLD and "elided" in shortened
    assert trajectory.load_blob(trajectory.events[1], "text") == big
    assert trajectory.load_blob(trajectory.events[0], "text") == "small"


def test_writer_killed_mid_write_leaves_a_readable_prefix(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from simulator.events import Actor, Event, Kind
        from simulator.trajectory import TrajectoryHeader, TrajectoryWriter
        w = TrajectoryWriter(Path({str(path)!r}), TrajectoryHeader.new("k"))
        i = 0
        while True:
            i += 1
            w.write(Event(seq=i, t=0.0, actor=Actor.AGENT, kind=Kind.NOTE,
                          payload={{"text": "y" * 5000}}))
            if i == 50:
                print("ready", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Cut the file mid-line too, as a crash between write() calls of one line would.
    raw = path.read_bytes()
    path.write_bytes(raw + b'{"seq": 999999, "t": 0.0, "act')
    trajectory = read_trajectory(path)
    assert len(trajectory.events) >= 50
    assert [e.seq for e in trajectory.events] == list(range(1, len(trajectory.events) + 1))
    assert trajectory.problem is not None and "incomplete" in trajectory.problem
    assert f"line {len(trajectory.events) + 2}" in trajectory.problem


@pytest.mark.malformed_trajectories
def test_corrupt_line_is_reported_by_number(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.jsonl"
    lines = [json.dumps(TrajectoryHeader.new("c").to_dict())]
    lines += [json.dumps(_event(i, text="ok").as_dict()) for i in (1, 2)]
    lines += ["{not json", json.dumps(_event(4).as_dict())]
    path.write_text("\n".join(lines) + "\n")
    trajectory = read_trajectory(path)
    assert [e.seq for e in trajectory.events] == [1, 2]
    assert trajectory.problem is not None and trajectory.problem.startswith("line 4 is corrupt")


@pytest.mark.malformed_trajectories
def test_event_missing_fields_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    header = TrajectoryHeader.new("m").to_dict()
    path.write_text(json.dumps(header) + "\n" + json.dumps({"seq": 1}) + "\n")
    trajectory = read_trajectory(path)
    assert trajectory.events == [] and "line 2" in (trajectory.problem or "")


@pytest.mark.parametrize(
    ("first_line", "message"),
    [
        ('{"schema": "reposim.trajectory/9"}', "uses schema reposim.trajectory/9"),
        ('{"schema": "something-else"}', "not reposim.trajectory/1"),
        ('{"other": []}', "neither a RepoSim trajectory nor"),
        ("plain text", "line 1 is not JSON"),
    ],
)
def test_unknown_files_are_refused_clearly(tmp_path: Path, first_line: str, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(first_line + "\n")
    with pytest.raises(TrajectoryError, match=message):
        read_trajectory(path)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryError, match="does not exist"):
        read_trajectory(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(TrajectoryError, match="is empty"):
        read_trajectory(tmp_path / "empty.jsonl")
