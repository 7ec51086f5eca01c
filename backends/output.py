"""A command's output taken in as it streams, in bounded memory.

What the UI and the model see is a window on the output: all of it while it is small, its head
and its tail once it is not. The whole output goes to a spool file (when the caller gives a
directory for one) as it arrives, hashed and counted on the way, so memory does not grow with
the output however much a command prints. A cap cuts the output: past it nothing more is kept,
and the caller stops the command and says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

DEFAULT_HEAD = 64 * 1024
DEFAULT_TAIL = 64 * 1024
DEFAULT_CAP = 1 << 30
"""Bytes of output kept per command before it is stopped (1 GiB), unless the caller says."""
SPOOL_SUFFIX = ".partial"


def parse_size(text: str) -> int:
    """`512M`, `2G`, `1048576` -> bytes (binary units); ValueError for anything else."""
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    factor = units.get(value[-1:], 1)
    number = value[:-1] if value[-1:] in units else value
    size = int(float(number) * factor)
    if size <= 0:
        raise ValueError(text)
    return size


def format_size(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            amount = size / factor
            return f"{amount:.0f} {unit}" if amount == int(amount) else f"{amount:.1f} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True)
class CapturedOutput:
    """What a capture ends with."""

    view: bytes
    """The whole output, or its head and tail around a line that says how much is left out."""
    size: int
    """Bytes the command printed (up to the cap)."""
    lines: int
    """Newlines in those bytes."""
    sha256: str
    elided: int
    """Bytes of the output missing from `view`."""
    capped: bool
    """The output reached the cap and was cut there."""
    spool: Path | None
    """A file holding all `size` bytes, when the output outgrew the view and a spool directory
    was given; the caller owns it from now on."""


class OutputCapture:
    """Takes output chunk by chunk; memory stays under head + tail + one chunk.

    head/tail None keeps everything in memory (for the engine's own commands, whose output it
    parses whole); cap None never cuts.
    """

    def __init__(
        self,
        *,
        head: int | None = DEFAULT_HEAD,
        tail: int | None = DEFAULT_TAIL,
        cap: int | None = DEFAULT_CAP,
        spool_dir: Path | None = None,
    ) -> None:
        self._window = None if head is None or tail is None else head + tail
        self._head_limit = head or 0
        self._tail_limit = tail or 0
        self.cap = cap
        self._spool_dir = spool_dir
        self._all = bytearray()  # everything, while it fits the window
        self._head = b""
        self._tail = bytearray()
        self._hash = hashlib.sha256()
        self.size = 0
        self._lines = 0
        self.capped = False
        self._spool_path: Path | None = None
        self._spool: BinaryIO | None = None
        self._windowed = False

    @classmethod
    def whole(cls) -> OutputCapture:
        """Keep the whole output in memory, uncut."""
        return cls(head=None, tail=None, cap=None)

    def feed(self, data: bytes) -> bool:
        """Take a chunk; False once the cap is reached (the rest of `data` is dropped)."""
        if self.capped:
            return False
        if self.cap is not None and self.size + len(data) > self.cap:
            data = data[: self.cap - self.size]
            self.capped = True
        if data:
            self.size += len(data)
            self._lines += data.count(b"\n")
            self._hash.update(data)
            if self._windowed:
                self._take_windowed(data)
            else:
                self._all += data
                if self._window is not None and len(self._all) > self._window:
                    self._start_window()
        return not self.capped

    def _start_window(self) -> None:
        held = bytes(self._all)
        self._all = bytearray()
        self._windowed = True
        self._head = held[: self._head_limit]
        self._tail = bytearray(held[self._head_limit :][-self._tail_limit :])
        if self._spool_dir is not None:
            self._spool_dir.mkdir(parents=True, exist_ok=True)
            self._spool_path = self._spool_dir / f"{secrets.token_hex(8)}{SPOOL_SUFFIX}"
            self._spool = self._spool_path.open("wb")
            self._spool.write(held)

    def _take_windowed(self, data: bytes) -> None:
        if self._spool is not None:
            self._spool.write(data)
        tail = self._tail
        tail += data
        # Trim in batches: deleting from the front of a bytearray moves its start, but doing
        # it once per `tail` bytes keeps the cost per byte constant.
        if len(tail) > 2 * self._tail_limit:
            del tail[: len(tail) - self._tail_limit]

    def finish(self) -> CapturedOutput:
        if not self._windowed:
            data = bytes(self._all)
            return CapturedOutput(
                data, self.size, self._lines, self._hash.hexdigest(), 0, self.capped, None
            )
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        elided = self.size - len(self._head) - len(tail)
        note = f"\n[... {elided} bytes of output left out here; {self.size} in all ...]\n"
        spool = None
        if self._spool is not None:
            self._spool.close()
            self._spool = None
            spool = self._spool_path
        return CapturedOutput(
            self._head + note.encode() + tail,
            self.size,
            self._lines,
            self._hash.hexdigest(),
            elided,
            self.capped,
            spool,
        )

    def discard(self) -> None:
        """Drop the spool file (the command's result will not be recorded)."""
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        if self._spool_path is not None:
            with contextlib.suppress(OSError):
                self._spool_path.unlink()
