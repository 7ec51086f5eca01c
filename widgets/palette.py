"""Command palette providers: quick-open files (Ctrl+P) and every action by name."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from simulator.workspace import WorkspaceWalk

if TYPE_CHECKING:
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
    files: list[str] = []
    async with contextlib.aclosing(WorkspaceWalk(session).files()) as walk:
        async for path, _ in walk:
            files.append(path)
            if len(files) >= limit:
                break
    return files


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
