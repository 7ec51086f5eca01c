"""Trajectory files, schema `reposim.trajectory/1` (see docs/trajectory.md): the header type, the
writer, and the one reader every command uses.

JSONL: a header line, then one event a line, each flushed as written so that a killed process
loses at most the line in flight. A string in a payload longer than `BLOB_THRESHOLD` characters is
kept whole in `<file>.blobs/<sha256>.gz` (gzip; files before 0.x wrote `<sha256>`, plain, which
readers still take, and so does a recording killed before it compressed a blob: the plain bytes
are written before the line that names them) and shortened in the line to its head and tail
with a note;
`payload["blobs"][field]` names the blob. A string that is not UTF-8 (a file name made of other
bytes) is written readable, with its exact bytes in `payload["raw"][field]` (base64).

Reading: `open_trajectory` opens RepoSim's files lazily (line offsets from one pass over an mmap,
events parsed when asked for, through a small LRU cache: the Toolong approach) and other tools'
files (SWE-agent, mini-swe-agent, OpenAI chat JSONL, asciicast) converted in memory into the same
events. Everything read from a file is untrusted: lines are parsed with a depth limit, headers
and payloads are checked against their types, blobs against their digests, and every problem is
one sentence that names the line.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import json
import mmap
import os
import re
import secrets
import stat
import threading
import zlib
from abc import ABC, abstractmethod
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, Self

from simulator.events import Event
from simulator.trajectory_header import (
    MAX_DEPTH,
    SCHEMA,
    AgentInfo,
    BackendInfo,
    ImportInfo,
    ParentInfo,
    RepoInfo,
    TrajectoryError,
    TrajectoryHeader,
    check_header,
    clip,
    json_depth,
    now_iso,
)
from simulator.wire import WireError

if TYPE_CHECKING:
    from simulator.provenance import ChainWriter

BLOB_THRESHOLD = 16 * 1024
_KEEP = 4 * 1024
_BOM = b"\xef\xbb\xbf"
_DIGEST = re.compile(r"[0-9a-f]{64}")


def sha256_text(data: str | bytes) -> str:
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def blob_dir(path: Path) -> Path:
    return path.with_name(path.name + ".blobs")


BLOB_SUFFIX = ".gz"
MAX_BLOB = (1 << 30) + (1 << 20)
"""The most a blob may hold once decompressed (a command's output cap, 1 GiB, and some): a
blob in someone else's file that inflates further is refused, not loaded."""


def blob_path(path: Path, digest: str) -> Path:
    """Where the writer keeps the blob `digest` of the trajectory `path` (gzip-compressed)."""
    return blob_dir(path) / f"{digest}{BLOB_SUFFIX}"


BLOB_LEVEL = 1
"""gzip level of blobs: level 1 compresses this project's terminal floods ~2.7x faster than
level 6 (32 vs 12 MB/s measured at load) to 17% of their size rather than 13%."""
_BLOBS_QUEUED = 64 * 1024 * 1024
"""Bytes of blobs waiting for compression before `write` waits for the oldest."""
_IN_FLIGHT: dict[Path, Future[None]] = {}
"""Blobs this process is still compressing: a reader in the same process waits for them."""
_IN_FLIGHT_LOCK = threading.Lock()


def _wait_in_flight(target: Path) -> None:
    with _IN_FLIGHT_LOCK:
        pending = _IN_FLIGHT.get(target)
    if pending is not None:
        pending.result()


BLOB_WRITERS = "blob-writers"
"""Private-state records of the writers that have blobs under way: `reposim gc` removes the
unfinished blob files of a writer whose process is gone (see `collect_unfinished_blobs`)."""
_TOKEN = re.compile(r"[0-9a-f]{16}")


def _unfinished_name(digest: str, token: str, suffix: str) -> str:
    """A blob's name while it is written: its digest, then the writer's token, which proves
    to gc whose file it is."""
    return f"{digest}.{token}{suffix}"


def _write_plain_blob(raw: bytes, plain: Path, token: str) -> None:
    """The blob's bytes as they are, under their digest (written whole, then renamed: a file
    named by a digest never holds part of it)."""
    part = plain.with_name(_unfinished_name(plain.name, token, ".part"))
    part.write_bytes(raw)
    part.replace(plain)


def _compress_blob(raw: bytes, target: Path, plain: Path, token: str) -> None:
    """Replace the plain blob by its compressed form (in the writer thread)."""
    try:
        tmp = target.with_name(_unfinished_name(plain.name, token, ".tmp"))
        tmp.write_bytes(gzip.compress(raw, compresslevel=BLOB_LEVEL, mtime=0))
        tmp.replace(target)
        plain.unlink(missing_ok=True)
    finally:
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.pop(target, None)


@dataclass(frozen=True)
class UnfinishedBlob:
    path: Path
    owner_pid: str
    size: int
    removed: bool


def collect_unfinished_blobs(*, dry_run: bool = False) -> list[UnfinishedBlob]:
    """Delete the blob files a writer killed mid-blob left under their temporary names
    (`<digest>.<token>.part` / `.tmp`): only in folders RepoSim's private state records for a
    writer whose process is gone, only names that carry that writer's token, only this user's
    regular files. Everything else there (finished blobs, other writers' files) stays."""
    from backends.private_state import owner_alive, read_records

    found = []
    for record_path, record in read_records(BLOB_WRITERS):
        if owner_alive(record):
            continue
        token = record.get("token")
        if isinstance(token, str) and _TOKEN.fullmatch(token):
            found += _remove_unfinished(
                Path(str(record.get("dir", ""))), token, str(record.get("pid", "")), dry_run
            )
        if not dry_run:
            record_path.unlink(missing_ok=True)
    return found


def _remove_unfinished(
    directory: Path, token: str, owner_pid: str, dry_run: bool
) -> list[UnfinishedBlob]:
    name = re.compile(rf"[0-9a-f]{{64}}\.{token}(?:\.part|\.tmp)")
    try:  # the folder itself, not a link put in its place: names are removed relative to it
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    found = []
    try:
        for entry in os.listdir(fd):  # noqa: PTH208 (a descriptor: no path to iterate)
            if not name.fullmatch(entry):
                continue
            try:
                info = os.lstat(entry, dir_fd=fd)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            removed = False
            if not dry_run:
                try:
                    os.unlink(entry, dir_fd=fd)
                    removed = True
                except OSError:
                    pass
            found.append(UnfinishedBlob(directory / entry, owner_pid, info.st_size, removed))
    finally:
        os.close(fd)
    return found


# -- the header --------------------------------------------------------------------------------


class TrajectoryWriter:
    """Appends a header and then events to a JSONL file, one flushed line at a time."""

    def __init__(self, path: Path, header: TrajectoryHeader) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] | None = path.open("wb")
        # Blobs are compressed in a thread (zlib releases the GIL): a terminal flood records a
        # blob every 50 ms, and compressing it on the caller's thread stalled the event loop.
        self._blob_writer: ThreadPoolExecutor | None = None
        self._blobs_queued: deque[tuple[Future[None], int]] = deque()
        self._token: str | None = None
        self._token_record: Path | None = None
        data = header.to_dict()
        data.pop("seal", None)
        if header.sealable:
            from simulator.provenance import seal

            try:
                json.dumps(data, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # sealed as it will be read back
                data = _replace_surrogates(data)
            header.seal = seal(data)
            if header.seal is not None:
                data["seal"] = header.seal
        self._write_line(data)
        self._chain: ChainWriter | None = None
        if header.seal is not None:
            from simulator.provenance import ChainWriter

            # Each event line's tag goes to the user's private state as the line is written,
            # so any prefix of this file checks out here and an edited line does not.
            self._chain = ChainWriter.start(header.seal, path)

    def write(self, event: Event) -> None:
        data = event.as_dict()
        data["payload"] = self._shorten(data["payload"])
        line = self._write_line(data)
        if line is not None and self._chain is not None:
            self._chain.add(line)

    def _write_line(self, data: dict[str, Any]) -> bytes | None:
        if self._file is None:
            return None
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        try:
            line = text.encode("utf-8")
        except UnicodeEncodeError:  # text that is not UTF-8 (see _keep_raw)
            if isinstance(data.get("payload"), dict):
                data = {**data, "payload": _keep_raw(data["payload"])}
            else:
                data = _replace_surrogates(data)
            line = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._file.write(line + b"\n")
        self._file.flush()
        return line

    def _shorten(self, payload: dict[str, Any]) -> dict[str, Any]:
        blobs: dict[str, str] = {}
        out: dict[str, Any] = {}
        # A field whose whole text is already a blob (a command's output, spooled while it
        # ran) is shown shortened and keeps its blob.
        kept = payload.get("blobs") or {}
        for key, value in payload.items():
            if isinstance(value, str) and len(value) > BLOB_THRESHOLD:
                digest = kept.get(key) or self._store_blob(value)
                blobs[key] = digest
                elided = len(value) - 2 * _KEEP
                out[key] = (
                    value[:_KEEP]
                    + f"\n[... {elided} characters elided;"
                    + f" whole text in blob sha256:{digest} ...]\n"
                    + value[-_KEEP:]
                )
            else:
                out[key] = value
        if blobs:
            out["blobs"] = {**out.get("blobs", {}), **blobs}
        return out

    def _store_blob(self, text: str) -> str:
        raw = _exact_bytes(text)
        digest = hashlib.sha256(raw).hexdigest()
        target = blob_path(self.path, digest)
        plain = blob_dir(self.path) / digest
        target.parent.mkdir(exist_ok=True)
        with _IN_FLIGHT_LOCK:
            if target in _IN_FLIGHT or target.exists():
                return digest
        # The bytes reach the file system here, before the line that names them is written:
        # a process killed while the blob waits for compression leaves it plain, which readers
        # take (a copy into the page cache; compressing is what stalled the caller).
        token = self._writer_token()
        _write_plain_blob(raw, plain, token)
        with _IN_FLIGHT_LOCK:
            if target in _IN_FLIGHT or target.exists():
                return digest
            if self._blob_writer is None:
                self._blob_writer = ThreadPoolExecutor(1, thread_name_prefix="blob-writer")
            future = self._blob_writer.submit(_compress_blob, raw, target, plain, token)
            _IN_FLIGHT[target] = future
        self._blobs_queued.append((future, len(raw)))
        self._settle_blobs(_BLOBS_QUEUED)
        return digest

    def _writer_token(self) -> str:
        """This writer's token, recorded with its process and blob folder in RepoSim's private
        state before its first unfinished blob file exists: a kill at any point leaves nothing
        `reposim gc` cannot find and prove to be this writer's."""
        if self._token is None:
            from backends.errors import BackendError
            from backends.private_state import me, private_dir, write_record

            self._token = token = secrets.token_hex(8)
            try:
                record = private_dir(BLOB_WRITERS) / f"{token}.json"
                directory = str(blob_dir(self.path).resolve())
                write_record(record, {"dir": directory, "token": token, **me()})
                self._token_record = record
            except (OSError, BackendError):  # no state dir: the recording goes on regardless
                pass  # (a kill then leaves files gc cannot prove to be this writer's)
        return self._token

    def _settle_blobs(self, most: int) -> None:
        """Wait for the oldest blobs until at most `most` bytes wait for compression; a blob
        that could not be written raises here (OSError), as it did when written in place."""
        queued = self._blobs_queued
        while queued and (queued[0][0].done() or sum(size for _, size in queued) > most):
            future, _ = queued.popleft()
            future.result()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._chain is not None:
            self._chain.close()
        if self._blob_writer is not None:
            self._blob_writer.shutdown(wait=True)
            self._blob_writer = None
            self._settle_blobs(0)
        if self._token_record is not None:
            self._token_record.unlink(missing_ok=True)
            self._token_record = None


def json_line(data: dict[str, Any]) -> str:
    """One JSON line as the trajectory writes it: text that is not UTF-8 in a payload kept
    exactly in `raw` (base64), elsewhere made readable; safe to print or write as UTF-8."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if _is_utf8(text):
        return text
    if isinstance(data.get("payload"), dict):
        data = {**data, "payload": _keep_raw(data["payload"])}
    return json.dumps(_replace_surrogates(data), ensure_ascii=False, separators=(",", ":"))


def readable(text: str) -> str:
    """Text with what is not UTF-8 (bytes held by surrogateescape) shown as U+FFFD: for formats
    that cannot hold bytes (other tools' files)."""
    return _replace_surrogates(text)  # type: ignore[no-any-return]


def _exact_bytes(text: str) -> bytes:
    """The bytes a str decoded with surrogateescape came from (lone surrogates of other origin
    kept as their code points)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _keep_raw(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload whose text fields that are not UTF-8 (names made of other bytes, decoded with
    surrogateescape) are written readable, U+FFFD for what is not text, and whole in
    `raw[field]` as base64 of their exact bytes; readers put the exact text back."""
    out: dict[str, Any] = {}
    raw: dict[str, str] = dict(payload.get("raw") or {})
    for key, value in payload.items():
        if key == "raw":
            continue
        if isinstance(value, str) and not _is_utf8(value):
            exact = _exact_bytes(value)
            out[key] = exact.decode("utf-8", "replace")
            raw[key] = base64.b64encode(exact).decode("ascii")
        else:
            out[key] = _replace_surrogates(value)
    if raw:
        out["raw"] = raw
    return out


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value if _is_utf8(value) else _exact_bytes(value).decode("utf-8", "replace")
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


# -- reading -----------------------------------------------------------------------------------


class _LineError(Exception):
    """A line that cannot be read: the reason, without the file and line (the caller adds them)."""


def parse_line(raw: bytes) -> Any:
    """The JSON value of one line, at most MAX_DEPTH deep; _LineError says why not."""
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        raise _LineError("is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _LineError(f"is corrupt (not JSON: {exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise _LineError(f"is corrupt (nested more than {MAX_DEPTH} levels deep)") from None
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and json_depth(value) > MAX_DEPTH:
        raise _LineError(f"is corrupt (nested more than {MAX_DEPTH} levels deep)")
    return value


def _event_of(raw: bytes) -> Event:
    data = parse_line(raw)
    try:
        return Event.from_dict(data)
    except WireError as exc:
        raise _LineError(f"is corrupt ({exc})") from None


class EventSource(Protocol):
    """What the replay view, re-execution, export and `trajectory show` read."""

    path: Path
    header: TrajectoryHeader

    @property
    def problem(self) -> str | None:
        """Why the readable events stop before the end of the file, if they do."""

    def __len__(self) -> int: ...

    def event(self, index: int) -> Event:
        """The event at `index` (0-based); TrajectoryError names the line if it is corrupt."""

    def events(self) -> Iterator[Event]:
        """Every readable event in order, stopping at the first unreadable line (which then
        becomes `problem`)."""

    def load_blob(self, event: Event, key: str) -> str:
        """The whole text of a payload field that the writer shortened."""

    def meta(self, index: int) -> tuple[str, str]:
        """(actor, kind) of an event, as cheaply as the source can tell."""

    def search(self, text: str, start: int = 0, *, backward: bool = False) -> int | None:
        """The next event from `start` (inclusive) whose text contains `text`, any case."""

    def close(self) -> None: ...

    def __enter__(self) -> EventSource: ...

    def __exit__(self, *exc: object) -> None: ...


# The writer puts seq, t, actor and kind first, in that order; this reads actor and kind without
# parsing the line (lines written by other means fall back to a full parse).
_META = re.compile(rb'\{"seq":(\d+),"t":[^,]*,"actor":"([a-z]+)","kind":"([^"\\]+)"')


def _open_error(path: Path, exc: OSError) -> TrajectoryError:
    if isinstance(exc, FileNotFoundError):
        return TrajectoryError(f"{path} does not exist.")
    if isinstance(exc, IsADirectoryError):
        return TrajectoryError(f"{path} is a directory, not a trajectory file.")
    if isinstance(exc, PermissionError):
        return TrajectoryError(f"{path} is not readable (permission denied).")
    return TrajectoryError(f"{path} cannot be read ({exc.strerror or exc}).")


class _Source(ABC):
    """What both event sources below share: the problem that ends their readable events (see
    EventSource.problem), and closing them at the end of a `with` block."""

    _problem: str | None = None

    @property
    def problem(self) -> str | None:
        return self._problem

    @abstractmethod
    def close(self) -> None:
        """Release what the source holds (each source says what)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TrajectoryIndex(_Source):
    """A native reposim.trajectory/1 file, indexed by line offsets and parsed lazily.

    Memory grows with the number of lines (8 bytes each), not with the file's size."""

    def __init__(self, path: Path | str, *, cache_size: int = 2048, lazy: bool = False) -> None:
        self.path = Path(path)
        self._cache: OrderedDict[int, Event] = OrderedDict()
        self._cache_size = cache_size
        self._problem: str | None = None
        self._map: mmap.mmap | None = None
        try:
            self._file = self.path.open("rb")
        except OSError as exc:
            raise _open_error(self.path, exc) from None
        size = os.fstat(self._file.fileno()).st_size
        if size == 0:
            self._file.close()
            raise TrajectoryError(f"{self.path} is empty.")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        end = self._map.find(b"\n")
        first = self._map[: end if end != -1 else size]
        try:
            try:
                data = parse_line(first.removeprefix(_BOM))
            except _LineError as exc:
                raise TrajectoryError(
                    f"{self.path} is not a RepoSim trajectory (line 1 {exc})."
                ) from None
            self.header: TrajectoryHeader = check_header(data, str(self.path))
        except TrajectoryError:
            self.close()
            raise
        self._starts = array("q")
        self._lines = array("l")  # the 1-based line number of each event, for messages
        self._size = size
        self._number = 1
        self._pos = size
        self._partial: tuple[int, int] | None = None
        """Where an incomplete last line starts (offset, line number): `grow` reads it again."""
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
        assert self._map is not None
        find = self._map.find
        starts, lines = self._starts, self._lines
        pos, number, size = self._pos, self._number, self._size
        stop = size if budget is None else min(size, pos + budget)
        while pos < stop:
            number += 1
            nl = find(b"\n", pos)
            if nl == -1:
                self._problem = f"line {number} is incomplete (the writer was cut off)."
                self._partial = (pos, number - 1)
                pos = size
                break
            if nl > pos and not self._map[pos:nl].isspace():
                starts.append(pos)
                lines.append(number)
            pos = nl + 1
        self._pos, self._number = pos, number
        return pos >= size

    def grow(self) -> bool:
        """Take in what a live session appended since the file was opened (or last grown), for
        a viewer that follows it; True when there is more to `scan`. A last line that was still
        being written is read again, whole."""
        size = os.fstat(self._file.fileno()).st_size
        if size <= self._size:
            return False
        if self._partial is not None:
            self._pos, self._number = self._partial
            self._partial = None
            self._problem = None
        # A new map for the longer file; a reader still holding the old one finishes with it
        # (it is closed when the last reference goes), so the view can read while this runs.
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        self._size = size
        return True

    def __len__(self) -> int:
        return len(self._starts)

    def line_number(self, index: int) -> int:
        return int(self._lines[index])

    def raw(self, index: int) -> bytes:
        assert self._map is not None
        start = self._starts[index]
        end = self._map.find(b"\n", start)
        return self._map[start:end]

    def checked_event(self, index: int, check: Callable[[bytes], bool]) -> tuple[Event, bool]:
        """The event at `index` parsed from the very bytes given to `check` (so the line cannot
        change between the two), and what `check` said of them; TrajectoryError names the line
        if it is corrupt (then `check` is not asked)."""
        raw = self.raw(index)
        try:
            event = _event_of(raw)
        except _LineError as exc:
            raise TrajectoryError(f"{self.path}: line {self.line_number(index)} {exc}.") from None
        return event, check(raw)

    def event(self, index: int) -> Event:
        cached = self._cache.get(index)
        if cached is not None:
            self._cache.move_to_end(index)
            return cached
        if not 0 <= index < len(self._starts):
            raise IndexError(index)
        try:
            event = _event_of(self.raw(index))
        except _LineError as exc:
            raise TrajectoryError(f"{self.path}: line {self.line_number(index)} {exc}.") from None
        self._cache[index] = event
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return event

    def events(self) -> Iterator[Event]:
        for index in range(len(self)):
            try:
                yield self.event(index)
            except TrajectoryError:
                self._stop_at(index)
                return

    def validate(self) -> int:
        """Parse every line; an unreadable one ends the readable prefix (and sets `problem`).
        Returns the number of readable events."""
        for index in range(len(self)):
            try:
                _event_of(self.raw(index))
            except _LineError:
                self._stop_at(index)
                break
        return len(self)

    def _stop_at(self, index: int) -> None:
        number = self.line_number(index)
        try:
            _event_of(self.raw(index))
            return
        except _LineError as exc:
            self._problem = f"line {number} {exc}."
        del self._starts[index:]
        del self._lines[index:]
        self._cache.clear()

    def meta(self, index: int) -> tuple[str, str]:
        """(actor, kind) of an event, read from the raw line without parsing it if possible."""
        assert self._map is not None
        match = _META.match(self._map, self._starts[index])
        if match is not None:
            return match.group(2).decode(), match.group(3).decode("utf-8", "replace")
        try:
            event = self.event(index)
        except TrajectoryError:
            return "system", "corrupt"
        return str(event.actor), str(event.kind)

    def search(self, text: str, start: int = 0, *, backward: bool = False) -> int | None:
        """The index of the next event (from `start`, inclusive) whose line contains `text`
        (case-insensitive), found with one regex scan over the mapped file."""
        if not text or not len(self):
            return None
        assert self._map is not None
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
        if self._map is not None:
            self._map.close()
            self._map = None
        self._file.close()


class MemoryTrajectory(_Source):
    """Events held in memory: an imported file of another tool, or a generated trajectory."""

    def __init__(
        self,
        path: Path,
        header: TrajectoryHeader,
        events: list[Event],
        problem: str | None = None,
    ) -> None:
        self.path = path
        self.header = header
        self._events = events
        self._problem = problem

    def __len__(self) -> int:
        return len(self._events)

    def event(self, index: int) -> Event:
        return self._events[index]

    def events(self) -> Iterator[Event]:
        return iter(self._events)

    def meta(self, index: int) -> tuple[str, str]:
        event = self._events[index]
        return str(event.actor), str(event.kind)

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
    """The whole text of a payload field the writer shortened, from `<path>.blobs/<sha256>`.

    The reference must be a sha256 digest (so it names a file in the blob directory and
    nowhere else), the blob a regular file (not a symlink), and its bytes must hash to it."""
    blobs = event.payload.get("blobs")
    digest = blobs.get(key) if isinstance(blobs, dict) else None
    if digest is None:
        value = event.payload.get(key)
        return value if isinstance(value, str) else ""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise TrajectoryError(
            f"Step {event.seq} refers to its {key} by {clip(repr(digest), 40)},"
            " which is not a sha256 digest."
        )
    data = blob_bytes(path, digest, f"Blob {digest} of step {event.seq}")
    return data.decode("utf-8", "surrogateescape")


def _open_blob(path: Path, digest: str, what: str) -> tuple[int, bool]:
    """A descriptor of blob `digest` and whether it is compressed (TrajectoryError if none)."""
    directory = blob_dir(path)
    # The plain blob is the writer's until it is compressed: a recording still going on (in
    # another process) may replace it by `.gz` between two looks, so `.gz` is looked at again.
    for name, compressed in (
        (blob_path(path, digest), True),
        (directory / digest, False),
        (blob_path(path, digest), True),
    ):
        try:
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), compressed
        except FileNotFoundError:
            continue
        except OSError:
            raise TrajectoryError(f"{what} is not a file in {directory}.") from None
    raise TrajectoryError(f"{what} is missing from {directory}.")


def blob_bytes(path: Path, digest: str, what: str | None = None) -> bytes:
    """The exact bytes of blob `digest` of trajectory `path`: `<digest>.gz` (decompressed, at
    most MAX_BLOB bytes), else an older file's plain `<digest>`. A regular file, not a symlink,
    whose bytes hash to the digest; TrajectoryError (one sentence) otherwise."""
    what = what or f"Blob {digest}"
    _wait_in_flight(blob_path(path, digest))
    fd, compressed = _open_blob(path, digest, what)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise TrajectoryError(f"{what} is not a regular file.")
        data = _inflate(handle, what) if compressed else handle.read()
    if hashlib.sha256(data).hexdigest() != digest:
        raise TrajectoryError(
            f"{what} does not match its digest (it was changed after it was written)."
        )
    return data


def _inflate(handle: IO[bytes], what: str) -> bytes:
    """A gzip stream's content, refusing more than MAX_BLOB bytes (a decompression bomb)."""
    inflater = zlib.decompressobj(wbits=31)
    out = bytearray()
    try:
        while chunk := handle.read(1 << 20):
            out += inflater.decompress(chunk, MAX_BLOB + 1 - len(out))
            if len(out) > MAX_BLOB or inflater.unconsumed_tail:
                raise TrajectoryError(f"{what} inflates to more than {MAX_BLOB} bytes.")
        out += inflater.flush()
    except zlib.error:
        raise TrajectoryError(
            f"{what} does not match its digest (it was changed after it was written)."
        ) from None
    return bytes(out)


def whole_event(source: EventSource, event: Event) -> Event:
    """`event` with every field the writer shortened put back whole from its blob (for export,
    which must give back what was recorded)."""
    blobs = event.payload.get("blobs")
    if not isinstance(blobs, dict) or not blobs:
        return event
    payload = {k: v for k, v in event.payload.items() if k != "blobs"}
    for key in blobs:
        payload[key] = source.load_blob(event, key)
    return Event(event.seq, event.t, event.actor, event.kind, payload, event.cause)


def is_native(path: Path) -> bool:
    """Whether the file's first line is a JSON object with a `schema` key (ours or a future one)."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20).removeprefix(_BOM)
    except OSError:
        return False
    try:
        data = parse_line(first)
    except _LineError:
        return first.lstrip().startswith(b'{"schema"')
    return isinstance(data, dict) and "schema" in data


def open_trajectory(path: Path | str, *, lazy: bool = False) -> TrajectoryIndex | MemoryTrajectory:
    """Open a trajectory of RepoSim or of another tool, whichever `path` holds (with lazy, a
    RepoSim file is indexed only as far as `scan` is asked to)."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise _open_error(path, exc) from None
    if stat.S_ISDIR(info.st_mode):
        raise TrajectoryError(f"{path} is a directory, not a trajectory file.")
    if is_native(path):
        return TrajectoryIndex(path, lazy=lazy)
    from simulator.interop import load_foreign

    header, events = load_foreign(path)
    return MemoryTrajectory(path, header, events)


@dataclass
class Trajectory:
    """A whole trajectory in memory: its header, every readable event, and why reading stopped
    early if it did."""

    path: Path
    header: TrajectoryHeader
    events: list[Event] = field(default_factory=list)
    problem: str | None = None

    def load_blob(self, event: Event, key: str) -> str:
        return load_blob(self.path, event, key)


def read_trajectory(path: Path | str) -> Trajectory:
    """Read a whole trajectory (RepoSim's or another tool's); an unreadable line ends it, and
    `problem` says which and why."""
    with open_trajectory(path) as source:
        events = list(source.events())
        return Trajectory(Path(path), source.header, events, source.problem)


# The header's names are re-exported: readers import everything of a trajectory from here.
__all__ = [
    "BLOB_SUFFIX",
    "BLOB_THRESHOLD",
    "MAX_BLOB",
    "MAX_DEPTH",
    "SCHEMA",
    "AgentInfo",
    "BackendInfo",
    "EventSource",
    "ImportInfo",
    "MemoryTrajectory",
    "ParentInfo",
    "RepoInfo",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryHeader",
    "TrajectoryIndex",
    "TrajectoryWriter",
    "blob_bytes",
    "blob_dir",
    "blob_path",
    "check_header",
    "is_native",
    "json_depth",
    "json_line",
    "load_blob",
    "now_iso",
    "open_trajectory",
    "parse_line",
    "read_trajectory",
    "readable",
    "sha256_text",
    "whole_event",
]
