"""open_session: the one way a session is opened, and what a session shows of its backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.events import Event, Kind
from simulator.session import SessionError, open_session


async def test_subscribers_see_the_start_and_the_description_says_where(
    sample_repo: Path, tmp_path: Path
) -> None:
    seen: list[Event] = []
    session = await open_session(
        sample_repo, trajectory_path=tmp_path / "t.jsonl", subscribers=[seen.append]
    )
    async with session:
        assert [e.kind for e in seen][:1] == [Kind.CHECKPOINT]  # the start, before we return
        assert session.description.kind == "local"
        assert Path(session.workspace_path).is_dir()
        assert Path(session.workspace_path) != sample_repo  # a scratch copy
        assert not hasattr(session, "backend")  # the backend is the session's own


async def test_helper_files_go_under_dot_reposim_only(sample_repo: Path, tmp_path: Path) -> None:
    async with await open_session(sample_repo, trajectory_path=tmp_path / "t.jsonl") as session:
        await session.write_helper(".reposim/runtime/spec.json", b"{}")
        assert (Path(session.workspace_path) / ".reposim/runtime/spec.json").read_bytes() == b"{}"
        with pytest.raises(SessionError, match=r"not under \.reposim/"):
            await session.write_helper("calc/ops.py", b"overwritten")
    kinds = [
        line for line in (tmp_path / "t.jsonl").read_text().splitlines() if "file.write" in line
    ]
    assert kinds == []  # unrecorded


async def test_unknown_backend_kinds_are_one_sentence(sample_repo: Path) -> None:
    from backends.base import BackendError

    with pytest.raises(
        BackendError, match=r"^Unknown backend 'vm'; choose one of local, docker\.$"
    ):
        await open_session(sample_repo, backend="vm")
