"""The PTY driver of the `open` and replay-fork tests (tests/terminal_drive.py)."""

from __future__ import annotations

import time

import pytest

from tests import terminal_drive


def test_drive_returns_once_the_program_has_exited(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the program closes the terminal, the PTY's master side stays readable (EIO): the
    driver went on polling it until its deadline, 2 x WAIT (120 s for every test that drives
    `reposim` this way), long after the program had exited."""
    monkeypatch.setattr(terminal_drive, "WAIT", 15.0)  # a deadline of 30 s
    started = time.monotonic()
    code, output = terminal_drive.drive(["sh", "-c", "echo drawn"], [])
    took = time.monotonic() - started
    assert (code, output) == (0, b"drawn\r\n")
    assert took < terminal_drive.WAIT, f"{took:.1f} s: drive waited for its deadline"
