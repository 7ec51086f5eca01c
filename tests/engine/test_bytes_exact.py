"""Bytes kept exactly (issue 25 item 7): command output that is not UTF-8 is recorded as its
bytes, `replay --verify --strict` tells `A\\377Z` from `A\\376Z`, and session writes take bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.events import Kind
from simulator.session import Session, SessionError
from simulator.trajectory import read_trajectory
from tests.conftest import reposim


async def test_output_that_is_not_utf8_is_recorded_byte_for_byte(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"README": "bytes\n"})
    outside = tmp_path / "probe.bin"
    outside.write_bytes(b"A\xffZ")
    recorded = tmp_path / "bytes.jsonl"
    async with await Session.open(repo, trajectory_path=recorded) as session:
        result = await session.exec(f"cat {outside}")
    assert result.output == b"A\xffZ"
    line = json.loads(recorded.read_text(encoding="utf-8").splitlines()[-2])
    assert line["kind"] == "exec.result"
    assert line["payload"]["raw"]["output"] == "Qf9a"  # base64 of b"A\xffZ"
    (event,) = [e for e in read_trajectory(recorded).events if e.kind == Kind.EXEC_RESULT]
    assert event.payload["output"].encode("utf-8", "surrogateescape") == b"A\xffZ"

    # Printed and exported too (other tools' formats hold text: U+FFFD there).
    shown = reposim("trajectory", "show", "--json", str(recorded))
    assert shown.returncode == 0 and '"raw":{"output":"Qf9a"}' in shown.stdout, shown.stderr
    exported = reposim("export", str(recorded), "--to", "swe-agent", "-o", str(tmp_path / "x.traj"))
    assert exported.returncode == 0, exported.stderr
    assert "A\ufffdZ" in (tmp_path / "x.traj").read_text(encoding="utf-8")

    same = reposim("replay", "--verify", "--strict", str(recorded), "--trajectory",
                   str(tmp_path / "same.jsonl"))  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr
    outside.write_bytes(b"A\xfeZ")  # one byte changed, both outside UTF-8
    changed = reposim("replay", "--verify", "--strict", str(recorded), "--trajectory",
                      str(tmp_path / "changed.jsonl"))  # fmt: skip
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "output line 1" in changed.stdout


async def test_session_writes_take_bytes_and_record_them_exactly(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"README": "bytes\n"})
    recorded = tmp_path / "writes.jsonl"
    async with await Session.open(repo, trajectory_path=recorded) as session:
        await session.create("latin1.txt", b"caf\xe9\n")
        await session.write("latin1.txt", b"caf\xe9 au lait\n\x00\xff")
        assert await session.read_bytes("latin1.txt") == b"caf\xe9 au lait\n\x00\xff"
        with pytest.raises(SessionError, match="lone surrogate"):
            await session.write("bad.txt", "\ud800")
        assert not await session.exists("bad.txt")
    events = [e for e in read_trajectory(recorded).events if e.kind == Kind.FILE_WRITE]
    (write,) = events
    assert write.payload["content"].encode("utf-8", "surrogateescape") == (
        b"caf\xe9 au lait\n\x00\xff"
    )
    # Re-executed, the write puts the same bytes back.
    replayed = reposim("replay", "--verify", "--strict", str(recorded), "--trajectory",
                       str(tmp_path / "again.jsonl"))  # fmt: skip
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
