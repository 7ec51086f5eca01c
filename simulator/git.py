"""Running git on a repository of this machine (not in a backend: see Session's checkpoints for
that): the one place the engine starts a `git` process."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path


class GitError(Exception):
    """git is not installed, timed out or failed; the message is one sentence."""


def run_git(
    repo: Path | str, *args: str, timeout: float = 60.0, env: Mapping[str, str] | None = None
) -> str:
    """The output of `git -C repo ARGS` (decoded as UTF-8, undecodable bytes replaced), unstripped.

    Raises GitError when git is missing, takes longer than `timeout` seconds or exits non-zero
    (the message carries git's own complaint). `env` is added to this process's environment.
    """
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **env} if env else None,
        )
    except FileNotFoundError:
        raise GitError("git is not installed; install it and try again.") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0] if args else ''} took more than {timeout:g} s.") from None
    except OSError as exc:
        raise GitError(f"git could not be started: {exc}.") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        raise GitError(f"git {' '.join(args[:1])} failed in {repo}: {detail}")
    return proc.stdout.decode("utf-8", "replace")


def git_output(repo: Path | str, *args: str, timeout: float = 60.0) -> str | None:
    """Like run_git, but None instead of an error: for questions (is this a repository, is that
    commit in it) whose failure is an answer."""
    try:
        return run_git(repo, *args, timeout=timeout)
    except GitError:
        return None


def diff_texts(before: str, after: str, *, context: int = 3, timeout: float = 30.0) -> str | None:
    """The hunks of a unified diff of two texts by git's own diff (xdiff, in C), from the first
    `@@` line on; None when git is missing or fails.

    For large changes: difflib's matcher is quadratic on them (a 21,000-line file with every
    other line changed takes 87 s in difflib, 45 ms here).
    """
    with tempfile.TemporaryDirectory(prefix="reposim-diff-") as tmp:
        old, new = Path(tmp, "a"), Path(tmp, "b")
        old.write_bytes(before.encode("utf-8", "surrogateescape"))
        new.write_bytes(after.encode("utf-8", "surrogateescape"))
        try:
            proc = subprocess.run(
                [
                    "git",
                    "-c",
                    "core.quotepath=off",
                    "diff",
                    "--no-index",
                    "--no-color",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--text",
                    f"-U{context}",
                    str(old),
                    str(new),
                ],
                capture_output=True,
                timeout=timeout,
                check=False,
                env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    if proc.returncode not in (0, 1):  # 1: the texts differ
        return None
    out = proc.stdout.decode("utf-8", "surrogateescape")
    start = out.find("\n@@")
    return out[start + 1 :] if start >= 0 else ""
