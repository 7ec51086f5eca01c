"""The reaper's watcher (standard library only, any python3), run by reaper.sh beside it as root.

It stands between RepoSim's requests (its stdin, the exec's) and the reaper (its stdout, a pipe
the reaper reads): every complete line passes on unchanged, and between lines it adds `- look`
when the reaper has something to look at: the pids cgroup refused a fork since the last look (a
fork bomb, even one in the background), or the guarded process (the file service, named by the
`guard` request it passes on) is stopped. So the idle reaper blocks in `read` instead of waking
five times a second to open and read those files itself (about 170 system calls a second per
idle container); the watcher checks both every fifth of a second, as the reaper did, with one
pread each on descriptors it keeps open (one poll and two preads a tick).

On cgroup v1 (this engine's) the kernel gives no notice of a refused fork: neither poll nor
inotify on pids.events wakes, so a tick is the only way. At the end of its stdin it says `- end`
and exits; the reaper takes an end without it as the watcher's death and reads its requests
itself again. It dies with the reaper (PR_SET_PDEATHSIG).

Run as `python3 -I -S -c SOURCE REAPER_PID EVENTS_FILE` (EVENTS_FILE may be empty).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import select
import signal
import sys
import time

TICK_MS = 200
PR_SET_PDEATHSIG = 1
_GUARD = re.compile(rb"\S+ guard (\d+)")
_MAX = re.compile(rb"(?m)^max (\d+)")


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


class Watcher:
    def __init__(self, events: str) -> None:
        self.events = -1
        if events:
            with contextlib.suppress(OSError):
                self.events = os.open(events, os.O_RDONLY)
        self.refused = self.refusals()
        self.guard = -1
        self.tail = b""

    def refusals(self) -> int:
        if self.events < 0:
            return 0
        try:
            found = _MAX.search(os.pread(self.events, 256, 0))
        except OSError:
            return 0
        return int(found.group(1)) if found else 0

    def guarded(self, pid: bytes) -> None:
        if self.guard >= 0:
            os.close(self.guard)
            self.guard = -1
        with contextlib.suppress(OSError):
            self.guard = os.open(b"/proc/" + pid + b"/stat", os.O_RDONLY)

    def stopped(self) -> bool:
        if self.guard < 0:
            return False
        try:
            stat = os.pread(self.guard, 512, 0)
        except OSError:  # it has exited: nothing to continue
            os.close(self.guard)
            self.guard = -1
            return False
        state = stat[stat.rfind(b") ") + 2 :][:1]
        return state in (b"T", b"t")

    def something_to_look_at(self) -> bool:
        count = self.refusals()
        refused = count > self.refused
        self.refused = count
        return refused or self.stopped()

    def requests(self, data: bytes) -> None:
        """Pass on the complete lines of `data` (a partial one waits for its end)."""
        data = self.tail + data
        end = data.rfind(b"\n") + 1
        self.tail = data[end:]
        if not end:
            return
        lines = data[:end]
        for line in lines.splitlines():
            guard = _GUARD.fullmatch(line)
            if guard:
                self.guarded(guard.group(1))
        write(lines)

    def run(self) -> None:
        poll = select.poll()
        poll.register(0, select.POLLIN)
        tick = TICK_MS / 1000
        look_at = time.monotonic() + tick
        while True:
            # The ticks keep their pace through a stream of requests, and cost no request one.
            wait = max(0, round((look_at - time.monotonic()) * 1000))
            if poll.poll(wait):
                data = os.read(0, 1 << 16)
                if not data:  # RepoSim closed the reaper (a partial request is dropped, as before)
                    write(b"- end\n")
                    return
                self.requests(data)
            now = time.monotonic()
            if now >= look_at:
                look_at = now + tick
                if self.something_to_look_at():
                    write(b"- look\n")


def main() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(sys.argv[1]):  # the reaper died before the line above
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        Watcher(sys.argv[2] if len(sys.argv) > 2 else "").run()


if __name__ == "__main__":
    main()
