"""The session gateway: every action recorded, file edits, tests, search, checkpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from simulator.events import Actor, Event, Kind
from simulator.session import (
    ActionDenied,
    BinaryFileError,
    Decision,
    EditError,
    Session,
    SessionError,
)
from simulator.trajectory import read_trajectory
from tests.engine.conftest import TerminalDrain


@pytest.fixture
async def session(sample_repo: Path, tmp_path: Path) -> AsyncIterator[Session]:
    s = await Session.open(sample_repo, trajectory_path=tmp_path / "t.jsonl")
    yield s
    await s.close()


async def test_every_action_reaches_subscribers_and_the_trajectory(session: Session) -> None:
    seen: list[Event] = []
    session.subscribe(seen.append)
    await session.read("calc/ops.py")
    await session.write("notes.txt", "hello\n", actor=Actor.AGENT)
    await session.exec("echo hi")
    await session.close()
    kinds = [e.kind for e in seen]
    assert kinds[:2] == [Kind.FILE_READ, Kind.FILE_WRITE]
    assert Kind.EXEC_OUTPUT in kinds  # live output reached the subscriber
    recorded = read_trajectory(session.trajectory_path)
    assert recorded.problem is None
    recorded_kinds = [e.kind for e in recorded.events]
    assert recorded_kinds == [
        Kind.CHECKPOINT,
        Kind.FILE_READ,
        Kind.FILE_WRITE,
        Kind.EXEC,
        Kind.EXEC_RESULT,
        Kind.SESSION_END,
    ]
    write = recorded.events[2]
    assert write.actor == Actor.AGENT
    assert "+hello" in write.payload["diff"]
    result = recorded.events[4]
    assert result.cause == recorded.events[3].seq
    assert result.payload["output"] == "hi\n" and result.payload["exit_code"] == 0
    assert recorded.header.repo.git is True
    assert len(recorded.header.repo.commit) == 40


async def test_edit_replaces_exactly_one_occurrence(session: Session) -> None:
    event = await session.edit("calc/ops.py", "(len(values) - 1)", "len(values)")
    assert "-    return sum(values) / (len(values) - 1)" in event.payload["diff"]
    assert "len(values)\n" in await session.read("calc/ops.py")
    assert event.payload["before_sha256"] != event.payload["after_sha256"]


async def test_edit_errors_are_clear(session: Session) -> None:
    with pytest.raises(EditError, match=r"not found in calc/ops\.py"):
        await session.edit("calc/ops.py", "no such text", "x")
    await session.write("dup.py", "x = 1\nx = 1\n")
    with pytest.raises(EditError, match=r"occurs 2 times in dup.py \(lines 1, 2\)"):
        await session.edit("dup.py", "x = 1", "x = 2")
    await session.edit("dup.py", "x = 1", "x = 2", replace_all=True)
    assert await session.read("dup.py") == "x = 2\nx = 2\n"


async def test_create_delete_rename(session: Session) -> None:
    await session.create("pkg/new.py", "A = 1\n")
    with pytest.raises(SessionError, match="already exists"):
        await session.create("pkg/new.py", "")
    await session.rename("pkg/new.py", "pkg/renamed.py")
    assert not await session.exists("pkg/new.py")
    await session.delete("pkg/renamed.py")
    assert not await session.exists("pkg/renamed.py")


async def test_binary_files_are_reported(session: Session) -> None:
    await session.exec("printf '\\x89PNG\\x00\\xff' > image.png")
    with pytest.raises(BinaryFileError, match="not UTF-8"):
        await session.read("image.png")


async def test_run_tests_gives_per_test_outcomes(session: Session) -> None:
    run = await session.run_tests()
    outcomes = {t.id: t for t in run.tests}
    assert run.structured and not run.passed
    assert outcomes["tests/test_ops.py::test_add"].outcome == "passed"
    failure = outcomes["tests/test_ops.py::test_mean"]
    assert failure.outcome == "failed"
    assert failure.file == "tests/test_ops.py" and failure.line == 11
    assert "assert" in failure.message
    assert outcomes["tests/test_ops.py::test_skipped"].outcome == "skipped"
    assert outcomes["tests/test_ops.py::test_skipped"].message == "not today"
    assert outcomes["tests/test_ops.py::test_error"].outcome == "error"
    assert "fixture exploded" in outcomes["tests/test_ops.py::test_error"].message
    assert run.counts() == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}


async def test_run_tests_with_a_selector_and_from_any_cwd(session: Session) -> None:
    await session.exec("cd calc")
    run = await session.run_tests("tests/test_ops.py::test_add")
    assert run.passed and [t.id for t in run.tests] == ["tests/test_ops.py::test_add"]
    where = await session.exec("pwd")
    assert where.output.decode().strip().endswith("/calc")  # the user's cwd is untouched


async def test_generic_test_command_passes_or_fails(session: Session) -> None:
    ok = await session.run_tests(command="test -f calc/ops.py")
    bad = await session.run_tests(command="test -f calc/missing.py")
    assert ok.passed and not ok.structured and ok.tests == []
    assert not bad.passed and bad.exit_code == 1


async def test_search_finds_text(session: Session) -> None:
    matches = await session.search("def mean")
    assert [(m.path, m.line) for m in matches] == [("calc/ops.py", 5)]
    regex = await session.search(r"def (add|mean)", regex=True, glob="*.py")
    assert {m.line for m in regex} == {1, 5}


async def test_checkpoint_restore_and_changes(session: Session) -> None:
    await session.write("calc/ops.py", "broken\n")
    await session.create("extra.txt", "x\n")
    changes = {(c.status, c.path) for c in await session.changes()}
    assert changes == {("M", "calc/ops.py"), ("A", "extra.txt")}
    assert "+broken" in await session.diff(path="calc/ops.py")
    await session.checkpoint("mid")
    await session.delete("extra.txt")
    await session.restore("start")
    assert "def add" in await session.read("calc/ops.py")
    assert not await session.exists("extra.txt")
    await session.restore("mid")
    assert await session.read("extra.txt") == "x\n"
    with pytest.raises(SessionError, match="no checkpoint named 'nope'"):
        await session.restore("nope")


async def test_policy_can_reject_with_a_reason(session: Session) -> None:
    async def no_deletes(actor: Actor, kind: str, payload: dict[str, object]) -> Decision:
        if kind == Kind.FILE_DELETE:
            return Decision(False, "keep the file", by="human")
        return Decision(True)

    session.policy = no_deletes
    await session.exec("true", actor=Actor.AGENT)
    with pytest.raises(ActionDenied, match="keep the file"):
        await session.delete("calc/ops.py", actor=Actor.AGENT)
    assert await session.exists("calc/ops.py")
    await session.close()
    decisions = [
        e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.POLICY_DECISION
    ]
    assert [d.payload["allowed"] for d in decisions] == [True, False]
    assert decisions[1].payload["reason"] == "keep the file"


async def test_closed_session_refuses_work(session: Session) -> None:
    await session.close()
    with pytest.raises(SessionError, match="closed"):
        await session.exec("true")


async def test_checkpoints_cover_the_whole_workspace_from_any_cwd(session: Session) -> None:
    await session.exec("cd calc")
    await session.write("README.txt", "one\n")
    await session.checkpoint("one")
    await session.write("README.txt", "two\n")
    assert {(c.status, c.path) for c in await session.changes("one")} == {("M", "README.txt")}
    await session.restore("one")
    assert await session.read("README.txt") == "one\n"


async def test_terminal_output_is_recorded_in_bursts_in_screen_order(session: Session) -> None:
    seen: list[Event] = []
    session.subscribe(seen.append)
    terminal = await session.open_terminal(80, 24)
    reader = TerminalDrain(terminal)
    await terminal.write(b"printf 'a%.0s' $(seq 1 3000); echo; echo done-marker; exit\n")
    # the shell exits after the output, which ends the stream; 120 s bounds a hang on CI
    await reader.closed(within=120)
    kinds = [e.kind for e in seen if e.kind.startswith("terminal.")]
    recorded = "".join(e.payload["data"] for e in seen if e.kind == Kind.TERMINAL_OUTPUT)
    assert recorded == reader.received.decode()  # every byte, in order
    assert "a" * 3000 in recorded
    input_at = kinds.index(Kind.TERMINAL_INPUT)
    assert all(k == Kind.TERMINAL_OUTPUT for k in kinds[input_at + 1 :])
