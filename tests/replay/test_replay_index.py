"""The lazy trajectory index: same events as the plain reader, clear errors, a viewable prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.events import Actor, Event
from simulator.replay.workspace import workspace_at
from simulator.trajectory import (
    SCHEMA,
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryIndex,
    TrajectoryWriter,
    open_trajectory,
    read_trajectory,
)


def write_trajectory(path: Path, count: int) -> Path:
    writer = TrajectoryWriter(path, TrajectoryHeader.new("s"))
    for seq in range(1, count + 1):
        kind = "file.write" if seq % 10 == 0 else "exec"
        payload = (
            {"path": f"f{seq % 3}.txt", "content": f"v{seq}\n", "diff": "+x"}
            if kind == "file.write"
            else {"command": f'echo {seq} "quoted" ünïcode'}
        )
        actor = Actor.AGENT if seq % 2 else Actor.HUMAN
        writer.write(Event(seq=seq, t=seq / 10, actor=actor, kind=kind, payload=payload))
    writer.close()
    return path


def test_the_index_reads_what_the_plain_reader_reads(tmp_path: Path) -> None:
    path = write_trajectory(tmp_path / "t.jsonl", 250)
    plain = read_trajectory(path)
    with TrajectoryIndex(path, cache_size=8) as index:
        assert len(index) == 250 and index.problem is None
        assert index.header.schema == SCHEMA
        # Out of order and beyond the cache: every event still parses to the same thing.
        for i in [249, 0, 17, 120, 3, 249]:
            assert index.event(i) == plain.events[i]
        assert index.meta(9) == ("human", "file.write")
        assert index.meta(0) == ("agent", "exec")


def test_search_finds_text_forward_and_backward(tmp_path: Path) -> None:
    path = write_trajectory(tmp_path / "t.jsonl", 100)
    with TrajectoryIndex(path) as index:
        assert index.search("echo 42 ") == 41
        assert index.search('"QUOTED" ÜNÏCODE', 50) == 50  # case-insensitive, JSON-escaped
        assert index.search("v30", 0) == 29
        assert index.search("echo 5 ", 80, backward=True) == 4
        assert index.search("not there") is None


def test_workspace_at_a_step_follows_writes(tmp_path: Path) -> None:
    path = write_trajectory(tmp_path / "t.jsonl", 40)
    with TrajectoryIndex(path) as index:
        assert workspace_at(index, 5) == {}
        assert workspace_at(index, 9) == {"f1.txt": "v10\n"}
        assert workspace_at(index, 39) == {"f0.txt": "v30\n", "f1.txt": "v40\n", "f2.txt": "v20\n"}


def test_a_truncated_file_keeps_its_whole_lines_viewable(tmp_path: Path) -> None:
    path = write_trajectory(tmp_path / "t.jsonl", 20)
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    with TrajectoryIndex(path) as index:
        assert len(index) == 19
        assert index.problem == "line 21 is incomplete (the writer was cut off)."
        assert index.event(18).seq == 19


@pytest.mark.malformed_trajectories
def test_a_corrupt_line_is_named_and_the_prefix_stays(tmp_path: Path) -> None:
    path = write_trajectory(tmp_path / "t.jsonl", 20)
    lines = path.read_text().splitlines()
    lines[8] = lines[8][:-3]
    path.write_text("\n".join(lines) + "\n")
    with TrajectoryIndex(path) as index:
        assert index.event(3).seq == 4
        with pytest.raises(TrajectoryError, match=r"line 9 is corrupt \(not JSON"):
            index.event(7)
        assert len(list(index.events())) == 7
        assert index.validate() == 7
        assert index.problem is not None and index.problem.startswith("line 9 is corrupt")


@pytest.mark.parametrize(
    ("first_line", "message"),
    [
        ('{"schema": "reposim.trajectory/9"}', "uses schema reposim.trajectory/9"),
        ('{"schema": "other/1"}', "has schema 'other/1'"),
        ("id,name", "neither a RepoSim trajectory nor"),
        ("", "is empty"),
    ],
)
def test_wrong_files_are_refused_in_one_sentence(
    tmp_path: Path, first_line: str, message: str
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(first_line + ("\n" if first_line else ""))
    with pytest.raises(TrajectoryError, match=message):
        open_trajectory(path)


# Hypothesis runs the examples in one test's tmp_path; each example overwrites its own file.
FIXTURES = [HealthCheck.function_scoped_fixture]


def _exercise(path: Path) -> None:
    """Open and read everything; only TrajectoryError may come out."""
    try:
        source = open_trajectory(path)
    except TrajectoryError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    try:
        for index in range(len(source)):
            try:
                source.event(index)
                source.meta(index)
            except TrajectoryError as exc:
                assert "line" in str(exc)
        source.search("a")
        workspace_at(source, len(source) - 1)
        if isinstance(source, TrajectoryIndex):
            source.validate()
    finally:
        source.close()


@pytest.mark.malformed_trajectories
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=400))
def test_random_bytes_never_crash_the_readers(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "random.jsonl"
    path.write_bytes(data)
    _exercise(path)


@pytest.mark.malformed_trajectories
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(min_value=0, max_value=5000),
    flips=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255)), max_size=6),
)
def test_mutated_trajectories_never_crash_the_readers(
    tmp_path: Path, cut: int, flips: list[tuple[int, int]]
) -> None:
    source = tmp_path / "source.jsonl"
    if not source.exists():
        write_trajectory(source, 30)
    data = bytearray(source.read_bytes())
    for position, value in flips:
        data[position % len(data)] = value
    mutated = tmp_path / "mutated.jsonl"
    mutated.write_bytes(bytes(data[: max(cut, 1)] if cut < len(data) else data))
    _exercise(mutated)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(["seq", "t", "actor", "kind", "payload", "cause", "schema", "x"]),
                children,
                max_size=5,
            )
        ),
        max_leaves=12,
    )
)
@pytest.mark.malformed_trajectories
def test_well_formed_json_of_the_wrong_shape_never_crashes(tmp_path: Path, value: object) -> None:
    path = tmp_path / "shaped.jsonl"
    header = json.dumps({"schema": SCHEMA, "session": "s"})
    path.write_text(header + "\n" + json.dumps(value) + "\n")
    _exercise(path)
