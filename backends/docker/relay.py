"""The output relay that runs *inside* the container (standard library only, any python3).

RepoSim ships this module's source into the container and runs it as the container's root with
`python3 -I -c SOURCE DIR`, beside each command shell: one resident process that gives every
command's output a channel of its own (issue 25). It makes FIFOs in DIR (under /run, root's,
mode 0755; the FIFOs 0622, so the session's uid may write to them and nothing else; a warm pool
leaves them out of what it compares), and copies the running
command's FIFO to its stdout, which reaches RepoSim over the exec's stream. The command shell
writes each command's output and then its frame to that command's FIFO (backends/shell.py). The
session's uid cannot signal a root process, so a command's `kill -9 -1` does not reach it.

Protocol, on stdin, one request a line:
  `i ID ID ...`  the ids (REPOSIM_COMMAND_ID) of the next commands, in order: FIFO 1 is the
           first id's, and so on. RepoSim sends them ahead (64 at a time), so a command costs
           no request: the relay copies the running command's FIFO until that command's frame
           (`\x1eRSM-ID:...\x1e\n`, with its own id) and switches to the next FIFO by itself
           (made ready beforehand, so the shell can open it at once). What follows the frame in
           the old FIFO came from the command's leftover processes: that FIFO is retired and
           read (at most 64 KiB per 50 ms) and dropped, until they are all gone. A FIFO whose
           id has not arrived yet waits unread.
  `d TAG`  the shell died: copy what the running command's FIFO holds (up to its frame), then
           print `\x1eRDR-TAG\x1e\n`.
End of stdin: remove DIR and exit. FIFOs are named 1, 2, 3...: the shell counts along.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import shutil
import sys
import time
from collections import deque

READ = 1 << 18
LEFTOVER_READ = 1 << 16
LEFTOVER_PACE = 0.05
F_SETPIPE_SZ = 1031
AHEAD = 4
"""FIFOs made ready beyond the running command's (a few at a time when they run low, after a
frame is out: the next command's FIFO exists before the shell opens it)."""
FRAME_TAIL = 4200
"""Bytes kept to find a frame that straddles two reads (`\x1eRSM-`, an id, a status, a path)."""
_ID = re.compile(rb"[0-9a-f]{12}")
_FRAME = re.compile(rb"\x1eRSM-([0-9a-f]{12}):\d+:[^\x1e]*\x1e\n")
"""Any command's frame; the running command's is the one with its id (one pattern for all:
compiling one per command cost more CPU than the rest of the command's relaying)."""


class Fifo:
    def __init__(self, directory: str, number: int) -> None:
        self.path = os.path.join(directory, str(number))
        os.mkfifo(self.path, 0o600)
        os.chmod(self.path, 0o622)  # the umask must not take the session's write bit away
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        # Held until the FIFO is retired: without a writer a read would say end of file.
        self.keep: int | None = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        self.grown = False

    def grow(self) -> None:
        """A bigger buffer for a command that filled the default one (64 KiB): fewer
        switches between it and the relay. Only then: on every FIFO it cost a system call
        and more CPU than the rest of a short command's relaying."""
        self.grown = True
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.fd, F_SETPIPE_SZ, 1 << 20)

    def retire(self) -> None:
        """Once: a second unlink would be a wasted system call on every command."""
        if self.keep is not None:
            os.close(self.keep)
            self.keep = None
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def close(self) -> None:
        self.retire()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class Relay:
    """One loop over an epoll set (no `selectors` layer: its keys and registrations cost
    more CPU per command than the copying itself)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.made = 0
        self.ready: deque[Fifo] = deque()
        self.make_ready()
        self.current = self.ready.popleft()
        self.ids: deque[bytes] = deque()
        self.frame: bytes | None = None
        """The start of the running command's frame (`\x1eRSM-ID:`), once its id is known:
        its frame ends the command."""
        self.tail = b""
        self.retired: dict[int, Fifo] = {}
        self.paused: dict[int, float] = {}
        self.poll = select.epoll()
        self.roles: dict[int, str] = {}
        self.watch(0, "control")
        self.requests = b""

    def watch(self, fd: int, role: str) -> None:
        self.poll.register(fd, select.EPOLLIN)
        self.roles[fd] = role

    def unwatch(self, fd: int) -> None:
        self.poll.unregister(fd)
        del self.roles[fd]

    def make_ready(self) -> None:
        while len(self.ready) < AHEAD:
            self.made += 1
            self.ready.append(Fifo(self.directory, self.made))

    @staticmethod
    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]

    def know_ids(self, ids: list[bytes]) -> None:
        self.ids.extend(i for i in ids if _ID.fullmatch(i))
        if self.frame is None:
            self.start_current()

    def start_current(self) -> None:
        """Read the running command's FIFO once its id is known (its frame ends it)."""
        if self.frame is None and self.ids:
            self.frame = b"\x1eRSM-" + self.ids.popleft() + b":"
            self.tail = b""
            self.watch(self.current.fd, "current")

    def copy_current(self, limit: int = READ) -> None:
        """Copy what the running command's FIFO holds now, up to `limit` bytes (a writer
        that never pauses must not keep the requests waiting), and up to its frame."""
        while limit > 0 and self.frame is not None:
            try:
                data = os.read(self.current.fd, min(READ, limit))
            except BlockingIOError:
                return
            if not data:
                return
            limit -= len(data)
            if len(data) >= 1 << 16 and not self.current.grown:
                self.current.grow()
            seen = self.tail + data
            end = self.frame_end(seen)
            if end is not None:
                self.write(data[: end - len(self.tail)])
                self.switch()
                return
            self.write(data)
            self.tail = seen[-FRAME_TAIL:]

    def frame_end(self, seen: bytes) -> int | None:
        """Where the running command's frame ends in `seen`; another id's is output."""
        assert self.frame is not None
        at = seen.find(self.frame)
        while at >= 0:
            match = _FRAME.match(seen, at)
            if match is not None:
                return match.end()
            at = seen.find(self.frame, at + 1)
        return None

    def switch(self) -> None:
        # The command's frame is out: what its FIFO holds after it came from the command's
        # leftover processes, and is dropped with the rest of their output.
        old = self.current
        self.unwatch(old.fd)
        old.retire()
        self.current = self.ready.popleft()
        self.frame = None
        self.start_current()
        self.retired[old.fd] = old
        # Mostly the shell has closed it already and nothing else writes to it: end of file
        # now, with no round through the epoll set.
        self.drain_retired(old.fd, watched=False)
        if len(self.ready) < AHEAD // 2:
            self.make_ready()

    def drain_retired(self, fd: int, *, watched: bool = True) -> None:
        try:
            data = os.read(fd, LEFTOVER_READ)
        except BlockingIOError:
            if not watched:
                self.watch(fd, "retired")
            return
        if watched:
            self.unwatch(fd)
        if not data:  # its last writer is gone
            self.retired.pop(fd).close()
            return
        self.paused[fd] = time.monotonic() + LEFTOVER_PACE

    def resume_retired(self) -> None:
        now = time.monotonic()
        for fd, until in list(self.paused.items()):
            if until <= now:
                del self.paused[fd]
                self.watch(fd, "retired")

    def control(self) -> bool:
        data = os.read(0, 1 << 16)
        if not data:
            return False
        self.requests += data
        while b"\n" in self.requests:
            line, self.requests = self.requests.split(b"\n", 1)
            what, _, rest = line.partition(b" ")
            if what == b"i":
                self.know_ids(rest.split())
            elif what == b"d":
                self.copy_current(4 << 20)
                self.write(b"\x1eRDR-" + rest + b"\x1e\n")
        return True

    def run(self) -> None:
        self.write(b"\x1eRELAY\x1e\n")
        roles = self.roles
        while True:
            timeout = -1.0
            if self.paused:
                timeout = max(0.0, min(self.paused.values()) - time.monotonic())
            for fd, _ in self.poll.poll(timeout):
                role = roles.get(fd)
                if role == "control":
                    if not self.control():
                        return
                elif role == "current":
                    if fd == self.current.fd:
                        self.copy_current()
                elif role == "retired":
                    self.drain_retired(fd)
            if self.paused:
                self.resume_retired()


def main() -> None:
    directory = sys.argv[1]
    os.mkdir(directory, 0o755)
    try:
        Relay(directory).run()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
