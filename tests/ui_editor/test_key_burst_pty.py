"""Keys typed in one burst are applied in order and none is lost (issue 26, major 8): the real
`reposim open` in a pseudo-terminal, a burst written at once (as a paste without bracketed paste,
or keys queued on a loaded machine arrive), while CPU burners load both cores."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyte
import pytest

from tests.conftest import RepoFactory

COLUMNS, LINES = 120, 40
LINE = 277
BURNERS = 2  # busy processes on a 2-core machine
BURST = b"\x07" + str(LINE).encode() + b"\r" + b"\x1b[F" + b"\x7f" * 7 + b"None" + b"\x13"


def _module() -> str:
    lines = ['"""Lookups with a default."""', ""]
    while len(lines) < LINE - 3:
        lines.append(f"VALUE_{len(lines)} = {len(lines)}")
    lines += ["", "def lookup(table, key, default=None):", "    return default"]
    lines += [f"# tail {n}" for n in range(30)]
    assert lines[LINE - 1] == "    return default"
    return "\n".join(lines) + "\n"


class Terminal:
    """The app on the far side of a pty, its screen kept up to date by pyte."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        self.process = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.ByteStream(self.screen)
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.stream.feed(data)

    def text(self) -> str:
        with self.lock:
            return "\n".join(self.screen.display)

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait(self, predicate: Callable[[], bool], what: str, limit: float = 120.0) -> None:
        deadline = time.monotonic() + limit
        while not predicate():
            if self.process.poll() is not None:
                raise AssertionError(f"the app exited while waiting for {what}:\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}:\n{self.text()}")
            time.sleep(0.1)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        os.close(self.master)


@pytest.fixture
def load() -> Iterator[None]:
    """Both cores busy for the burst (bounded: each burner stops by itself after 120 s)."""
    burn = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(BURNERS)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)


def test_a_key_burst_under_load_is_applied_in_order(
    make_repo: RepoFactory, tmp_path: Path, load: None
) -> None:
    repo = make_repo({"lookups.py": _module()}, name="burst")
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": str(COLUMNS),
        "LINES": str(LINES),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    args = [sys.executable, "-m", "reposim", "open", str(repo), "--in-place"]
    args += ["--trajectory", str(tmp_path / "t.jsonl")]
    term = Terminal(args, env)
    try:
        term.wait(lambda: "EXPLORER" in term.text(), "the first frame")
        term.write(b"\x10")  # Ctrl+P: quick open
        term.wait(lambda: "lookups.py" in term.text(), "the quick-open list")
        shown = term.text().count("lookups.py")  # the tree and the list
        term.write(b"lookups.py")
        term.wait(lambda: term.text().count("lookups.py") > shown, "the query in the box")
        term.write(b"\r")
        term.wait(lambda: "Lookups with a default" in term.text(), "the file in the editor")
        term.write(BURST)
        target = repo / "lookups.py"
        term.wait(lambda: "return None" in target.read_text(), "the save of the burst's edit", 180)
        lines = target.read_text().splitlines()
        assert lines[LINE - 1] == "    return None", lines[LINE - 3 : LINE + 1]
        expected = _module().splitlines()
        expected[LINE - 1] = "    return None"
        assert lines == expected  # nothing else: no digit typed into the code, no key lost
        term.write(b"\x11")  # Ctrl+Q (saved: no prompt)
        term.process.wait(60)
    finally:
        term.close()
