"""Trajectory files, schema `reposim.trajectory/1` (see docs/trajectory.md).

JSONL: a header line, then one event a line, each flushed as written so that a killed process
loses at most the line in flight. A string in a payload longer than `BLOB_THRESHOLD` characters is
kept whole in `<file>.blobs/<sha256>` and shortened in the line to its head and tail with a note;
`payload["blobs"][field]` names the blob.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from simulator.events import Event

SCHEMA = "reposim.trajectory/1"
BLOB_THRESHOLD = 16 * 1024
_KEEP = 4 * 1024


class TrajectoryError(Exception):
    """A trajectory that cannot be read; the message is one clear sentence."""


def sha256_text(data: str | bytes) -> str:
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def blob_dir(path: Path) -> Path:
    return path.with_name(path.name + ".blobs")


class TrajectoryWriter:
    """Appends a header and then events to a JSONL file, one flushed line at a time."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("w", encoding="utf-8")
        self._write_line({"schema": SCHEMA, **header})

    def write(self, event: Event) -> None:
        data = event.as_dict()
        data["payload"] = self._shorten(data["payload"])
        self._write_line(data)

    def _write_line(self, data: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()

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
        raw = text.encode("utf-8", "surrogateescape")
        digest = hashlib.sha256(raw).hexdigest()
        directory = blob_dir(self.path)
        directory.mkdir(exist_ok=True)
        target = directory / digest
        if not target.exists():
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(raw)
            tmp.replace(target)
        return digest

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class Trajectory:
    path: Path
    header: dict[str, Any]
    events: list[Event] = field(default_factory=list)
    problem: str | None = None
    """Why reading stopped before the end of the file (a corrupt or truncated line), if it did."""

    def load_blob(self, event: Event, key: str) -> str:
        """The whole text of a payload field that was shortened in the line."""
        digest: str | None = (event.payload.get("blobs") or {}).get(key)
        if digest is None:
            value = event.payload.get(key)
            return str(value) if isinstance(value, str) else ""
        blob = blob_dir(self.path) / digest
        try:
            return blob.read_bytes().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            raise TrajectoryError(
                f"Blob {digest} of step {event.seq} is missing from {blob.parent}."
            ) from None


def check_header(header: Any, where: str) -> dict[str, Any]:
    if not isinstance(header, dict) or "schema" not in header:
        raise TrajectoryError(
            f"{where} is not a RepoSim trajectory (its first line has no schema)."
        )
    schema = header["schema"]
    if schema != SCHEMA:
        if isinstance(schema, str) and schema.startswith("reposim.trajectory/"):
            raise TrajectoryError(
                f"{where} uses schema {schema}; this version of RepoSim reads {SCHEMA} only."
            )
        raise TrajectoryError(f"{where} has schema {schema!r}, not {SCHEMA}.")
    return header


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        handle = path.open("r", encoding="utf-8", errors="strict", newline="\n")
    except FileNotFoundError:
        raise TrajectoryError(f"{path} does not exist.") from None
    except IsADirectoryError:
        raise TrajectoryError(f"{path} is a directory, not a trajectory file.") from None
    except PermissionError:
        raise TrajectoryError(f"{path} is not readable (permission denied).") from None
    with handle:
        number = 0
        try:
            for number, line in enumerate(handle, start=1):
                yield number, line
        except UnicodeDecodeError:
            raise TrajectoryError(f"{path}: line {number + 1} is not UTF-8 text.") from None


def read_trajectory(path: Path | str) -> Trajectory:
    """Read a trajectory; a corrupt or truncated line ends it, and `problem` says where."""
    path = Path(path)
    lines = iter_lines(path)
    header: dict[str, Any] | None = None
    trajectory: Trajectory | None = None
    try:
        for number, line in lines:
            if header is None:
                try:
                    header = check_header(json.loads(line), str(path))
                except json.JSONDecodeError:
                    raise TrajectoryError(
                        f"{path} is not a RepoSim trajectory (line 1 is not JSON)."
                    ) from None
                trajectory = Trajectory(path=path, header=header)
                continue
            assert trajectory is not None
            if not line.endswith("\n"):
                trajectory.problem = f"line {number} is incomplete (the writer was cut off)."
                break
            if not line.strip():
                continue
            try:
                trajectory.events.append(Event.from_dict(json.loads(line)))
            except (json.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
                trajectory.problem = f"line {number} is corrupt ({_describe(exc)})."
                break
    except TrajectoryError as exc:
        if trajectory is None:
            raise
        trajectory.problem = str(exc)
    if trajectory is None:
        raise TrajectoryError(f"{path} is empty.")
    return trajectory


def _describe(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at column {exc.colno}"
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)
