"""A `CodeIndex` of a session's workspace, read through the session so it works on any backend.

The editor's outline, go to definition and callers/callees come from this index. Files are
listed with `session.list_dir` (honouring every `.gitignore` on the way down, skipping vendored
and build folders and files over `MAX_FILE_BYTES`) and read with `session.read_bytes`, which is
not recorded: indexing is the tool looking, not the person or the agent reading, so it must not
flood the trajectory with one `file.read` per file.

`CodeIndex` is not thread-safe; `WorkspaceIndex` runs every build, refresh and query one at a
time (an asyncio lock) off the event loop (worker processes or a worker thread), so callers
on the event loop never block on parsing.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

from simulator.analysis.index import CallRef, CodeIndex
from simulator.analysis.index_build import extract_records, thaw
from simulator.analysis.languages import lang_of
from simulator.analysis.model import FunctionRecord, Lang
from simulator.session import BackendError, Session, SessionError
from simulator.workspace import WorkspaceWalk, skipped_dir

MAX_FILE_BYTES = 1_000_000
READ_CONCURRENCY = 4

T = TypeVar("T")


def _skipped_dir(name: str) -> bool:
    """Vendored code, environments and build output: never the code being worked on."""
    return skipped_dir(name, build_output=True)


async def list_sources(
    session: Session,
    langs: Collection[Lang] = (Lang.PYTHON, Lang.C),
    *,
    max_bytes: int = MAX_FILE_BYTES,
) -> list[str]:
    """The workspace's Python/C files (sorted relative paths) worth indexing, unrecorded."""
    found: list[str] = []
    async for path, entry in WorkspaceWalk(session, skip_dir=_skipped_dir).files():
        lang = lang_of(entry.name)
        if entry.kind != "file" or lang is None or lang not in langs or entry.size > max_bytes:
            continue
        found.append(path)
    found.sort()
    return found


async def read_sources(session: Session, paths: list[str]) -> dict[str, bytes]:
    """{path: bytes} for the paths that can still be read (unrecorded reads)."""
    gate = asyncio.Semaphore(READ_CONCURRENCY)
    texts: dict[str, bytes] = {}

    async def read(path: str) -> None:
        async with gate:
            # A file that vanished since it was listed is simply not indexed.
            with contextlib.suppress(SessionError, BackendError):
                texts[path] = await session.read_bytes(path)

    await asyncio.gather(*(read(path) for path in paths))
    return {path: texts[path] for path in paths if path in texts}


async def build_index(
    session: Session, langs: Collection[Lang] = (Lang.PYTHON, Lang.C)
) -> CodeIndex:
    """Index the session's workspace; the parsing runs in a worker thread."""
    paths = await list_sources(session, langs)
    texts = await read_sources(session, paths)
    return await extract_texts(texts)


async def extract_texts(texts: dict[str, bytes], *, parallel: bool | None = None) -> CodeIndex:
    """The index of `texts`, extracted off the event loop (in worker processes for a big
    workspace; see `index_build`): the same index as `CodeIndex.from_texts(texts)`."""
    return CodeIndex(await extract_records(texts, parallel=parallel))


def indexable(path: str) -> bool:
    """Whether a workspace path is one the index would hold (by name; size is checked on read)."""
    if lang_of(path) is None:
        return False
    folders = posixpath.dirname(path).split("/")
    return not any(_skipped_dir(part) for part in folders if part)


async def _read_changed(session: Session, path: str) -> bytes | None:
    """The new bytes of a changed file, or None when it is gone or too big to index."""
    try:
        data = await session.read_bytes(path)
    except (SessionError, BackendError):
        return None  # deleted or moved away
    return data if len(data) <= MAX_FILE_BYTES else None


def _apply(index: CodeIndex, path: str, data: bytes | None) -> bool:
    if data is None:
        present = path in index.files
        index.remove(path)
        return present
    index.update(path, data)
    return True


async def refresh(session: Session, index: CodeIndex, path: str) -> bool:
    """Bring one changed, created or deleted file up to date; True if the index changed.

    Re-extracts on the calling thread; the UI uses `WorkspaceIndex.refresh`, which does not.
    """
    path = Session.normalize(path)
    if not indexable(path):
        return False
    return _apply(index, path, await _read_changed(session, path))


class WorkspaceIndex:
    """The session's code index, built once in the background and kept current file by file."""

    def __init__(self, session: Session, langs: Collection[Lang] = (Lang.PYTHON, Lang.C)) -> None:
        self.session = session
        self.langs = tuple(langs)
        self._index: CodeIndex | None = None
        self._lock = asyncio.Lock()
        self.error: str | None = None

    def close(self) -> None:
        """Forget the index and let the collector have what its build froze (see `thaw`)."""
        self._index = None
        thaw()

    @property
    def ready(self) -> bool:
        return self._index is not None

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def build(self) -> CodeIndex:
        async with self._lock:
            try:
                self._index = await build_index(self.session, self.langs)
            except (SessionError, BackendError) as error:
                self.error = str(error) or "The workspace could not be indexed."
                raise
            self.error = None
            return self._index

    async def refresh(self, path: str) -> bool:
        """Re-read one file; a no-op until the index has been built (the build will see it)."""
        async with self._lock:
            index = self._index
            if index is None:
                return False
            path = Session.normalize(path)
            if not indexable(path):
                return False
            data = await _read_changed(self.session, path)
            return await asyncio.to_thread(_apply, index, path, data)

    async def resync(self) -> list[str]:
        """List and read the workspace again and re-extract only what changed (after a command
        that may have touched any file); returns the paths added, changed or removed."""
        async with self._lock:
            index = self._index
            if index is None:
                return []
            paths = await list_sources(self.session, self.langs)
            texts = await read_sources(self.session, paths)

            def apply() -> list[str]:
                changed = []
                for path in sorted(set(index.files) - set(texts)):
                    index.remove(path)
                    changed.append(path)
                for path, data in texts.items():
                    record = index.files.get(path)
                    if record is None or record.source != data:
                        index.update(path, data)
                        changed.append(path)
                return sorted(changed)

            return await asyncio.to_thread(apply)

    async def update_text(self, path: str, text: str) -> None:
        """Index the text an editor shows (unsaved edits), so positions in it resolve."""
        async with self._lock:
            if self._index is not None and lang_of(path) is not None:
                await asyncio.to_thread(self._index.update, Session.normalize(path), text)

    async def query(self, ask: Callable[[CodeIndex], T]) -> T:
        """Run `ask(index)` in a worker thread, alone; raises LookupError before the build."""
        async with self._lock:
            if self._index is None:
                raise LookupError("The code index has not been built yet.")
            return await asyncio.to_thread(ask, self._index)


@dataclass(frozen=True, slots=True)
class CallHierarchy:
    """The function a call hierarchy is about, who calls it and what it calls."""

    function: FunctionRecord
    callers: list[CallRef]
    callees: list[CallRef]


def call_hierarchy(index: CodeIndex, path: str, line: int, col: int) -> CallHierarchy | None:
    """Callers and callees of the function named at line (1-based), col (0-based, bytes) — a
    call or a definition — or else of the function the position is in; None outside any."""
    function: FunctionRecord | None = None
    location = index.definition_at(path, line, col)
    if location is not None and location.kind in ("function", "method"):
        found = index.find(location.name, location.path)
        function = found[0] if found else None
    if function is None:
        inside = [
            fn
            for fn in index.functions()
            if fn.path == path and fn.start_line <= line <= fn.end_line
        ]
        function = max(inside, key=lambda fn: fn.start_byte, default=None)
    if function is None:
        return None
    return CallHierarchy(function, index.callers(function.id), index.callees(function.id))
