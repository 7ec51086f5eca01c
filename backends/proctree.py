"""Finding and killing the processes a local session started, however they detached.

A process group is not enough: `setsid` and `nohup ... &` children leave the command's group,
and once their parent exits they are no longer anyone's descendants. What they keep is their
environment, so the local backend marks its shell's environment (REPOSIM_SESSION_MARK) and each
command's (REPOSIM_COMMAND_ID, exported by the persistent shell) and finds processes by those
marks in /proc. Only a process that clears its own environment *and* leaves the tree escapes.
(A cgroup would catch even those, but creating one needs root or a delegated systemd slice,
which an ordinary user's machine does not give.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

# psutil (~12 ms of imports) is imported where it is used: a session's start needs none of it,
# and the UI's first frame waits for that start.

_PROC = Path("/proc")


def marked_pids(var: str, value: str) -> set[int]:
    """Processes of any user we may read whose environment has `var=value`."""
    needle = b"\0" + f"{var}={value}".encode() + b"\0"
    found: set[int] = set()
    me = os.getpid()
    if not _PROC.is_dir():  # pragma: no cover - not Linux
        import psutil

        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.pid != me and proc.environ().get(var) == value:
                    found.add(proc.pid)
        return found
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in b"\0" + environ + (b"" if environ.endswith(b"\0") else b"\0"):
            found.add(pid)
    return found


def descendants(pid: int) -> set[int]:
    import psutil

    try:
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def signal_all(pids: Iterable[int], sig: int, *, spare_groups: Iterable[int] = ()) -> set[int]:
    """Send `sig` to each process and to its process group, except the groups in
    `spare_groups` (a shell's own, ours); returns the pids that were signalled."""
    spared = {os.getpgrp(), *spare_groups}
    pids = set(pids)
    groups = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    for group in groups - spared:
        with contextlib.suppress(OSError):
            os.killpg(group, sig)
    hit = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
            hit.add(pid)
    return hit


def wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait until the processes have exited (a zombie counts as gone); returns those left."""
    import psutil

    left = set(pids)
    deadline = time.monotonic() + timeout
    while left:
        for pid in list(left):
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    left.discard(pid)
            except psutil.Error:
                left.discard(pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    return left


def kill_session(
    shell_pid: int | None,
    var: str,
    value: str,
    *,
    timeout: float = 2.0,
    spare_groups: Iterable[int] = (),
) -> None:
    """SIGKILL everything a session started: the shell's tree and every process carrying the
    session's mark, then wait for them to go. The process groups in `spare_groups` are not
    signalled as groups (their marked members are, one by one)."""
    pids = marked_pids(var, value)
    if shell_pid is not None:
        pids |= descendants(shell_pid)
        pids.add(shell_pid)
    # Stop them first so none forks a replacement while the others are being killed.
    signal_all(pids, signal.SIGSTOP, spare_groups=spare_groups)
    pids |= marked_pids(var, value)
    signal_all(pids, signal.SIGKILL, spare_groups=spare_groups)
    wait_gone(pids, timeout)


def environ_value(pid: int, var: str) -> str | None:
    """`var` in the environment a process started with, if we may read it."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return None
    prefix = var.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(prefix):
            return item[len(prefix) :].decode(errors="replace")
    return None


def command_processes(shell_pid: int, var: str, command_id: str, started: float) -> set[int]:
    """The processes of one command of a persistent shell (`var` = its id), not those of the
    background jobs earlier commands left running.

    A process is the command's if it carries the id, or if it shares a process group with one
    that does. A group none of whose members carries any id (a subshell that never ran a
    program) is the command's if its leader started after the command did.
    """
    import psutil

    mine = marked_pids(var, command_id)
    groups: dict[int, set[int]] = {}
    for pid in descendants(shell_pid):
        with contextlib.suppress(OSError):
            groups.setdefault(os.getpgid(pid), set()).add(pid)
    chosen = set(mine)
    for group, members in groups.items():
        if group == shell_pid:
            continue
        if members & mine:
            chosen |= members
            continue
        if any(environ_value(pid, var) is not None for pid in members):
            continue  # an earlier command's job
        times = []
        for proc in _processes(members):
            with contextlib.suppress(psutil.Error):
                times.append(proc.create_time())
        leader_started = min(times, default=0.0)
        # create_time has the clock tick's resolution (10 ms).
        if leader_started >= started - 0.02:
            chosen |= members
    return chosen


def _processes(pids: Iterable[int]) -> list[psutil.Process]:
    import psutil

    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    return procs


def watch_parent_and_kill(var: str, value: str, spare_groups: Iterable[int] = ()) -> None:
    """Wait for the end of stdin (the process holding its other end exited, however it died),
    then kill every process carrying `var=value` in its environment.

    `spare_groups`: the process group of the process that started the watchdog. What that
    process starts without a new session (Ray's own processes) shares its group with the
    user's job (a shell pipeline's other commands, `timeout`, `uv run`): those marked
    processes are killed one by one, never the group they share with what is not ours."""
    import sys

    while sys.stdin.buffer.read(65536):
        pass
    kill_session(None, var, value, timeout=10.0, spare_groups=spare_groups)


if __name__ == "__main__":  # python -m backends.proctree VAR VALUE [GROUP...]: a fate watchdog
    import sys

    watch_parent_and_kill(sys.argv[1], sys.argv[2], [int(g) for g in sys.argv[3:]])
