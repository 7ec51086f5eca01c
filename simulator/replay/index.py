"""Opening trajectories of any size without parsing them: the Toolong approach.

A native trajectory is indexed by the byte offset of each line (one pass over an mmap, no JSON
parsing), and events are parsed only when asked for, through a small LRU cache. Memory grows with
the number of lines (8 bytes each), not with the file's size. Other tools' files (SWE-agent,
mini-swe-agent, OpenAI chat JSONL, asciicast) are small: they are converted whole, in memory, into
the same events.
"""

from __future__ import annotations

import bisect
import json
import mmap
import re
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from simulator.events import Event
from simulator.trajectory import SCHEMA, TrajectoryError, blob_dir, check_header

# The writer puts seq, t, actor and kind first, in that order; this reads actor and kind without
# parsing the line (lines written by other means fall back to a full parse).
_META = re.compile(rb'\{"seq":(\d+),"t":[^,]*,"actor":"([a-z]+)","kind":"([^"\\]+)"')


class EventSource(Protocol):
    """What the replay view, re-execution and export read: a header and numbered events."""

    path: Path
    header: dict[str, Any]

    @property
    def problem(self) -> str | None:
        """Why the readable events stop before the end of the file, if they do."""

    def __len__(self) -> int: ...

    def event(self, index: int) -> Event:
        """The event at `index` (0-based); TrajectoryError names the line if it is corrupt."""

    def events(self) -> Iterator[Event]:
        """Every readable event in order, stopping quietly at the first corrupt line."""

    def load_blob(self, event: Event, key: str) -> str:
        """The whole text of a payload field that the writer shortened."""

    def meta(self, index: int) -> tuple[str, str]:
        """(actor, kind) of an event, as cheaply as the source can tell."""

    def search(self, text: str, start: int = 0, *, backward: bool = False) -> int | None:
        """The next event from `start` (inclusive) whose text contains `text`, any case."""

    def close(self) -> None: ...


class TrajectoryIndex:
    """A native reposim.trajectory/1 file, indexed by line offsets and parsed lazily."""

    def __init__(self, path: Path | str, *, cache_size: int = 2048, lazy: bool = False) -> None:
        self.path = Path(path)
        self._cache: OrderedDict[int, Event] = OrderedDict()
        self._cache_size = cache_size
        self._problem: str | None = None
        try:
            self._file = self.path.open("rb")
        except FileNotFoundError:
            raise TrajectoryError(f"{self.path} does not exist.") from None
        except IsADirectoryError:
            raise TrajectoryError(f"{self.path} is a directory, not a trajectory file.") from None
        except PermissionError:
            raise TrajectoryError(f"{self.path} is not readable (permission denied).") from None
        size = self.path.stat().st_size
        if size == 0:
            self._file.close()
            raise TrajectoryError(f"{self.path} is empty.")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        end = self._map.find(b"\n")
        first = self._map[: end if end != -1 else size]
        try:
            header = json.loads(first)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.close()
            raise TrajectoryError(
                f"{self.path} is not a RepoSim trajectory (line 1 is not JSON)."
            ) from None
        try:
            self.header: dict[str, Any] = check_header(header, str(self.path))
        except TrajectoryError:
            self.close()
            raise
        self._starts = array("q")
        self._lines = array("l")  # the 1-based line number of each event, for messages
        self._size = size
        self._number = 1
        self._pos = size
        if end == -1:
            self._problem = "line 1 is incomplete (the writer was cut off)."
        else:
            self._pos = end + 1
            if not lazy:
                self.scan()

    @property
    def scanned(self) -> bool:
        """Whether every line has been indexed (see `scan`)."""
        return self._pos >= self._size

    def scan(self, budget: int | None = None) -> bool:
        """Index the next `budget` bytes of lines (all of them by default); True when done.

        A viewer indexes a first chunk, shows it, and goes on in a thread while the user reads;
        `len()` grows as lines are found."""
        find = self._map.find
        starts, lines = self._starts, self._lines
        pos, number, size = self._pos, self._number, self._size
        stop = size if budget is None else min(size, pos + budget)
        while pos < stop:
            number += 1
            nl = find(b"\n", pos)
            if nl == -1:
                self._problem = f"line {number} is incomplete (the writer was cut off)."
                pos = size
                break
            if nl > pos and not self._map[pos:nl].isspace():
                starts.append(pos)
                lines.append(number)
            pos = nl + 1
        self._pos, self._number = pos, number
        return pos >= size

    # -- reading ---------------------------------------------------------------------------

    @property
    def problem(self) -> str | None:
        return self._problem

    def __len__(self) -> int:
        return len(self._starts)

    def line_number(self, index: int) -> int:
        return int(self._lines[index])

    def raw(self, index: int) -> bytes:
        start = self._starts[index]
        end = self._map.find(b"\n", start)
        return self._map[start:end]

    def event(self, index: int) -> Event:
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        if not 0 <= index < len(self._starts):
            raise IndexError(index)
        event = self._parse(index)
        self._cache[index] = event
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return event

    def _parse(self, index: int) -> Event:
        try:
            data = json.loads(self.raw(index))
            if not isinstance(data, dict):
                raise TypeError("not an object")
            return Event.from_dict(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = (
                f"not JSON: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
            )
        except KeyError as exc:
            reason = f"missing field {exc.args[0]!r}"
        except (ValueError, TypeError, AttributeError) as exc:
            reason = str(exc)
        raise TrajectoryError(f"{self.path}: line {self.line_number(index)} is corrupt ({reason}).")

    def events(self) -> Iterator[Event]:
        for index in range(len(self)):
            try:
                yield self.event(index)
            except TrajectoryError:
                return

    def validate(self) -> int:
        """Parse every line; a corrupt one ends the readable prefix (and sets `problem`).
        Returns the number of readable events."""
        for index in range(len(self)):
            try:
                self._parse(index)
            except TrajectoryError as exc:
                message = str(exc)
                self._problem = message.split(": ", 1)[1] if ": line " in message else message
                del self._starts[index:]
                del self._lines[index:]
                break
        return len(self)

    def meta(self, index: int) -> tuple[str, str]:
        """(actor, kind) of an event, read from the raw line without parsing it if possible."""
        match = _META.match(self._map, self._starts[index])
        if match is not None:
            return match.group(2).decode(), match.group(3).decode("utf-8", "replace")
        try:
            event = self.event(index)
        except TrajectoryError:
            return "system", "corrupt"
        return str(event.actor), event.kind

    def search(self, text: str, start: int = 0, *, backward: bool = False) -> int | None:
        """The index of the next event (from `start`, inclusive) whose line contains `text`
        (case-insensitive), found with one regex scan over the mapped file."""
        if not text or not len(self):
            return None
        pattern = _caseless(json.dumps(text, ensure_ascii=False)[1:-1])
        start = max(0, min(start, len(self) - 1))
        if not backward:
            match = pattern.search(self._map, self._starts[start], self._pos)
            if match is None:
                return None
            return bisect.bisect_right(self._starts, match.start()) - 1
        limit = self._map.find(b"\n", self._starts[start])
        found = None
        for match in pattern.finditer(self._map, self._starts[0], limit):
            found = match.start()
        return None if found is None else bisect.bisect_right(self._starts, found) - 1

    def load_blob(self, event: Event, key: str) -> str:
        return load_blob(self.path, event, key)

    def close(self) -> None:
        if getattr(self, "_map", None) is not None:
            self._map.close()
        self._file.close()

    def __enter__(self) -> TrajectoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MemoryTrajectory:
    """Events held in memory: an imported file of another tool, or a generated trajectory."""

    def __init__(
        self,
        path: Path,
        header: dict[str, Any],
        events: list[Event],
        problem: str | None = None,
    ) -> None:
        self.path = path
        self.header = header
        self._events = events
        self._problem = problem

    @property
    def problem(self) -> str | None:
        return self._problem

    def __len__(self) -> int:
        return len(self._events)

    def event(self, index: int) -> Event:
        return self._events[index]

    def events(self) -> Iterator[Event]:
        return iter(self._events)

    def meta(self, index: int) -> tuple[str, str]:
        event = self._events[index]
        return str(event.actor), event.kind

    def search(self, text: str, start: int = 0, *, backward: bool = False) -> int | None:
        if not text or not self._events:
            return None
        needle = text.lower()
        start = max(0, min(start, len(self._events) - 1))
        order = range(start, -1, -1) if backward else range(start, len(self._events))
        for index in order:
            line = json.dumps(self._events[index].as_dict(), ensure_ascii=False).lower()
            if needle in line:
                return index
        return None

    def load_blob(self, event: Event, key: str) -> str:
        return load_blob(self.path, event, key)

    def close(self) -> None:
        return None


def _caseless(needle: str) -> re.Pattern[bytes]:
    """A bytes pattern matching `needle` in any case, non-ASCII letters included (the file is
    searched as UTF-8 bytes, where re's IGNORECASE folds ASCII only)."""
    parts = []
    for char in needle:
        variants = sorted({char.encode(), char.lower().encode(), char.upper().encode()})
        escaped = [re.escape(v) for v in variants]
        parts.append(escaped[0] if len(escaped) == 1 else b"(?:" + b"|".join(escaped) + b")")
    return re.compile(b"".join(parts))


def load_blob(path: Path, event: Event, key: str) -> str:
    digest = (event.payload.get("blobs") or {}).get(key)
    if not isinstance(digest, str):
        value = event.payload.get(key)
        return value if isinstance(value, str) else ""
    blob = blob_dir(path) / digest
    try:
        return blob.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        raise TrajectoryError(
            f"Blob {digest} of step {event.seq} is missing from {blob.parent}."
        ) from None


def is_native(path: Path) -> bool:
    """Whether the file's first line is a JSON object with a `schema` key (ours or a future one)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
    except OSError:
        return False
    try:
        data = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return first.lstrip().startswith(b'{"schema"')
    return isinstance(data, dict) and "schema" in data


def open_trajectory(path: Path | str, *, lazy: bool = False) -> TrajectoryIndex | MemoryTrajectory:
    """Open a trajectory of RepoSim or of another tool, whichever `path` holds (with lazy, a
    RepoSim file is indexed only as far as `scan` is asked to)."""
    path = Path(path)
    if not path.exists():
        raise TrajectoryError(f"{path} does not exist.")
    if path.is_dir():
        raise TrajectoryError(f"{path} is a directory, not a trajectory file.")
    if is_native(path):
        return TrajectoryIndex(path, lazy=lazy)
    from simulator.interop import load_foreign

    header, events = load_foreign(path)
    return MemoryTrajectory(path, header, events)


__all__ = [
    "SCHEMA",
    "EventSource",
    "MemoryTrajectory",
    "TrajectoryIndex",
    "is_native",
    "load_blob",
    "open_trajectory",
]
