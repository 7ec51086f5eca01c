"""Running `reposim` as a person runs it, in a real pseudo-terminal: each time the next marker
of a script has been drawn, its keys are typed. Shared by the `open` and `replay` tests."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

CSI = re.compile(rb"\x1b\[[0-9;?<>$]*[A-Za-z]")
"""A terminal control sequence: taken out of what was drawn before a marker is searched."""

WAIT = 180.0
"""Upper bound for the program to catch up on a loaded 2-core machine (the suite's 180 s);
never a timing check."""

QUIET = 0.3
"""Seconds without output after which a screen that drew its marker counts as drawn."""


def reposim_command(name: str) -> list[str]:
    """The command line of `reposim NAME` from this checkout."""
    return [sys.executable, "-c", "from reposim.cli import main; main()", name]


def drive(
    command: list[str],
    script: list[tuple[bytes, bytes]],
    env: dict[str, str] | None = None,
    *,
    at_once: bool = False,
) -> tuple[int, bytes]:
    """Run `command` on a PTY of 120x40; each time the next marker of `script` has been drawn,
    type its keys. A marker is searched in the text as drawn (control sequences out: styles may
    split its words); the keys are typed once the screen stops drawing, each after the program
    answered the last. With `at_once`, a marker is searched in the raw output and its keys are
    typed as soon as it is there. Returns the exit code and everything the program wrote."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", **(env or {})}
    proc = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    output = b""
    seen = 0  # what the previous marker matched is not searched again for the next one
    steps = list(script)
    deadline = time.monotonic() + 2 * WAIT

    def read(timeout: float) -> bool:
        """Take what the program writes within `timeout`; False if it wrote nothing."""
        nonlocal output
        if not select.select([master], [], [], timeout)[0]:
            return False
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the program closed the terminal
            return False
        output += chunk
        return bool(chunk)

    def running() -> bool:
        return proc.poll() is None and time.monotonic() < deadline

    try:
        while time.monotonic() < deadline:
            # Once the program has exited, the master side reads EIO and select keeps calling
            # it readable: stop when a read finds nothing more, not when select says so.
            if proc.poll() is not None and not read(0):
                break
            read(0.05)
            if steps:
                marker, keys = steps[0]
                found = (output if at_once else CSI.sub(b"", output)).find(marker, seen)
                if found >= 0:
                    seen = found + len(marker)
                    if at_once:
                        os.write(master, keys)
                        steps.pop(0)
                        continue
                    # The screen has drawn the marker; type once it stops drawing (it is
                    # still starting while it does), each key after the app answered the
                    # last by drawing (or went on without a visible answer for a while).
                    while read(QUIET) and running():
                        pass
                    for key in keys:
                        os.write(master, bytes([key]))
                        answer_by = time.monotonic() + WAIT / 4
                        while not read(0.05) and running() and time.monotonic() < answer_by:
                            pass
                    steps.pop(0)
        else:
            proc.kill()
        return proc.wait(timeout=WAIT), output
    finally:
        os.close(master)


def header_and_events(path: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    """A trajectory file's header line and its events."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines[0], lines[1:]
