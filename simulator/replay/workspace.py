"""The workspace as a trajectory shows it at a step: every file an event wrote, with its text.

File events carry the file's whole content after the change (`content`; None once deleted), so
the files the session touched can be shown as they were at any step without running anything.
Files never touched are not in the trajectory: when the recorded repository is on this machine,
`start_files` and `start_text` read them from the recorded commit.
"""

from __future__ import annotations

from simulator.events import FileChangePayload, FileRenamePayload, Kind
from simulator.git import git_output
from simulator.trajectory import EventSource, TrajectoryError, TrajectoryHeader

_CHANGES = (Kind.FILE_WRITE, Kind.FILE_CREATE, Kind.FILE_EDIT, Kind.FILE_DELETE, Kind.FILE_RENAME)


def workspace_at(source: EventSource, index: int) -> dict[str, str | None]:
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
        data = event.data
        if isinstance(data, FileRenamePayload):
            files[data.to] = files.pop(data.path, None)
            files[data.path] = None
        elif not isinstance(data, FileChangePayload):
            continue
        elif event.kind == Kind.FILE_DELETE or data.content is None:
            files[data.path] = None
        else:
            try:
                files[data.path] = source.load_blob(event, "content")
            except TrajectoryError:
                files[data.path] = data.content
    return files


def start_files(header: TrajectoryHeader) -> list[str]:
    """The files of the recorded start (the repository at the recorded commit), when that
    repository is on this machine and has the commit; otherwise an empty list."""
    repo = header.repo
    if not repo.git or repo.source is None or repo.commit is None:
        return []
    listed = git_output(repo.source, "ls-tree", "-r", "-z", "--name-only", repo.commit, timeout=30)
    return [name for name in (listed or "").split("\0") if name]


def start_text(header: TrajectoryHeader, path: str) -> str | None:
    """A file's text at the recorded start (None if it is not there or not readable)."""
    repo = header.repo
    if repo.source is None or repo.commit is None:
        return None
    return git_output(repo.source, "show", f"{repo.commit}:{path}", timeout=30)
