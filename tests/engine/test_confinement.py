"""Search is confined like every other file operation; names no file system takes get one
sentence; a dangling symlink can be deleted. On a real local session."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.base import BackendError, PathEscapeError
from backends.local import LocalBackend
from simulator.session import Session, SessionError


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "passwd").write_text("root:x:0:0:needle outside\n")
    return secret


@pytest.fixture
async def session(make_repo: object, tmp_path: Path, outside: Path) -> AsyncIterator[Session]:
    repo = make_repo(  # type: ignore[operator]
        {"src/a.py": "needle = 1\n", "src/deep/b.py": "x = 'needle'\n", "top.txt": "needle\n"}
    )
    backend = LocalBackend(repo, scratch_root=tmp_path / "scratch")
    s = await Session.open(repo, backend=backend, trajectory_path=tmp_path / "t.jsonl")
    workspace = Path(s.workspace_path)
    (workspace / "out_link").symlink_to(outside)
    (workspace / "src_link").symlink_to("src")
    yield s
    await s.close()


async def test_search_finds_inside_and_never_outside(session: Session) -> None:
    everywhere = {(m.path, m.line) for m in await session.search("needle")}
    assert everywhere == {("src/a.py", 1), ("src/deep/b.py", 1), ("top.txt", 1)}
    below = {m.path for m in await session.search("needle", "src/deep")}
    assert below == {"src/deep/b.py"}
    one = await session.search("needle", "src/a.py")
    assert [(m.path, m.line, m.text) for m in one] == [("src/a.py", 1, "needle = 1")]
    through_inside_link = {m.path for m in await session.search("needle", "src_link")}
    assert through_inside_link == {"src/a.py", "src/deep/b.py"}
    absolute = {m.path for m in await session.search("needle", session.workspace_path)}
    assert absolute == {"src/a.py", "src/deep/b.py", "top.txt"}


@pytest.mark.parametrize("where", ["/etc", "..", "../..", "src/../..", "out_link", "out_link/"])
async def test_search_refuses_paths_outside(session: Session, where: str, outside: Path) -> None:
    with pytest.raises((SessionError, PathEscapeError), match="outside the workspace"):
        await session.search("root", where)


async def test_search_does_not_follow_a_symlink_met_on_the_way(
    session: Session, outside: Path
) -> None:
    matches = await session.search("root:")
    assert matches == []


async def test_a_dangling_symlink_can_be_deleted(session: Session, outside: Path) -> None:
    workspace = Path(session.workspace_path)
    (workspace / "dangling").symlink_to("nowhere")
    (workspace / "to_outside_file").symlink_to(outside / "passwd")
    await session.delete("dangling")
    await session.delete("to_outside_file")
    await session.delete("out_link")
    assert not os.path.lexists(workspace / "dangling")
    assert not os.path.lexists(workspace / "out_link")
    assert (outside / "passwd").exists()


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("a\0b.txt", "NUL byte"),
        ("x" * 300 + ".txt", "longer than 255 bytes"),
        ("d/" * 2100 + "f", "longer than 4096 bytes"),
    ],
)
async def test_impossible_names_get_one_sentence(session: Session, path: str, says: str) -> None:
    for action in (
        session.read(path),
        session.write(path, "x"),
        session.create(path, "x"),
        session.delete(path),
        session.search("x", path),
    ):
        with pytest.raises(SessionError, match=says) as caught:
            await action
        message = str(caught.value)
        assert message.endswith(".") and "\n" not in message and len(message) < 240


async def test_the_backend_itself_refuses_impossible_names(session: Session) -> None:
    backend = session._backend  # the backend this test built, reached on purpose
    with pytest.raises(BackendError, match="NUL byte"):
        await backend.read_file("a\0b")
    with pytest.raises(BackendError, match="longer than 255 bytes"):
        await backend.write_file("y" * 256, b"x")
