"""The workspace as a trajectory shows it at a step: every file an event wrote, with its text.

File events carry the file's whole content after the change (`content`; None once deleted), so
the files the session touched can be shown as they were at any step without running anything.
Files never touched are not in the trajectory: when the recorded repository is on this machine,
`start_files` and `start_text` read them from the recorded commit.
"""

from __future__ import annotations

from typing import Any

from simulator.events import Kind
from simulator.git import git_output
from simulator.trajectory import TrajectoryError

_CHANGES = (Kind.FILE_WRITE, Kind.FILE_CREATE, Kind.FILE_EDIT, Kind.FILE_DELETE, Kind.FILE_RENAME)


def workspace_at(source: Any, index: int) -> dict[str, str | None]:
    """{path: text} after the event at `index` (None: deleted; text unknown: the diff's note)."""
    files: dict[str, str | None] = {}
    for position in range(min(index + 1, len(source))):
        actor_kind = source.meta(position)
        if actor_kind[1] not in _CHANGES:
            continue
        try:
            event = source.event(position)
        except TrajectoryError:
            continue
        payload = event.payload
        path = str(payload.get("path", ""))
        if event.kind == Kind.FILE_RENAME:
            files[str(payload.get("to", ""))] = files.pop(path, None)
            files[path] = None
        elif event.kind == Kind.FILE_DELETE:
            files[path] = None
        else:
            try:
                content = source.load_blob(event, "content")
            except TrajectoryError:
                content = payload.get("content")
            files[path] = content if isinstance(content, str) else None
    return files


def start_files(header: dict[str, Any]) -> list[str]:
    """The files of the recorded start (the repository at the recorded commit), when that
    repository is on this machine and has the commit; otherwise an empty list."""
    repo = header.get("repo")
    if not isinstance(repo, dict) or not repo.get("git"):
        return []
    source, commit = repo.get("source"), repo.get("commit")
    if not isinstance(source, str) or not isinstance(commit, str):
        return []
    listed = git_output(source, "ls-tree", "-r", "-z", "--name-only", commit, timeout=30)
    return [name for name in (listed or "").split("\0") if name]


def start_text(header: dict[str, Any], path: str) -> str | None:
    """A file's text at the recorded start (None if it is not there or not readable)."""
    repo = header.get("repo")
    if not isinstance(repo, dict):
        return None
    source, commit = repo.get("source"), repo.get("commit")
    if not isinstance(source, str) or not isinstance(commit, str):
        return None
    return git_output(source, "show", f"{commit}:{path}", timeout=30)
