"""Command palette providers: quick-open files (Ctrl+P) and every action by name."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from simulator.gitignore import IgnoreRules, child_path
from simulator.session import Session

FILE_LIMIT = 50_000
"""Quick-open indexes at most this many files (breadth first: shallow files come first)."""


@dataclass(frozen=True)
class PaletteAction:
    title: str
    help: str
    run: Callable[[], Any]


class PaletteHost(Protocol):
    """What the providers need from the app."""

    async def workspace_files(self) -> list[str]: ...

    def open_path(self, path: str, line: int | None = None) -> None: ...

    def palette_actions(self) -> list[PaletteAction]: ...


async def collect_files(session: Session, limit: int = FILE_LIMIT) -> list[str]:
    """The workspace's files, gitignore-aware, breadth first, through the session."""
    rules = IgnoreRules()
    files: list[str] = []
    queue = ["."]
    while queue and len(files) < limit:
        directory = queue.pop(0)
        try:
            entries = await session.list_dir(directory)
        except Exception:  # an unreadable directory is skipped, not fatal
            continue
        if any(e.name == ".gitignore" for e in entries):
            try:
                data = await session.read_bytes(child_path(directory, ".gitignore"))
                rules.add(directory, data.decode("utf-8", "replace"))
            except Exception:  # an unreadable .gitignore hides nothing
                pass
        for entry in entries:
            path = child_path(directory, entry.name)
            is_dir = entry.kind == "dir"
            if rules.ignored(path, is_dir):
                continue
            if is_dir:
                queue.append(path)
            else:
                files.append(path)
        await asyncio.sleep(0)
    return files[:limit]


class FileProvider(Provider):
    """Fuzzy-find a workspace file by path and open it."""

    async def startup(self) -> None:
        self.files = await cast(PaletteHost, self.app).workspace_files()

    async def search(self, query: str) -> Hits:
        host = cast(PaletteHost, self.app)
        matcher = self.matcher(query)
        for path in self.files:
            score = matcher.match(path)
            if score > 0:
                yield Hit(score, matcher.highlight(path), partial(host.open_path, path), text=path)

    async def discover(self) -> Hits:
        host = cast(PaletteHost, self.app)
        for path in self.files[:200]:
            yield DiscoveryHit(path, partial(host.open_path, path), text=path)


class ActionProvider(Provider):
    """Every app action by name (panels, tests, changes, search, themes, help, quit)."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action in cast(PaletteHost, self.app).palette_actions():
            score = matcher.match(action.title)
            if score > 0:
                yield Hit(score, matcher.highlight(action.title), action.run, help=action.help)

    async def discover(self) -> Hits:
        for action in cast(PaletteHost, self.app).palette_actions():
            yield DiscoveryHit(action.title, action.run, help=action.help)
