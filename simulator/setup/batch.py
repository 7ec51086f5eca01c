"""Setup over a LIST: one batch task per repository, run by simulator.batch in isolated workers.

A LIST file holds one repository per line: a path or a git URL, optionally pinned with
`@COMMIT` (or a second column); `#` starts a comment. Each task opens its own session (a fresh
container, network on), runs the ladder and records its trajectory; a repository short of ready
is a TaskFailure with the taxonomy's category and evidence, so the store and the summary table
carry them and a rerun skips it like any finished task.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.batch import Task, TaskFailure

if TYPE_CHECKING:
    from simulator.setup.oracle import Verdict


class ListError(Exception):
    """A LIST that cannot be used; the message is one clear sentence."""


@dataclass(frozen=True)
class Entry:
    source: str  # a path or a URL
    commit: str | None = None

    @property
    def is_url(self) -> bool:
        return re.match(r"^(https?|git|ssh)://|^git@", self.source) is not None

    @property
    def name(self) -> str:
        base = self.source.rstrip("/").split("/")[-1]
        return re.sub(r"\.git$", "", base) or "repo"

    @property
    def key(self) -> str:
        return f"{self.source}@{self.commit}" if self.commit else self.source


def read_list(path: Path) -> list[Entry]:
    if not path.is_file():
        raise ListError(f"{path} is not a file.")
    entries: list[Entry] = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) > 2:
            raise ListError(f"{path}:{number}: expected `PATH|URL [COMMIT]`, got {raw.strip()!r}.")
        source, commit = parts[0], parts[1] if len(parts) == 2 else None
        if commit is None and "@" in source and not source.startswith("git@"):
            source, _, commit = source.rpartition("@")
        if not re.match(r"^(https?|git|ssh)://|^git@", source):
            resolved = (path.parent / source).expanduser().resolve()
            if not resolved.is_dir():
                raise ListError(f"{path}:{number}: {source} is not a directory.")
            source = str(resolved)
        entries.append(Entry(source, commit))
    if not entries:
        raise ListError(f"{path} lists no repository.")
    return entries


def checkout(entry: Entry, cache: Path) -> Path:
    """A local directory for the entry: the path itself, or a clone of the URL at its commit."""
    if not entry.is_url and entry.commit is None:
        return Path(entry.source)
    digest = hashlib.sha1(entry.key.encode()).hexdigest()[:10]
    target = cache / f"{entry.name}-{digest}"
    if not (target / ".git").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        _git(
            ["clone", "-q", entry.source, str(target)],
            f"git clone {entry.source} failed",
            "network" if entry.is_url else "unknown",
            "git clone failed",
        )
    if entry.commit:
        _git(
            ["-C", str(target), "checkout", "-q", entry.commit],
            f"commit {entry.commit} not found",
            "unknown",
            "checkout failed",
        )
    return target


def _git(args: list[str], failure: str, category: str, fallback: str) -> None:
    """Run git; on failure, a task failure whose evidence is git's last line of stderr."""
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TaskFailure(
            failure,
            category=category,
            evidence=(done.stderr.strip().splitlines() or [fallback])[-1],
        )


def tasks_for(entries: list[Entry], **payload: Any) -> list[Task]:
    return [
        Task(entry.key, {"source": entry.source, "commit": entry.commit, **payload})
        for entry in entries
    ]


def setup_task(task: Task) -> dict[str, Any]:
    """One repository: a fresh session, the ladder (and the model if asked), the verdict."""
    return asyncio.run(_setup_task(task))


async def _setup_task(task: Task) -> dict[str, Any]:
    from simulator.setup.runner import SetupRequest, setup_repository

    payload = task.payload
    entry = Entry(str(payload["source"]), payload.get("commit"))
    cache = Path(str(payload.get("cache") or Path.home() / ".cache" / "reposim" / "setup-clones"))
    path = checkout(entry, cache)
    request = SetupRequest.from_payload(payload)
    # A backend that cannot start is retried as the machinery's failure (simulator/batch/workers)
    outcome = await setup_repository(path, request)
    result = outcome.summary()
    fail_unless_ready(outcome.result.verdict, entry.name, result)
    return result


def fail_unless_ready(verdict: Verdict, name: str, result: dict[str, Any]) -> None:
    """TaskFailure (with the verdict's category and evidence, and `result`) unless `verdict`
    is ready: a batch records a setup that stopped short as failed."""
    if not verdict.ready:
        raise TaskFailure(
            f"{name}: {verdict.tier}",
            category=str(verdict.category or "unknown"),
            evidence=verdict.evidence or "",
            result=result,
        )
