"""A command's output taken in as it streams, in bounded memory.

What the UI and the model see is a window on the output: all of it while it is small, its head
and its tail once it is not. The whole output goes to a spool file (when the caller gives a
directory for one) as it arrives, hashed and counted on the way, so memory does not grow with
the output however much a command prints. A cap cuts the output: past it nothing more is kept,
and the caller stops the command and says so.

Host disk is bounded twice: the spool is gzip-compressed as it is written (level 1: text output
shrinks 5-20x at a few hundred MB/s), and an `OutputBudget` shared by a session's captures caps
the output bytes it keeps in all; past it a capture keeps only a short head and tail and says
so. Every spool is recorded in RepoSim's private state while it is being written, so `reposim
gc` can delete the ones a killed process left (`collect_spools`) and nothing else.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import secrets
import stat as stat_mod
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from backends.private_state import me, owner_alive, private_dir, read_records, write_record

DEFAULT_HEAD = 64 * 1024
DEFAULT_TAIL = 64 * 1024
DEFAULT_CAP = 1 << 30
"""Bytes of output kept per command before it is stopped (1 GiB), unless the caller says."""
SPOOL_SUFFIX = ".partial"
SPOOLS = "spools"
"""Where spool records live, under the private state directory."""
SPOOL_LEVEL = 1
"""gzip level of spools: fast enough to keep up with a command printing hundreds of MB/s."""
DEFAULT_BUDGET = 4 << 30
"""Bytes of command output a session keeps in all (4 GiB, before compression)."""
BUDGET_WINDOW = 2 * 1024
"""Head and tail (each) a capture still keeps once the session's budget is used up."""


@dataclass
class OutputBudget:
    """The bytes of output a session may keep (in lines and blobs, before compression); its
    captures draw on it as they take output. `limit` None: no budget."""

    limit: int | None = DEFAULT_BUDGET
    used: int = 0
    exhausted: bool = field(default=False)

    def take(self, size: int) -> int:
        """Draw up to `size` bytes; returns how many may be kept."""
        if self.limit is None:
            self.used += size
            return size
        granted = max(0, min(size, self.limit - self.used))
        self.used += granted
        if granted < size:
            self.exhausted = True
        return granted

    def notice(self) -> str:
        return (
            f"reposim: this session's output budget ({format_size(self.limit or 0)}) is used up:"
            " only the head and tail of each command's output are kept from now on (raise"
            " output_budget under [session] in config.toml)."
        )


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
    """A gzip file holding all `size` bytes, when the output outgrew the view and a spool
    directory was given; the caller owns it from now on."""
    over_budget: bool = False
    """The session's output budget ran out during this command: the output is not kept whole
    (no spool) and the view is a short head and tail."""


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
        budget: OutputBudget | None = None,
    ) -> None:
        self._budget = budget
        self.over_budget = False
        if budget is not None and budget.exhausted and head is not None and tail is not None:
            head, tail = min(head, BUDGET_WINDOW), min(tail, BUDGET_WINDOW)
            self.over_budget = True
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
        self._spool_record: Path | None = None
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
            budget = self._budget
            if budget is not None and not self.over_budget and budget.take(len(data)) < len(data):
                self._over_budget()
            if self._windowed:
                self._take_windowed(data)
            else:
                self._all += data
                if self._window is not None and len(self._all) > self._window:
                    self._start_window()
        return not self.capped

    def _over_budget(self) -> None:
        """The budget ran out: keep a short head and tail, and nothing on disk."""
        self.over_budget = True
        self._drop_spool()
        if self._window is not None:
            self._head_limit = min(self._head_limit, BUDGET_WINDOW)
            self._tail_limit = min(self._tail_limit, BUDGET_WINDOW)
            self._window = self._head_limit + self._tail_limit
            if self._windowed:
                self._head = self._head[: self._head_limit]
            elif len(self._all) > self._window:
                self._start_window()

    def _start_window(self) -> None:
        held = bytes(self._all)
        self._all = bytearray()
        self._windowed = True
        self._head = held[: self._head_limit]
        self._tail = bytearray(held[self._head_limit :][-self._tail_limit :])
        if self._spool_dir is not None and not self.over_budget:
            self._spool_dir.mkdir(parents=True, exist_ok=True)
            token = secrets.token_hex(8)
            self._spool_path = self._spool_dir / f"{token}{SPOOL_SUFFIX}"
            # Recorded before it exists: a kill at any point leaves nothing gc cannot find.
            self._spool_record = private_dir(SPOOLS) / f"{token}.json"
            write_record(self._spool_record, {"path": str(self._spool_path.resolve()), **me()})
            self._spool = gzip.GzipFile(  # type: ignore[assignment]
                self._spool_path, "wb", compresslevel=SPOOL_LEVEL, mtime=0
            )
            assert self._spool is not None
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
        if self.over_budget:
            note = (
                f"\n[... {elided} bytes of output left out here; {self.size} in all; not kept:"
                " the session's output budget is used up ...]\n"
            )
        spool = None
        if self._spool is not None:
            self._spool.close()
            self._spool = None
            spool = self._spool_path
        self._forget_spool()
        return CapturedOutput(
            self._head + note.encode() + tail,
            self.size,
            self._lines,
            self._hash.hexdigest(),
            elided,
            self.capped,
            spool,
            self.over_budget,
        )

    def _forget_spool(self) -> None:
        if self._spool_record is not None:
            with contextlib.suppress(OSError):
                self._spool_record.unlink()
            self._spool_record = None

    def _drop_spool(self) -> None:
        if self._spool is not None:
            with contextlib.suppress(OSError):
                self._spool.close()
            self._spool = None
        if self._spool_path is not None:
            with contextlib.suppress(OSError):
                self._spool_path.unlink()
            self._spool_path = None
        self._forget_spool()

    def discard(self) -> None:
        """Drop the spool file (the command's result will not be recorded)."""
        self._drop_spool()


@dataclass(frozen=True)
class OrphanSpool:
    path: Path
    owner_pid: str
    size: int
    removed: bool


def collect_spools(*, dry_run: bool = False) -> list[OrphanSpool]:
    """Delete the output spools (`*.partial`) that a process killed while a command printed
    left behind: only files RepoSim's private state records, whose recording process is gone,
    that are still this user's regular `*.partial` files at the recorded place."""
    found = []
    for record_path, record in read_records(SPOOLS):
        if owner_alive(record):
            continue
        path = Path(str(record.get("path", "")))
        size = 0
        ours = False
        if path.name.endswith(SPOOL_SUFFIX):
            with contextlib.suppress(OSError):
                info = path.lstat()
                ours = stat_mod.S_ISREG(info.st_mode) and info.st_uid == os.getuid()
                size = info.st_size
        removed = False
        if not dry_run:
            if ours:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed = True
            with contextlib.suppress(OSError):
                record_path.unlink()
        if ours:
            found.append(OrphanSpool(path, str(record.get("pid", "")), size, removed))
    return found
