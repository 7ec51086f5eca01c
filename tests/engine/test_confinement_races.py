"""The local file API under attack: a directory swapped with a symlink to the outside
(renameat2 RENAME_EXCHANGE, in a loop in another process) while reads, writes, edits and
deletes go through it. None may reach outside, with openat2 or with the descriptor walk."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from backends.base import BackendError
from backends.confined import openat2_available
from backends.local import LocalBackend
from simulator.events import Actor
from simulator.session import Session, SessionError

ROUNDS = 1000

_SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
    print("swapping", flush=True)
    while True:
        libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
    """
)


@pytest.fixture(params=["openat2", "walk"])
def method(request: pytest.FixtureRequest) -> str:
    if request.param == "openat2" and not openat2_available():
        pytest.fail("this kernel has no openat2; the race test needs it here")
    return str(request.param)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "f").write_text("SECRET")
    (secret / "g").write_text("keep me")
    return secret


@pytest.fixture
async def session(
    make_repo: object, tmp_path: Path, method: str, outside: Path
) -> AsyncIterator[Session]:
    repo = make_repo({"d/f": "inside", "d/g": "inside g"})  # type: ignore[operator]
    backend = LocalBackend(repo, scratch_root=tmp_path / "scratch")
    s = await Session.open(repo, backend=backend, trajectory_path=tmp_path / "t.jsonl")
    backend.files.openat2 = method == "openat2"
    (backend.workspace / "l").symlink_to(outside)
    yield s
    await s.close()


@pytest.fixture
def swapping(session: Session) -> Iterator[int]:
    """Swap d (a directory) and l (a symlink to the outside) until the test ends; yields a
    descriptor of the real directory, wherever it is at the moment."""
    workspace = Path(session.workspace_path)
    real = os.open(workspace / "d", os.O_RDONLY | os.O_DIRECTORY)
    proc = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(workspace / "d"), str(workspace / "l")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "swapping\n"
    try:
        yield real
    finally:
        proc.kill()
        proc.wait()
        os.close(real)


async def test_reads_never_reach_outside(session: Session, swapping: int) -> None:
    seen = {"inside": 0, "escaped": 0, "refused": 0}
    for _ in range(ROUNDS):
        try:
            data = await session._backend.read_file("d/f")
        except BackendError:
            seen["refused"] += 1
            continue
        seen["escaped" if data == b"SECRET" else "inside"] += 1
    assert seen["escaped"] == 0, seen
    assert seen["inside"] > 0, seen  # the race really ran both ways


async def test_writes_and_edits_never_reach_outside(
    session: Session, swapping: int, outside: Path
) -> None:
    before = (outside / "f").stat()
    written = 0
    for _ in range(ROUNDS):
        try:
            await session._backend.write_file("d/f", b"inside")
            written += 1
            await session.edit("d/f", "inside", "inside", actor=Actor.AGENT)
        except (BackendError, SessionError):
            continue
    assert (outside / "f").read_text() == "SECRET"
    assert (outside / "f").stat().st_mtime_ns == before.st_mtime_ns
    assert written > 0
    assert sorted(p.name for p in outside.iterdir()) == ["f", "g"]


async def test_deletes_never_reach_outside(session: Session, swapping: int, outside: Path) -> None:
    deleted = 0
    for _ in range(ROUNDS):
        fd = os.open("g", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=swapping)
        os.close(fd)
        try:
            await session._backend.delete("d/g")
            deleted += 1
        except BackendError:
            continue
    assert (outside / "g").read_text() == "keep me"
    assert deleted > 0


async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written(
    session: Session, outside: Path
) -> None:
    workspace = Path(session.workspace_path)
    os.link(outside / "f", workspace / "hard")
    with pytest.raises(BackendError, match="hard link"):
        await session._backend.read_file("hard")
    with pytest.raises(BackendError, match="hard link"):
        await session._backend.write_file("hard", b"overwritten")
    with pytest.raises(BackendError, match="hard link"):
        await session.edit("hard", "SECRET", "gone")
    assert (outside / "f").read_text() == "SECRET"


SEARCH_ROUNDS = 2000


async def test_searches_never_reach_outside(session: Session, swapping: int) -> None:
    # Issue 25: the search entered the directory by its path in the shell (`cd -P`, a check of
    # $PWD, then grep): 11 of 4,000 searches under this race returned the outside file.
    seen = {"inside": 0, "escaped": 0, "refused": 0}
    for _ in range(SEARCH_ROUNDS):
        try:
            matches = await session.search("e", "d", ignore_case=True, actor=Actor.AGENT)
        except SessionError:
            seen["refused"] += 1
            continue
        texts = {m.text for m in matches}
        seen["escaped" if "SECRET" in texts or "keep me" in texts else "inside"] += 1
    assert seen["escaped"] == 0, seen
    assert seen["inside"] > 0, seen
