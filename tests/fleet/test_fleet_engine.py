"""The fleet's engine: sessions read incrementally from a folder of growing trajectories."""

from __future__ import annotations

import json
from pathlib import Path

from simulator.fleet import Fleet, SessionState
from tests.fleet.helpers import GrowingRun


def test_sessions_are_read_as_their_files_grow(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, stuck_after=30)
    run = GrowingRun(tmp_path, "task-a")
    run.model_turn(0.002)
    run.command("ls calc")
    changed = fleet.poll(now=1000.0)
    assert [row.key for row in changed] == ["task-a"]
    row = fleet.rows["task-a"]
    assert (row.repo, row.state, row.steps) == ("calc", SessionState.RUNNING, 1)
    assert row.last_action == "$ ls calc"
    assert row.cost == 0.002

    # Nothing new: nothing changed, and the file is not read again.
    assert fleet.poll(now=1001.0) == []

    run.tests(passed=3, failed=1)
    run.model_turn(None)
    fleet.poll(now=1002.0)
    assert row.steps == 2 and row.tests == "3 passed, 1 failed"
    assert not row.cost_known  # one call had no known price: the total is a lower bound

    run.finish("fixed it")
    fleet.poll(now=1005.0)
    assert row.state == SessionState.FINISHED
    assert row.last_action == "finish: fixed it"


def test_a_line_still_being_written_is_read_whole_at_the_next_poll(tmp_path: Path) -> None:
    run = GrowingRun(tmp_path, "raw")
    run.writer.close()
    fleet = Fleet(tmp_path)
    fleet.poll(now=1.0)
    with run.path.open("ab") as handle:
        handle.write(b'{"seq": 1, "t": 9.0, "actor": "agent", "kind": "exec", "payl')
    fleet.poll(now=2.0)
    assert fleet.rows["raw"].steps == 0
    with run.path.open("ab") as handle:
        handle.write(b'oad": {"command": "make"}}\n')
    fleet.poll(now=3.0)
    assert fleet.rows["raw"].steps == 1 and fleet.rows["raw"].last_action == "$ make"


def test_a_session_with_no_new_event_for_a_while_is_stuck_until_it_moves(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path, stuck_after=30)
    run = GrowingRun(tmp_path, "slow")
    run.command("sleep 1000")
    fleet.poll(now=100.0)
    assert fleet.rows["slow"].state == SessionState.RUNNING
    changed = fleet.poll(now=131.0)
    assert [r.key for r in changed] == ["slow"] and changed[0].state == SessionState.STUCK
    run.command("echo back")
    fleet.poll(now=132.0)
    assert fleet.rows["slow"].state == SessionState.RUNNING


def test_a_session_a_person_took_over_is_paused_not_stuck_until_the_agent_goes_on(
    tmp_path: Path,
) -> None:
    fleet = Fleet(tmp_path, stuck_after=30)
    run = GrowingRun(tmp_path, "taken")
    run.command("ls")
    run.event("note", {"text": "agent mode: human", "mark": "agent.mode"})
    fleet.poll(now=100.0)
    assert fleet.rows["taken"].state == SessionState.PAUSED
    assert fleet.poll(now=500.0) == []  # quiet for minutes: the person has it, not stuck
    assert fleet.rows["taken"].state == SessionState.PAUSED
    run.event("note", {"text": "agent mode: auto", "mark": "agent.mode"})
    fleet.poll(now=501.0)
    assert fleet.rows["taken"].state == SessionState.RUNNING
    fleet.poll(now=540.0)
    assert fleet.rows["taken"].state == SessionState.STUCK


def test_the_results_store_gives_verdicts_and_names_tasks_that_wrote_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "runs.trajectories"
    folder.mkdir()
    run = GrowingRun(folder, "fix-it")
    run.command("pytest")
    results = tmp_path / "runs.jsonl"
    records = [
        {
            "key": "fix-it",
            "status": "failed",
            "seconds": 3.0,
            "category": "budget",
            "result": {"trajectory": str(run.path)},
        },
        {"key": "crashed-early", "status": "crashed", "seconds": 0.1, "category": "killed"},
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    fleet = Fleet(folder, results=results)
    fleet.poll(now=10.0)
    assert fleet.rows["fix-it"].state == SessionState.FAILED
    assert fleet.rows["fix-it"].verdict == "failed (budget)"
    assert fleet.rows["crashed-early"].path is None
    assert fleet.rows["crashed-early"].verdict == "crashed (killed)"


def test_files_that_are_not_trajectories_are_named_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "other.jsonl").write_text('{"schema": "someone.else/3"}\n')
    (tmp_path / "junk.jsonl").write_text("not json\n")
    fleet = Fleet(tmp_path)
    fleet.poll(now=1.0)
    assert "is not one this version reads" in fleet.rows["other"].problem
    assert fleet.rows["junk"].problem == "a line is not JSON"
