"""Walking a session's workspace the way a person sees it, for everything that walks one (the
file tree, quick-open, the code index, search, extraction, the Gym's tree summary): which
directories are never worth looking into, and which paths the .gitignore files hide. Paths are
workspace-relative POSIX paths. `local_files` is the same walk over a checkout on this machine,
for setup's detection and import scan, which read the repository before any session exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

# Re-exported for the UI, whose first frame lists a tree before simulator.session loads (issue 29).
from backends.base import BackendError as BackendError
from backends.base import DirEntry as DirEntry
from simulator.session_errors import SessionError

if TYPE_CHECKING:
    import pathspec

# Never shown or walked, whatever the .gitignore files say.
ALWAYS_HIDDEN = frozenset({".git"})

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        ".eggs",
    }
)
"""Directories that never hold the code being worked on: version control data, caches, virtual
environments, vendored packages. Searched and analysed code skips them (the tree still shows
them unless .gitignore hides them)."""

BUILD_DIRS = frozenset({"build", "dist"})
"""Build output: copies of the code, skipped by the code index on top of SKIP_DIRS."""


def skipped_dir(name: str, *, build_output: bool = False) -> bool:
    """Whether a directory called `name` is one of SKIP_DIRS (or *.egg-info), or with
    `build_output` also BUILD_DIRS."""
    return name in SKIP_DIRS or name.endswith(".egg-info") or (build_output and name in BUILD_DIRS)


def child_path(parent: str, name: str) -> str:
    return name if parent == "." else f"{parent}/{name}"


class IgnoreRules:
    """The .gitignore files found so far, each applying below its own directory."""

    def __init__(self) -> None:
        self._specs: dict[str, pathspec.GitIgnoreSpec] = {}

    def add(self, directory: str, text: str) -> None:
        """Take the .gitignore text found in `directory` ("." for the workspace root)."""
        # Imported on first use: every command imports this module (the session's search
        # skips SKIP_DIRS), few of them match .gitignore files; pathspec costs ~20 ms to load.
        import pathspec

        self._specs[directory] = pathspec.GitIgnoreSpec.from_lines(text.splitlines())

    def ignored(self, path: str, is_dir: bool) -> bool:
        if posixpath.basename(path) in ALWAYS_HIDDEN:
            return True
        for directory, spec in self._specs.items():
            if directory == ".":
                rel = path
            elif path.startswith(directory + "/"):
                rel = path[len(directory) + 1 :]
            else:
                continue
            if spec.match_file(rel + "/" if is_dir else rel):
                return True
        return False


class WorkspaceReader(Protocol):
    """What a walk reads through: a session's unrecorded listing and reading (simulator.session
    .Session is one)."""

    async def list_dir(self, path: str = ".") -> list[DirEntry]: ...

    async def read_bytes(self, path: str) -> bytes: ...


class WorkspaceWalk:
    """A gitignore-aware view of a session's workspace, read through the session (unrecorded).

    `entries(directory)` lists one directory as a person sees it (for a lazy tree); `files()`
    walks breadth first from the root and yields every visible file (quick-open, the code
    index). Each directory's .gitignore is read when the directory is listed, so rules apply
    below it from then on. `skip_dir(name)` prunes directories by name on top of .gitignore.
    """

    def __init__(
        self, session: WorkspaceReader, *, skip_dir: Callable[[str], bool] | None = None
    ) -> None:
        self.session = session
        self.rules = IgnoreRules()
        self._skip_dir = skip_dir

    async def entries(self, directory: str = ".") -> list[DirEntry]:
        """The visible entries of `directory`; SessionError / BackendError if it cannot be
        listed. An unreadable .gitignore hides nothing."""
        listed = await self.session.list_dir(directory)
        if any(e.name == ".gitignore" and e.kind == "file" for e in listed):
            try:
                data = await self.session.read_bytes(child_path(directory, ".gitignore"))
            except (SessionError, BackendError):
                pass
            else:
                self.rules.add(directory, data.decode("utf-8", "replace"))
        rules, skip = self.rules, self._skip_dir

        def keep() -> list[DirEntry]:
            return [
                e
                for e in listed
                if not (e.kind == "dir" and skip is not None and skip(e.name))
                and not rules.ignored(child_path(directory, e.name), e.kind == "dir")
            ]

        # Matching a big folder against many patterns takes a while: off the event loop.
        return await asyncio.to_thread(keep) if len(listed) > 256 else keep()

    async def paths(self, *, by_name: bool = False) -> AsyncGenerator[tuple[str, DirEntry], None]:
        """(path, entry) of every visible entry, directories included, breadth first (with
        `by_name`, each directory's entries in name order); a folder that cannot be listed
        hides its entries, it does not stop the walk."""
        queue = ["."]
        while queue:
            directory = queue.pop(0)
            try:
                entries = await self.entries(directory)
            except (SessionError, BackendError):
                continue
            if by_name:
                entries.sort(key=lambda e: e.name)
            for entry in entries:
                path = child_path(directory, entry.name)
                if entry.kind == "dir":
                    queue.append(path)
                yield path, entry
            await asyncio.sleep(0)  # a big workspace does not hold the event loop

    async def files(self) -> AsyncGenerator[tuple[str, DirEntry], None]:
        """(path, entry) of every visible entry that is not a directory (files, and symlinks and
        others by their own kind), breadth first; a folder that cannot be listed hides its
        files, it does not stop the walk."""
        async with contextlib.aclosing(self.paths()) as walk:
            async for path, entry in walk:
                if entry.kind != "dir":
                    yield path, entry


def local_files(root: Path) -> list[Path]:
    """Every file below `root` on this machine (a checkout being set up), depth first in name
    order: symlinks are neither followed nor listed, hidden folders, SKIP_DIRS and BUILD_DIRS
    are not entered, and a folder that cannot be read hides its files."""
    out: list[Path] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if not (entry.name.startswith(".") or skipped_dir(entry.name, build_output=True)):
                    stack.append(entry)
            else:
                out.append(entry)
    return out
