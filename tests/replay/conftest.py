"""Fixtures for replay tests: trajectories recorded by real sessions on real git repositories."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.events import Actor
from simulator.session import Session

DATA = Path(__file__).parent / "data"
SAMPLES = sorted(p for p in DATA.iterdir() if p.suffix in (".traj", ".json"))

SMALL_PROJECT = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a + b\n",
    "tests/test_ops.py": (
        "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    ),
}


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New trajectories and scratch workspaces go under the test's own directory."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


async def record_session(repo: Path, out: Path, *, with_tests: bool = False) -> Path:
    """A session with human and agent actions of every kind that replay re-executes."""
    session = await Session.open(repo, trajectory_path=out)
    async with session:
        await session.exec("echo hello from $0; pwd; sleep 0.05", actor=Actor.AGENT)
        await session.edit("calc/ops.py", "a + b", "b + a", actor=Actor.AGENT)
        await session.create("notes.txt", "first\n")
        await session.checkpoint("mid")
        await session.write("notes.txt", "second\n")
        await session.restore("mid")
        await session.exec("cd calc && export MARK=forty-two && ls", actor=Actor.AGENT)
        await session.exec("python3 -c 'import os; print(object(), \"pid\", os.getpid())'")
        if with_tests:
            await session.run_tests("tests", actor=Actor.AGENT)
        await session.search("add", actor=Actor.AGENT)
        await session.read("notes.txt", actor=Actor.AGENT)
        await session.exec("echo $MARK; pwd", actor=Actor.AGENT)
        await session.rename("notes.txt", "kept.txt")
        await session.create("scratch.txt", "x\n")
        await session.delete("scratch.txt")
    return out


@pytest.fixture
async def recorded(make_repo: Callable[..., Path], tmp_path: Path) -> tuple[Path, Path]:
    """(repository, trajectory) of a recorded session without a test run."""
    repo = make_repo(SMALL_PROJECT, name="project")
    return repo, await record_session(repo, tmp_path / "recorded.jsonl")
