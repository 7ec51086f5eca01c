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
    return {"pid": os.getpid(), "pid_start": round(started_at(), 3)}


def started_at() -> float:
    """When this process started, in seconds since the epoch: psutil's `create_time()`. On
    Linux it is read from /proc as psutil reads it (the boot time plus the start in clock ticks),
    without psutil's ~12 ms of imports: a session's start records its owner, and the UI's first
    frame waits for that start."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            ticks = int(handle.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/stat", "rb") as handle:
            boot = next(float(line.split()[1]) for line in handle if line.startswith(b"btime"))
    except (OSError, IndexError, ValueError, StopIteration):  # not Linux
        import psutil

        return float(psutil.Process().create_time())
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def owner_alive(pid: Any, started: Any) -> bool:
    """Whether the process that made a record still runs (a recycled pid started later)."""
    import psutil

    try:
        proc = psutil.Process(int(pid))
        return abs(proc.create_time() - float(started)) < 1.0
    except (psutil.NoSuchProcess, ValueError, TypeError):
        return False
