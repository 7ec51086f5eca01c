"""Full-text search across a folder of trajectories: commands, outputs, edits, test results and
model messages, in RepoSim's files and in the other tools' files RepoSim reads.

Each RepoSim file is searched with one scan over its mapped bytes (`EventSource.search`), so only
the events whose line holds the text are parsed; the hit is then confirmed on the event's decoded
text (a line can match inside an escape) and shown with the field and a snippet around it.
Outputs longer than a trajectory line keeps (16 KiB) are searched in their kept head and tail.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.trajectory import TrajectoryError, open_trajectory

TRAJECTORY_SUFFIXES = (".jsonl", ".traj", ".json", ".cast")


@dataclass(frozen=True)
class Hit:
    path: Path
    index: int
    """The event's position in its file (what the viewer's jump takes)."""
    seq: int
    actor: str
    kind: str
    field: str
    """Where in the payload the text is (`command`, `output`, `diff`, `messages[2].content`…)."""
    snippet: str


@dataclass(frozen=True)
class Unreadable:
    path: Path
    reason: str


def trajectory_files(folder: Path) -> list[Path]:
    """The trajectory files under `folder` (recursively), blob folders left out, sorted."""
    return sorted(
        path
        for path in folder.rglob("*")
        if path.suffix in TRAJECTORY_SUFFIXES
        and path.is_file()
        and not any(part.endswith(".blobs") for part in path.parent.parts)
    )


def _texts(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in ("blobs", "raw"):
                continue
            yield from _texts(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from _texts(item, f"{where}[{number}]")


def _snippet(text: str, at: int, length: int, width: int = 100) -> str:
    start = max(0, at - (width - length) // 2)
    piece = " ".join(text[start : start + width].split())
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def search_file(path: Path, text: str) -> Iterator[Hit]:
    """Every event of one trajectory whose text holds `text` (case-insensitive), in order;
    TrajectoryError if the file cannot be opened."""
    needle = text.casefold()
    with open_trajectory(path) as source:
        index = source.search(text, 0)
        while index is not None:
            event = source.event(index)
            for where, value in _texts(event.payload, ""):
                at = value.casefold().find(needle)
                if at >= 0:
                    yield Hit(
                        path,
                        index,
                        event.seq,
                        str(event.actor),
                        str(event.kind),
                        where,
                        _snippet(value, at, len(text)),
                    )
                    break
            if index + 1 >= len(source):
                break
            index = source.search(text, index + 1)


def search_folder(folder: Path, text: str) -> Iterator[Hit | Unreadable]:
    """Hits in every trajectory under `folder`; a file that cannot be read is reported, never
    fatal to the search."""
    for path in trajectory_files(folder):
        try:
            yield from search_file(path, text)
        except TrajectoryError as exc:
            yield Unreadable(path, str(exc))
