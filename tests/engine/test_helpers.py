"""The engine's one-of-each helpers: XDG paths, git on this machine, the workspace walk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from simulator import paths
from simulator.git import GitError, git_output, run_git
from simulator.session import Session
from simulator.workspace import WorkspaceWalk

RepoFactory = Callable[..., Path]


def test_paths_follow_the_xdg_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "k"))
    assert paths.config_file() == tmp_path / "c" / "reposim" / "config.toml"
    assert paths.trajectories_dir() == tmp_path / "d" / "reposim" / "trajectories"
    assert paths.workspaces_dir() == tmp_path / "k" / "reposim" / "workspaces"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.trajectories_dir() == tmp_path / "home" / ".local/share/reposim/trajectories"


async def test_a_session_keeps_its_trajectory_and_copy_in_the_xdg_folders(
    sample_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    async with await Session.open(sample_repo) as session:
        assert session.trajectory_path.parent == tmp_path / "data/reposim/trajectories"
        workspace = Path(session.workspace_path)
        assert workspace.parent == tmp_path / "cache/reposim/workspaces"
        assert workspace.name.startswith("sample-")
    assert session.trajectory_path.is_file()


def test_git_answers_and_fails_in_one_sentence(sample_repo: Path, tmp_path: Path) -> None:
    head = run_git(sample_repo, "rev-parse", "HEAD").strip()
    assert len(head) == 40
    assert git_output(sample_repo, "cat-file", "-e", f"{head}^{{commit}}") == ""
    assert git_output(sample_repo, "cat-file", "-e", "0" * 40) is None
    with pytest.raises(GitError) as failed:
        run_git(tmp_path / "nowhere", "status")
    message = str(failed.value)
    assert message.startswith("git status failed in") and "\n" not in message


async def test_the_walk_follows_nested_gitignores_and_skips_by_name(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(
        {
            ".gitignore": "*.log\n",
            "app.py": "",
            "debug.log": "",
            "pkg/.gitignore": "gen.py\n",
            "pkg/gen.py": "",
            "pkg/core.py": "",
            "node_modules/dep/index.js": "",
            "build/copy.py": "",
        }
    )
    async with await Session.open(repo, trajectory_path=tmp_path / "t.jsonl") as session:
        everything = [p async for p, _ in WorkspaceWalk(session).files()]
        sources = [
            p async for p, _ in WorkspaceWalk(session, skip_dir=lambda n: n == "build").files()
        ]
        root = {e.name for e in await WorkspaceWalk(session).entries(".")}
    assert set(everything) == {
        ".gitignore",
        "app.py",
        "pkg/.gitignore",
        "pkg/core.py",
        "node_modules/dep/index.js",
        "build/copy.py",
    }
    assert everything.index("app.py") < everything.index("pkg/core.py")  # breadth first
    assert "build/copy.py" not in sources and "pkg/core.py" in sources
    assert ".git" not in root and "debug.log" not in root
