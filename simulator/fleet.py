"""Every session of a batch at a glance, kept current from the trajectories as they are written.

A batch (`reposim agent --tasks`, or any batch whose tasks record into one folder) writes each
session's trajectory as it goes, one line an event, flushed. `Fleet` watches such a folder: each
`poll()` stats every file and reads only what was appended since the last poll (a whole line at
a time; a line still being written waits for the next poll), so 500 sessions cost 500 `stat`s and
the few new lines, not 500 re-reads. The batch's results store, when given, adds the verdicts of
finished tasks (and names the ones that crashed before writing anything).

A session is `stuck` when it is still running and nothing was appended to its file for
`stuck_after` seconds. On a Ray cluster the tasks write wherever their node has the folder:
watching works where that folder is shared with this machine (a network filesystem), not
otherwise.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from simulator.describe import describe_event
from simulator.events import Event
from simulator.trajectory import SCHEMA
from simulator.wire import WireError

_ACTIONS = frozenset(
    {
        "exec",
        "file.read",
        "file.write",
        "file.edit",
        "file.create",
        "file.delete",
        "file.rename",
        "search",
        "test.run",
    }
)
_READ_LIMIT = 4 << 20
"""At most this much of one file is read per poll, so a huge new file never stalls a poll."""


class SessionState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    STUCK = "stuck"
    PAUSED = "paused"  # the agent waits for a person who took the session over
    FINISHED = "finished"
    FAILED = "failed"
    ENDED = "ended"  # the session closed without the agent finishing (a budget, a stop, an error)


_LIVE = frozenset(
    (SessionState.STARTING, SessionState.RUNNING, SessionState.STUCK, SessionState.PAUSED)
)


@dataclass
class SessionRow:
    """What the fleet view shows of one session; `version` grows with every change."""

    key: str
    path: Path | None
    repo: str = ""
    task: str = ""
    state: SessionState = SessionState.STARTING
    steps: int = 0
    last_action: str = ""
    started: float | None = None
    """Wall-clock start (from the header's `created`)."""
    elapsed: float = 0.0
    """Seconds from the start to the last event."""
    tests: str = ""
    cost: float = 0.0
    cost_known: bool = True
    last_growth: float = field(default_factory=time.time)
    verdict: str = ""
    """The results store's status and category, once the task is done."""
    problem: str = ""
    version: int = 0
    _offset: int = 0
    _size: int = 0

    def text(self) -> str:
        """Everything a filter matches against."""
        return " ".join(
            (self.key, self.repo, self.task, str(self.state), self.last_action, self.verdict)
        ).casefold()


def _created(value: Any) -> float | None:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Fleet:
    """The sessions recorded under `folder` (and the verdicts in `results`, when given)."""

    def __init__(
        self, folder: Path, *, results: Path | None = None, stuck_after: float = 60.0
    ) -> None:
        self.folder = folder
        self.results = results
        self.stuck_after = stuck_after
        self.rows: dict[str, SessionRow] = {}
        self._results_offset = 0

    def poll(self, now: float | None = None) -> list[SessionRow]:
        """Read what was appended since the last poll; the rows that changed."""
        now = time.time() if now is None else now
        changed: dict[str, SessionRow] = {}
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            entries = []
        for entry in entries:
            if not entry.name.endswith(".jsonl") or not entry.is_file():
                continue
            key = entry.name[: -len(".jsonl")]
            row = self.rows.get(key)
            if row is None:
                row = self.rows[key] = SessionRow(key, Path(entry.path), last_growth=now)
                changed[key] = row
            try:
                size = entry.stat().st_size
            except OSError:
                continue
            if size > row._size:
                row._size = size
                row.last_growth = now
                if self._read(row):
                    changed[key] = row
        for row in self._read_results():
            changed[row.key] = row
        # A paused session waits for a person: quiet, but not stuck.
        live = (SessionState.STARTING, SessionState.RUNNING, SessionState.STUCK)
        for row in self.rows.values():
            if row.state not in live:
                continue
            if now - row.last_growth >= self.stuck_after:
                state = SessionState.STUCK
            elif row.state == SessionState.STUCK:
                state = SessionState.RUNNING
            else:
                continue
            if state != row.state:
                row.state = state
                changed[row.key] = row
        for row in changed.values():
            row.version += 1
        return list(changed.values())

    def _read(self, row: SessionRow) -> bool:
        assert row.path is not None
        try:
            with row.path.open("rb") as handle:
                handle.seek(row._offset)
                data = handle.read(_READ_LIMIT)
        except OSError as exc:
            row.problem = f"cannot read: {exc.strerror}"
            return True
        end = data.rfind(b"\n")
        if end < 0:
            return False  # a line still being written: next poll
        row._offset += end + 1
        for line in data[: end + 1].splitlines():
            if line.strip():
                self._apply(row, line)
        return True

    def _apply(self, row: SessionRow, line: bytes) -> None:
        try:
            data = json.loads(line)
        except ValueError:
            row.problem = "a line is not JSON"
            return
        if not isinstance(data, dict):
            return
        if "schema" in data:
            if data.get("schema") != SCHEMA:
                row.problem = f"schema {data.get('schema')!r} is not one this version reads"
                return
            repo = data.get("repo") or {}
            agent = data.get("agent") or {}
            row.repo = Path(str(repo.get("source") or "")).name
            row.task = str(agent.get("task") or row.task)
            row.started = _created(data.get("created"))
            row.state = SessionState.RUNNING
            return
        try:
            event = Event.from_dict(data)
        except WireError:
            return
        row.elapsed = event.t
        payload = event.payload
        kind = str(event.kind)
        if kind in _ACTIONS:
            row.steps += 1
            row.last_action = describe_event(event)
        elif kind == "note" and payload.get("mark") == "agent.task" and not row.task:
            row.task = str(payload.get("text", ""))
        elif kind == "note" and payload.get("mark") == "agent.mode" and row.state in _LIVE:
            human = str(payload.get("text", "")).endswith(": human")
            row.state = SessionState.PAUSED if human else SessionState.RUNNING
        elif kind == "test.result":
            row.tests = describe_event(event).removeprefix("tests: ")
        elif kind == "llm.response":
            cost = payload.get("cost")
            if isinstance(cost, int | float):
                row.cost += float(cost)
            else:
                row.cost_known = False
        elif kind == "agent.finish":
            reason = payload.get("reason")
            row.last_action = f"finish: {payload.get('summary', '')}"
            if reason not in (None, "finished"):
                row.last_action = f"stopped ({reason})"
        elif kind == "session.end":
            finished = row.last_action.startswith("finish:")
            row.state = SessionState.FINISHED if finished else SessionState.ENDED
            if not finished:
                row.last_action = row.last_action or f"ended ({payload.get('reason')})"

    def _read_results(self) -> list[SessionRow]:
        if self.results is None:
            return []
        try:
            with self.results.open("rb") as handle:
                handle.seek(self._results_offset)
                data = handle.read()
        except OSError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self._results_offset += end + 1
        changed = []
        for line in data[: end + 1].splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict) or "key" not in record:
                continue
            result = record.get("result") or {}
            trajectory = record.get("trajectory") or result.get("trajectory")
            key = Path(trajectory).stem if trajectory else str(record["key"])
            row = self.rows.get(key)
            if row is None:
                path = self.folder / f"{key}.jsonl"
                row = self.rows[key] = SessionRow(key, path if path.exists() else None)
            status = str(record.get("status"))
            category = record.get("category")
            row.verdict = f"{status} ({category})" if category else status
            if not row.task:
                row.task = str(record["key"])
            row.state = SessionState.FINISHED if status == "ok" else SessionState.FAILED
            changed.append(row)
        return changed
