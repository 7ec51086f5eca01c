"""Fixtures for the editor and terminal tests: a real session on a real repository."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from simulator.session import Session
from tests.conftest import WAIT, RepoFactory, SessionOn
from widgets.code_editor import CodeEditor
from widgets.editor_pane import EditorPane
from widgets.terminal_pane import TerminalPane

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        '"""Core helpers."""\n\nimport os\n\n\n'
        "def add(a, b):\n    # the sum\n    return a + b\n\n\n"
        "class Greeter:\n    def hello(self, name: str) -> str:\n"
        '        return f"hello {name}"\n'
    ),
    "src/main.c": (
        "#include <stdio.h>\n\n/* entry point */\nint main(void) {\n"
        '    printf("%d\\n", 42);\n    return 0;\n}\n'
    ),
    "notes.md": "# Notes\n\nSome *text*.\n",
    "Makefile": "all:\n\techo ok\n",
}


@pytest.fixture
def project(make_repo: RepoFactory) -> Path:
    repo = make_repo(PROJECT, name="project")
    (repo / "logo.bin").write_bytes(bytes(range(256)) * 4)
    return repo


@pytest.fixture
async def session(project: Path, session_on: SessionOn) -> Session:
    return await session_on(project, "run.jsonl")


class PaneApp(App[None]):
    """The editor above the terminal, as the real app lays them out."""

    def __init__(
        self, session: Session, *, terminal: bool = True, scrollback: int = 10_000
    ) -> None:
        super().__init__()
        self.session = session
        self.with_terminal = terminal
        self.scrollback = scrollback
        self.opened: list[str] = []
        self.saved: list[str] = []

    def on_editor_pane_file_opened(self, message: EditorPane.FileOpened) -> None:
        self.opened.append(message.path)

    def on_editor_pane_file_saved(self, message: EditorPane.FileSaved) -> None:
        self.saved.append(message.path)

    def compose(self) -> ComposeResult:
        yield EditorPane(self.session, id="editor")
        if self.with_terminal:
            yield TerminalPane(self.session, scrollback=self.scrollback, id="terminal")


@asynccontextmanager
async def editing(
    session: Session, size: tuple[int, int] = (100, 30)
) -> AsyncIterator[tuple[PaneApp, Pilot[None], EditorPane]]:
    """The editor pane alone (no terminal) running headless at `size`."""
    app = PaneApp(session, terminal=False)
    async with app.run_test(size=size) as pilot:
        yield app, pilot, app.query_one(EditorPane)


async def wait_for(
    pilot: Pilot[None], condition: Callable[[], bool], timeout: float = WAIT
) -> None:
    """Let the app run until `condition` holds; fail with a clear message after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition was not met in time")
        await pilot.pause(0.02)
        await asyncio.sleep(0)


async def open_editor(pane: EditorPane, path: str, line: int | None = None) -> CodeEditor:
    """Open `path` in the pane (at `line`, if given): the editor that shows it."""
    await pane.open_file(path, line=line)
    editor = pane.current_editor
    assert editor is not None
    return editor
