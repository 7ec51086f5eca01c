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
from collections.abc import Mapping
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
    """Who is making something now: this process, its start time, and (on Linux) its start in
    clock ticks since boot with the boot's id, which `owner_alive` compares."""
    record: dict[str, Any] = {"pid": os.getpid(), "pid_start": round(started_at(), 3)}
    ticks, boot = start_ticks(os.getpid()), boot_id()
    if ticks is not None and boot is not None:
        record["pid_ticks"] = ticks
        record["boot_id"] = boot
    return record


def started_at() -> float:
    """When this process started, in seconds since the epoch: psutil's `create_time()`. On
    Linux it is read from /proc as psutil reads it (the boot time plus the start in clock ticks),
    without psutil's ~12 ms of imports: a session's start records its owner, and the UI's first
    frame waits for that start."""
    ticks = start_ticks(os.getpid())
    try:
        with open("/proc/stat", "rb") as handle:
            boot = next(float(line.split()[1]) for line in handle if line.startswith(b"btime"))
    except (OSError, IndexError, ValueError, StopIteration):
        ticks = None
    if ticks is None:  # not Linux
        import psutil

        return float(psutil.Process().create_time())
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat's starttime); None
    where there is no such process or no /proc. Unlike a start in wall-clock time it never moves:
    setting the clock does not change it."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])  # field 22, starttime
    except (OSError, IndexError, ValueError):
        return None


def boot_id() -> str | None:
    """This boot's random id (Linux), so that ticks since boot are compared within one boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def owner_alive(record: Mapping[str, Any]) -> bool:
    """Whether the process that made a record (`me()`'s fields) still runs, not a later process
    given the same pid.

    A record with the start in clock ticks and the boot's id is judged on those, exactly. A
    start in wall-clock time is not a stable identity: psutil computes it as /proc/stat's boot
    time, in whole seconds, plus the ticks, and the boot time is the wall clock minus the time
    since boot, so a time sync that steps the clock by a few milliseconds across a second's edge
    moves every process's start by a whole second. Compared with a 1 s tolerance, that made
    every live owner look gone, and gc would remove the containers of running sessions. Records
    written before the ticks were kept are judged on the wall-clock start as before."""
    try:
        pid = int(record.get("pid"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    ticks, boot = record.get("pid_ticks"), record.get("boot_id")
    current_boot = boot_id()
    if isinstance(ticks, int) and isinstance(boot, str) and current_boot is not None:
        return boot == current_boot and start_ticks(pid) == ticks
    import psutil

    try:
        return abs(psutil.Process(pid).create_time() - float(record.get("pid_start"))) < 1.0  # type: ignore[arg-type]
    except (psutil.NoSuchProcess, ValueError, TypeError):
        return False
