"""The results store of a batch: one JSON line per finished task, appended, never rewritten.

A driver that is killed loses at most the line in flight; a rerun reads the store, keeps the
last record of each task and does only the tasks without a final one. A line cut by a crash is
ignored (and reported), never fatal.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

SCHEMA = "reposim.batch/1"


class TaskStatus(StrEnum):
    OK = "ok"  # the task ran and produced its result (which may itself say "not ready")
    FAILED = "failed"  # the task's own work failed, with a category and evidence
    TIMEOUT = "timeout"  # it ran past its time limit and was killed
    CRASHED = "crashed"  # its worker died (a signal, out of memory, a lost node)
    ERROR = "error"  # an unexpected exception in the task


# Statuses that are final: a rerun does not try them again unless asked to.
FINAL = frozenset({TaskStatus.OK, TaskStatus.FAILED})


@dataclass(frozen=True)
class TaskRecord:
    key: str
    status: TaskStatus
    seconds: float
    result: dict[str, Any] = field(default_factory=dict)
    category: str | None = None
    evidence: str | None = None
    trajectory: str | None = None
    attempt: int = 1
    worker: str | None = None
    finished: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        data["schema"] = SCHEMA
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskRecord:
        return cls(
            key=str(data["key"]),
            status=TaskStatus(data["status"]),
            seconds=float(data["seconds"]),
            result=dict(data.get("result") or {}),
            category=data.get("category"),
            evidence=data.get("evidence"),
            trajectory=data.get("trajectory"),
            attempt=int(data.get("attempt", 1)),
            worker=data.get("worker"),
            finished=float(data.get("finished", 0.0)),
        )


class StoreError(Exception):
    """A results file that cannot be used; the message is one clear sentence."""


class ResultStore:
    """An append-only JSONL file of TaskRecords, safe to append to from several processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped_lines: list[int] = []

    def records(self) -> Iterator[TaskRecord]:
        """Every record in file order; lines that do not parse are skipped and remembered."""
        self.skipped_lines = []
        if not self.path.exists():
            return
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not a results file.")
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                try:
                    data = json.loads(raw)
                    if data.get("schema") != SCHEMA:
                        raise ValueError(data.get("schema"))
                    yield TaskRecord.from_dict(data)
                except (ValueError, KeyError, TypeError, AttributeError):
                    self.skipped_lines.append(number)

    def latest(self) -> dict[str, TaskRecord]:
        """The last record of each task."""
        latest: dict[str, TaskRecord] = {}
        for record in self.records():
            latest[record.key] = record
        return latest

    def done(self, *, retry: frozenset[TaskStatus] = frozenset()) -> set[str]:
        """Keys whose last record is final (and not among the statuses to retry)."""
        return {
            key
            for key, record in self.latest().items()
            if record.status in FINAL and record.status not in retry
        }

    def append(self, record: TaskRecord) -> None:
        """Write one line with a single write under an exclusive lock, then fsync."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record.to_dict(), ensure_ascii=False, default=str) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # A previous writer killed mid-line leaves no newline: start ours on a fresh line so
            # only the cut record is lost.
            size = os.fstat(fd).st_size
            if size:
                with self.path.open("rb") as reader:
                    reader.seek(size - 1)
                    if reader.read(1) != b"\n":
                        line = b"\n" + line
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
