"""docs/trajectory.schema.json: generated from the types, committed, and enforced on every
trajectory the suite writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.events import Actor, Event, Kind
from simulator.schema import SCHEMA_FILE, main, schema_text
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter
from tests.schema_check import problems

pytest_plugins = ["pytester"]


def test_the_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "docs/trajectory.schema.json is stale: run `uv run python -m simulator.schema`"
    )
    assert main(["--check"]) == 0


def test_check_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "schema.json"
    stale.write_text("{}\n")
    assert main(["--check", "--output", str(stale)]) == 1


def _write(path: Path, *events: Event) -> Path:
    writer = TrajectoryWriter(path, TrajectoryHeader.new("s"))
    for event in events:
        writer.write(event)
    writer.close()
    return path


@pytest.mark.malformed_trajectories
def test_what_the_writer_writes_is_valid_and_a_wrong_payload_is_not(tmp_path: Path) -> None:
    good = _write(
        tmp_path / "good.jsonl",
        Event(1, 0.1, Actor.AGENT, Kind.EXEC, {"command": "ls", "timeout": None}),
        Event(2, 0.2, Actor.HUMAN, Kind.NOTE, {"text": "x" * 20_000, "mark": "m"}),
    )
    assert problems(good) == []
    bad = _write(
        tmp_path / "bad.jsonl",
        Event(1, 0.1, Actor.AGENT, Kind.EXEC, {"command": 5}),
        Event(2, 0.2, Actor.AGENT, Kind.EXEC_RESULT, {"output": "", "exit_code": 0}),
        Event(3, 0.3, Actor.AGENT, Kind.NOTE, {"text": "x", "colour": "red"}),
    )
    found = problems(bad)
    assert len(found) == 3, found
    assert "bad.jsonl:2: payload/command" in found[0]
    assert "bad.jsonl:3:" in found[1] and "duration" in found[1]
    assert "bad.jsonl:4:" in found[2] and "colour" in found[2]
    header = json.loads(bad.read_text().splitlines()[0])
    header["backend"] = 5
    wrong = tmp_path / "wrong-header.jsonl"
    wrong.write_text(json.dumps(header) + "\n")
    assert problems(wrong) and "backend" in problems(wrong)[0]


@pytest.mark.malformed_trajectories
def test_the_suite_fails_a_test_that_writes_a_trajectory_off_the_schema(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    header = json.dumps(TrajectoryHeader.new("s").to_dict())
    pytester.makeconftest("from tests.conftest import trajectories_follow_the_schema  # noqa")
    pytester.makepyfile(
        test_writes=f"""
        def test_good(tmp_path):
            (tmp_path / "t.jsonl").write_text({header!r} + "\\n")

        def test_bad(tmp_path):
            line = '{{"seq":1,"t":0,"actor":"human","kind":"exec","payload":{{}}}}'
            (tmp_path / "t.jsonl").write_text({header!r} + "\\n" + line + "\\n")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*break docs/trajectory.schema.json*", "*t.jsonl:2:*command*"])
