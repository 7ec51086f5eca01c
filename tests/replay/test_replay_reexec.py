"""Re-execution, fork and resume against real repositories and the local backend."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.replay import Normaliser, StartError, fork, reexecute, resume
from simulator.session import Session, repo_info
from simulator.trajectory import ParentInfo, TrajectoryIndex, read_trajectory
from tests.replay.replay_helpers import SMALL_PROJECT, record_agent_and_human, record_session


def commit_change(repo: Path, rel: str, text: str) -> None:
    (repo / rel).write_text(text)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "change"], check=True, env=env)


async def test_a_recorded_session_re_executes_with_every_step_matching(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo(SMALL_PROJECT, name="project")
    original = await record_session(repo, tmp_path / "t.jsonl", with_tests=True)
    report, session = await reexecute(original, trajectory_path=tmp_path / "v.jsonl")
    assert session is None
    assert [s.status for s in report.steps if s.status != "match"] == []
    kinds = {s.kind for s in report.steps}
    assert {
        "exec",
        "file.edit",
        "file.create",
        "file.write",
        "file.delete",
        "file.rename",
        "file.read",
        "search",
        "test.run",
        "checkpoint",
        "restore",
    } <= kinds
    assert report.exit_code == 0
    # The re-execution is a trajectory of its own, whose parent is the original.
    again = read_trajectory(tmp_path / "v.jsonl")
    assert again.header.parent.file == str(original.resolve())
    assert {str(e.actor) for e in again.events} >= {"human", "agent"}


async def test_a_changed_repository_points_at_the_first_differing_step(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, original = recorded
    commit_change(repo, "calc/ops.py", "def add(a, b):\n    return a - b\n")
    # By default the recorded commit is checked out, so the change does not matter ...
    clean, _ = await reexecute(original, trajectory_path=tmp_path / "clean.jsonl")
    assert clean.exit_code == 0
    assert any("checked out clean" in note for note in clean.notes)
    # ... against the repository as it is now, the start and the edit differ.
    report, _ = await reexecute(original, current=True, trajectory_path=tmp_path / "now.jsonl")
    assert report.exit_code == 1
    first = report.first_difference
    assert first is not None and first.kind == "checkpoint" and first.seq == 1
    edit = next(s for s in report.steps if s.kind == "file.edit")
    assert edit.status == "differ"
    assert "not found" in edit.differences[0]


async def test_output_differences_are_reported_with_the_line(
    original: Path, tmp_path: Path
) -> None:
    lines = original.read_text().splitlines()
    for number, line in enumerate(lines):
        data = json.loads(line)
        if data.get("kind") == "exec.result" and "hello from" in data["payload"]["output"]:
            data["payload"]["output"] = data["payload"]["output"].replace("hello", "goodbye")
            lines[number] = json.dumps(data)
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(lines) + "\n")
    # An edited line is no longer this user's recording (nor anything after it): re-executed
    # here only with consent, as `--backend local` and a yes at the prompt give it.
    report, _ = await reexecute(
        edited, trajectory_path=tmp_path / "v.jsonl", backend_kind="local", host_consent=True
    )
    first = report.first_difference
    assert first is not None and first.kind == "exec"
    assert "output line 1" in first.differences[0] and "goodbye" in first.differences[0]


async def test_a_changed_exit_code_and_a_missing_result_are_reported(
    original: Path, tmp_path: Path
) -> None:
    lines = original.read_text().splitlines()
    results = [n for n, line in enumerate(lines) if json.loads(line).get("kind") == "exec.result"]
    first = json.loads(lines[results[0]])
    first["payload"]["exit_code"] = 7
    lines[results[0]] = json.dumps(first)
    del lines[results[1]]  # the second command's result is lost
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(lines) + "\n")
    report, _ = await reexecute(
        edited, trajectory_path=tmp_path / "v.jsonl", backend_kind="local", host_consent=True
    )
    first_run, second_run = [s for s in report.steps if s.kind == "exec"][:2]
    assert (first_run.status, first_run.differences) == ("differ", ["exit code 7 recorded, now 0"])
    assert (second_run.status, second_run.differences) == (
        "skipped",
        ["the recording has no result for this command"],
    )


async def test_strict_comparison_sees_what_normalisation_hides(
    original: Path, tmp_path: Path
) -> None:
    report, _ = await reexecute(
        original, normaliser=Normaliser(rules=()), trajectory_path=tmp_path / "v.jsonl"
    )
    differing = [s for s in report.steps if s.status == "differ"]
    # The object address and the PID change from run to run.
    assert differing and all(s.kind == "exec" for s in differing)
    assert any("object" in s.action for s in differing)


async def test_a_start_that_cannot_be_rebuilt_is_said_before_anything_runs(
    original: Path, tmp_path: Path
) -> None:
    header = json.loads(original.read_text().splitlines()[0])
    moved = tmp_path / "moved.jsonl"
    lines = original.read_text().splitlines()
    lines[0] = json.dumps({**header, "repo": {**header["repo"], "source": str(tmp_path / "gone")}})
    moved.write_text("\n".join(lines) + "\n")
    with pytest.raises(StartError, match="does not exist on this machine"):
        await reexecute(moved, trajectory_path=tmp_path / "never.jsonl")
    lines[0] = json.dumps({**header, "repo": {**header["repo"], "commit": "ab" * 20}})
    moved.write_text("\n".join(lines) + "\n")
    with pytest.raises(StartError, match="Commit abababababab is not in"):
        await reexecute(moved, trajectory_path=tmp_path / "never.jsonl")
    assert not (tmp_path / "never.jsonl").exists()


async def test_fork_rebuilds_files_and_shell_state_at_the_step(
    original: Path, tmp_path: Path
) -> None:
    index = TrajectoryIndex(original)
    events = list(index.events())
    index.close()
    # The step right after `cd calc && export MARK=...` finished.
    cd = next(e for e in events if e.kind == "exec" and "export MARK" in e.payload["command"])
    step = next(e.seq for e in events if e.cause == cd.seq)
    result = await fork(original, step, trajectory_path=tmp_path / "fork.jsonl")
    session = result.session
    try:
        assert result.report.exit_code == 0
        assert await session.read("calc/ops.py") == "def add(a, b):\n    return b + a\n"
        assert await session.read("notes.txt") == "first\n"
        out = await session.exec("echo $MARK; basename $(pwd)")
        assert out.output.decode().split() == ["forty-two", "calc"]
        assert not await session.exists("kept.txt")
    finally:
        await session.close()
    forked = read_trajectory(tmp_path / "fork.jsonl")
    assert forked.header.parent == ParentInfo(str(original.resolve()), step)
    assert any(e.kind == "checkpoint" and e.payload["name"] == "fork" for e in forked.events)


async def test_a_fork_header_names_the_recorded_commit_not_the_sources_new_head(
    recorded: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, original = recorded
    recorded_commit = read_trajectory(original).header.repo.commit
    commit_change(repo, "calc/ops.py", "def add(a, b):\n    return 0\n")
    head = (await asyncio.to_thread(repo_info, repo))["commit"]
    assert head != recorded_commit
    result = await fork(original, 3, trajectory_path=tmp_path / "fork.jsonl")
    try:
        # The workspace really is the recorded commit's (step 3 is before the agent's edit),
        # not the new HEAD's.
        assert await result.session.read("calc/ops.py") == "def add(a, b):\n    return a + b\n"
    finally:
        await result.session.close()
    header = read_trajectory(tmp_path / "fork.jsonl").header
    assert header.repo.commit == recorded_commit
    assert header.repo.dirty is False
    assert header.repo.source == str(repo)
    # Resuming the fork starts from the same commit again.
    session = await resume(tmp_path / "fork.jsonl", trajectory_path=tmp_path / "again.jsonl")
    await session.close()
    assert read_trajectory(tmp_path / "again.jsonl").header.repo.commit == recorded_commit


async def test_fork_at_a_step_that_does_not_exist_is_refused(
    original: Path, tmp_path: Path
) -> None:
    from simulator.trajectory import TrajectoryError

    with pytest.raises(TrajectoryError, match="there is no step 9999"):
        await fork(original, 9999, trajectory_path=tmp_path / "f.jsonl")


async def test_resume_continues_a_session_that_was_cut_off(original: Path, tmp_path: Path) -> None:
    lines = original.read_bytes().splitlines(keepends=True)
    crashed = tmp_path / "crashed.jsonl"
    # Killed while writing the session.end line: the last line is incomplete.
    crashed.write_bytes(b"".join(lines[:-1]) + lines[-1][:10])
    session = await resume(crashed, trajectory_path=tmp_path / "resumed.jsonl")
    try:
        assert await session.read("kept.txt") == "first\n"
        assert not await session.exists("scratch.txt")
        await session.write("more.txt", "continued\n")
    finally:
        await session.close()
    resumed = read_trajectory(tmp_path / "resumed.jsonl")
    assert resumed.header.parent.resumed is True
    assert resumed.events[-2].kind == "file.write"


async def test_agent_and_human_session_re_executes_and_exports_its_tool_calls(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo(SMALL_PROJECT, name="project")
    original = await record_agent_and_human(repo, tmp_path / "agent.jsonl")
    report, _ = await reexecute(original, trajectory_path=tmp_path / "v.jsonl")
    assert report.exit_code == 0, [s for s in report.steps if s.status != "match"]
    assert {s.actor for s in report.steps} >= {"agent", "human"}
    assert any(s.kind == "file.edit" and s.actor == "agent" for s in report.steps)

    index = TrajectoryIndex(original)
    events = list(index.events())
    index.close()
    from simulator.interop import events_conversation

    conversation = events_conversation(index.header, events)
    # The agent's four tool calls are steps (not the session actions inside them); the
    # person's create, command and delete are steps too.
    names = [s.tool_name for s in conversation.steps]
    assert names == ["file.create", "bash", "view", "edit", "finish", None, "file.delete"]
    # The task was given after the person's first step: it comes right before the agent's.
    task = {"role": "user", "content": "Document calc.add."}
    assert conversation.steps[1].messages_before == [task]
    assert conversation.steps[1].action == "ls calc && cat calc/ops.py"
    assert conversation.steps[1].thought == "Look around first."
    assert "__init__.py" in conversation.steps[1].observation


async def test_a_native_session_round_trips_through_openai_chat(
    original: Path,
) -> None:
    from simulator.interop import export_text, parse_foreign

    index = TrajectoryIndex(original)
    events = list(index.events())
    index.close()
    text = export_text(index.header, events, "openai-chat")
    names = {
        call["function"]["name"]
        for message in json.loads(text)["messages"]
        for call in message.get("tool_calls") or []
    }
    assert names <= {"bash", "file_create", "file_edit", "file_write", "file_delete", "file_rename"}
    _, again = parse_foreign(text, "chat.jsonl")
    # Reads record a hash, not the text, so they are not steps of a conversation.
    changes = [e.kind for e in events if e.kind.startswith("file.") and e.kind != "file.read"]
    assert [e.kind for e in again if e.kind.startswith("file.")] == changes


async def test_what_the_person_typed_in_the_terminal_is_typed_again(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo(SMALL_PROJECT, name="project")
    out = tmp_path / "terminal.jsonl"
    session = await Session.open(repo, trajectory_path=out)
    async with session:
        terminal = await session.open_terminal()
        await terminal.write(b"echo typed > from_terminal.txt\r")
        seen = b""
        while b"typed" not in seen or not await session.exists("from_terminal.txt"):
            seen += await asyncio.wait_for(terminal.read(), 10)
        await session.read("from_terminal.txt")
        await terminal.close()
    report, _ = await reexecute(out, trajectory_path=tmp_path / "v.jsonl")
    typed = next(s for s in report.steps if s.kind == "terminal.input")
    assert typed.status == "skipped" and "typed into the terminal again" in typed.differences[0]
    read = next(s for s in report.steps if s.kind == "file.read")
    assert read.status == "match"
    assert report.exit_code == 0
