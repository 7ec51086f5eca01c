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
  `n TAG`  the running command is over: copy what its FIFO holds, print `\\x1eRSW-TAG\\x1e\\n`,
           and from then on copy the next FIFO (made ready beforehand, so the shell can open it
           at once). The old FIFO is retired: what the command's leftover processes still write
           to it is read (at most 64 KiB per 50 ms) and dropped, until they are all gone.
  `d TAG`  the shell died: copy what the running command's FIFO holds, then print
           `\\x1eRDR-TAG\\x1e\\n`.
End of stdin: remove DIR and exit. FIFOs are named 1, 2, 3...: the shell counts along.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import sys
import time

READ = 1 << 18
LEFTOVER_READ = 1 << 16
LEFTOVER_PACE = 0.05
F_SETPIPE_SZ = 1031


class Fifo:
    def __init__(self, directory: str, number: int) -> None:
        self.path = os.path.join(directory, str(number))
        os.mkfifo(self.path, 0o600)
        os.chmod(self.path, 0o622)  # the umask must not take the session's write bit away
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        # Held until the FIFO is retired: without a writer a read would say end of file.
        self.keep: int | None = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        with contextlib.suppress(OSError):
            fcntl.fcntl(self.fd, F_SETPIPE_SZ, 1 << 20)

    def retire(self) -> None:
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
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.out = sys.stdout.buffer
        self.number = 1
        self.current = Fifo(directory, 1)
        self.next = Fifo(directory, 2)
        self.retired: dict[int, Fifo] = {}
        self.paused: dict[int, float] = {}
        self.selector = selectors.DefaultSelector()
        self.selector.register(0, selectors.EVENT_READ, "control")
        self.selector.register(self.current.fd, selectors.EVENT_READ, "current")
        self.requests = b""

    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    def copy_current(self, limit: int = READ) -> None:
        """Copy what the running command's FIFO holds now, up to `limit` bytes (a writer
        that never pauses must not keep the requests waiting)."""
        while limit > 0:
            try:
                data = os.read(self.current.fd, min(READ, limit))
            except BlockingIOError:
                return
            if not data:
                return
            self.write(data)
            limit -= len(data)

    def switch(self, tag: str) -> None:
        # RepoSim has read the command's frame: what its FIFO holds now came after it, from
        # the command's leftover processes, and is dropped with the rest of their output.
        self.write(b"\x1eRSW-" + tag.encode() + b"\x1e\n")
        old = self.current
        self.selector.unregister(old.fd)
        old.retire()
        self.retired[old.fd] = old
        self.selector.register(old.fd, selectors.EVENT_READ, "retired")
        self.number += 1
        self.current, self.next = self.next, Fifo(self.directory, self.number + 1)
        self.selector.register(self.current.fd, selectors.EVENT_READ, "current")

    def drain_retired(self, fd: int) -> None:
        try:
            data = os.read(fd, LEFTOVER_READ)
        except BlockingIOError:
            return
        self.selector.unregister(fd)
        if not data:  # its last writer is gone
            self.retired.pop(fd).close()
            return
        self.paused[fd] = time.monotonic() + LEFTOVER_PACE

    def resume_retired(self) -> None:
        now = time.monotonic()
        for fd, until in list(self.paused.items()):
            if until <= now:
                del self.paused[fd]
                self.selector.register(fd, selectors.EVENT_READ, "retired")

    def control(self) -> bool:
        data = os.read(0, 4096)
        if not data:
            return False
        self.requests += data
        while b"\n" in self.requests:
            line, self.requests = self.requests.split(b"\n", 1)
            what, _, tag = line.decode(errors="replace").partition(" ")
            if what == "n":
                self.switch(tag)
            elif what == "d":
                self.copy_current(4 << 20)
                self.write(b"\x1eRDR-" + tag.encode() + b"\x1e\n")
        return True

    def run(self) -> None:
        self.write(b"\x1eRELAY\x1e\n")
        while True:
            timeout = None
            if self.paused:
                timeout = max(0.0, min(self.paused.values()) - time.monotonic())
            for key, _ in self.selector.select(timeout):
                if key.data == "control":
                    if not self.control():
                        return
                elif key.data == "current":
                    if key.fd == self.current.fd:
                        self.copy_current()
                elif key.fd in self.retired and key.fd not in self.paused:
                    self.drain_retired(key.fd)
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
