"""repo_info: where a session's workspace came from, asked of git once per session start, and
without touching the source repository (issue 29: the start's waits on other processes)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from simulator.session import repo_info
from tests.conftest import RepoFactory, git


def test_a_clean_checkout_on_a_branch(make_repo: RepoFactory) -> None:
    repo = make_repo({"a.py": "x = 1\n"})
    git(repo, "checkout", "-q", "-b", "feature/x")
    info = repo_info(repo)
    assert info == {
        "source": str(repo),
        "git": True,
        "commit": git(repo, "rev-parse", "HEAD").strip(),
        "branch": "feature/x",
        "dirty": False,
    }


@pytest.mark.parametrize("change", ["modified", "untracked", "staged"])
def test_any_change_makes_it_dirty(make_repo: RepoFactory, change: str) -> None:
    repo = make_repo({"a.py": "x = 1\n"})
    if change == "modified":
        (repo / "a.py").write_text("x = 2\n")
    elif change == "untracked":
        (repo / "new.py").write_text("")
    else:
        (repo / "b.py").write_text("")
        git(repo, "add", "b.py")
    assert repo_info(repo)["dirty"] is True


def test_a_detached_head_is_named_head(make_repo: RepoFactory) -> None:
    repo = make_repo({"a.py": "x = 1\n"})
    commit = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "--detach")
    info = repo_info(repo)
    assert (info["commit"], info["branch"], info["dirty"]) == (commit, "HEAD", False)


def test_no_commit_yet_or_no_repository_is_not_git(make_repo: RepoFactory, tmp_path: Path) -> None:
    unborn = make_repo({"a.py": "x = 1\n"}, name="unborn", commit=False)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo_info(unborn) == {"source": str(unborn), "git": False}
    assert repo_info(plain) == {"source": str(plain), "git": False}


def test_one_git_process_and_the_source_index_is_not_rewritten(
    make_repo: RepoFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every session start asks this of the user's repository: one git process (a wrapper on
    PATH counts them), and the repository's index is left as it was — a `git status` that
    refreshes it takes .git/index.lock, which a copy of the repository made meanwhile (the
    local backend copies it while this runs) would carry into the workspace."""
    repo = make_repo({"a.py": "x = 1\n"})
    os.utime(repo / "a.py", (1, 1))  # stat data the index does not have: status would refresh
    index = repo / ".git" / "index"
    before = index.stat()
    log = tmp_path / "git-calls"
    real_git = next(
        Path(d) / "git"
        for d in os.environ["PATH"].split(os.pathsep)
        if (Path(d) / "git").is_file() and os.access(Path(d) / "git", os.X_OK)
    )
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real_git} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}")

    info = repo_info(repo)

    assert info["git"] is True and info["dirty"] is False
    assert len(log.read_text().splitlines()) == 1
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
