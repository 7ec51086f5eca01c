"""RepoSim's private state on this machine: records only this user can read, that say what
RepoSim made (containers, output spools) and which process made it, so `reposim gc` can remove
a crash's leftovers and nothing else.

$XDG_STATE_HOME/reposim (default ~/.local/state/reposim), read at each call; directories 0700,
records 0600, written atomically.
"""

from __future__ import annotations

import json
import os
import stat as stat_mod
from pathlib import Path
from typing import Any

import psutil

from backends.errors import BackendError


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "reposim"


def private_dir(name: str) -> Path:
    """`state_dir()/name`, made if needed, this user's and closed to others."""
    path = state_dir() / name
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.lstat()
    if not stat_mod.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise BackendError(
            f"RepoSim's state directory {path} is not a directory of yours: remove it."
        )
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return path


def write_record(path: Path, data: dict[str, Any]) -> None:
    """Write a record only this user can read, atomically (a crash leaves the old or the new)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)
    temp.replace(path)


def read_records(name: str) -> list[tuple[Path, dict[str, Any]]]:
    """The records under `state_dir()/name` that are this user's regular files holding a JSON
    object; anything else there is ignored."""
    directory = state_dir() / name
    if not directory.is_dir():
        return []
    records = []
    for path in sorted(directory.glob("*.json")):
        try:
            info = path.lstat()
            if not stat_mod.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            records.append((path, record))
    return records


def me() -> dict[str, Any]:
    """Who is making something now: this process and its start time."""
    proc = psutil.Process()
    return {"pid": proc.pid, "pid_start": round(proc.create_time(), 3)}


def owner_alive(pid: Any, started: Any) -> bool:
    """Whether the process that made a record still runs (a recycled pid started later)."""
    try:
        proc = psutil.Process(int(pid))
        return abs(proc.create_time() - float(started)) < 1.0
    except (psutil.NoSuchProcess, ValueError, TypeError):
        return False
