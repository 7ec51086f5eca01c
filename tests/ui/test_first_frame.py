"""The first frame comes first: the tree and the editor are drawn before the bottom panel and
the agent pane are mounted (issue 29, item 2)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.app import App
from textual.color import Color
from textual.widgets import Input

from simulator.events import Event
from simulator.session import Session
from tests.conftest import SessionOn
from tests.ui.helpers import wait_for
from themes import DEFAULT_THEME
from widgets.agent_pane import AgentPane
from widgets.app import Opening, RepoSimApp
from widgets.editor_pane import EditorPane
from widgets.file_tree import FileTree
from widgets.status_bar import StatusBar


class Watched(RepoSimApp):
    """Notes what was mounted, and what the screen showed, at each of the first frames."""

    def __init__(self, session: Session | Opening) -> None:
        super().__init__(session)
        self.frames: list[dict[str, Any]] = []

    def _watch_frame(self) -> None:
        if len(self.frames) < 3:
            self.frames.append(
                {
                    "tree": bool(self.query(FileTree)),
                    "editor": bool(self.query(EditorPane)),
                    "agent": bool(self.query(AgentPane)),
                    "panel": bool(self.query("#panel")),
                    "editor parts": [w.id for w in self.query("EditorPane *")],
                    "text": self.export_screenshot(),
                }
            )
            self.call_after_refresh(self._watch_frame)

    def on_mount(self) -> None:
        self.call_after_refresh(self._watch_frame)  # before the app's own after-frame call
        super().on_mount()


async def test_the_first_frame_shows_the_tree_before_the_agent_pane_is_mounted(
    session: Session,
) -> None:
    app = Watched(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.frames, "the first frame")
        first = app.frames[0]
        assert first["tree"] and first["editor"]
        assert "EXPLORER" in first["text"] and session.source.name in first["text"]
        assert not first["agent"] and not first["panel"]
        # Then they come, and the app is whole: the agent pane, the panel's three tabs.
        assert app.panes_mounted
        assert app.query_one(AgentPane).display
        assert [tab.id for tab in app.query("#panel TabPane")] == [
            "panel-terminal",
            "panel-tests",
            "panel-changes",
        ]


class Counting(Watched):
    """A subclass whose on_mount calls super's (so RepoSimApp.on_mount runs twice: Textual calls
    each class's own), counting what the app is handed of each session event."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.forwarded: list[int] = []

    def _forward(self, event: Event) -> None:
        self.forwarded.append(event.seq)
        super()._forward(event)


async def test_the_app_follows_its_session_once_whoever_calls_on_mount(session: Session) -> None:
    """Each event reaches the app once, and nothing of the app is left subscribed after it ends
    (a second subscription forwarded every event twice and outlived the app)."""
    app = Counting(session)
    async with app.run_test(size=(160, 48)):
        written = await session.write("once.txt", "x\n")
        assert app.forwarded.count(written.seq) == 1
    after = await session.write("after.txt", "y\n")
    assert after.seq not in app.forwarded


async def test_the_first_frame_shows_the_repositorys_tree_before_the_session_opens(
    sample_repo: Path, session_on: SessionOn
) -> None:
    """`reposim open` gives the app its session still opening: the first frame shows the tree
    of the repository read from the disk, and the session starts opening only after that frame
    (issue 29: the session stack starting is not in the first frame's path). Meanwhile the keys
    typed wait and are applied in order once it is there, a file chosen in the tree opens then;
    then the tree lists through the session and the editor, the status bar and the late panes
    come."""
    frames_when_started: list[int] = []
    gate = asyncio.Event()

    async def start() -> Session:
        frames_when_started.append(len(app.frames))
        await gate.wait()
        return await session_on(sample_repo, "t.jsonl")

    app = Watched(Opening(sample_repo, start))
    # Textual's run_test: RepoSimApp's waits for the late panes, which wait for the session
    async with App.run_test(app, size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: frames_when_started, "the session to start opening")
        assert frames_when_started[0] >= 1  # after the first frame
        first = app.frames[0]
        assert first["tree"] and not first["editor"] and not first["agent"]
        assert "EXPLORER" in first["text"] and sample_repo.name in first["text"]
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: "calc" in tree.nodes_by_path, "the tree's first entries")
        assert not app.session_open and not tree.attached
        assert "calc" in app.export_screenshot() and "tests" in app.export_screenshot()
        # keys typed now wait for the session, then apply in order (here: quick open, a query)
        await pilot.press("ctrl+p", *"ops")
        await pilot.pause()
        assert len(app.screen_stack) == 1
        tree.post_message(FileTree.FileChosen("calc/ops.py"))
        await pilot.pause()
        gate.set()
        await wait_for(pilot, lambda: len(app.screen_stack) == 2, "the held Ctrl+P applied")
        field = app.screen.query_one(Input)
        await wait_for(pilot, lambda: field.value == "ops", "the held keys typed in the box")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.panes_mounted, "the panes, once the session opened")
        assert app.session_open and tree.attached
        assert app.query(StatusBar) and not app.query("#editor-opening")
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "calc/ops.py", "the chosen file")
        assert app.query_one(AgentPane)
        assert app.session.source == sample_repo


async def test_a_session_that_fails_to_open_ends_the_app_with_its_error(
    sample_repo: Path,
) -> None:
    """The app exits (code 1) and keeps the error for whoever started it (reposim.ui.run_ui
    raises it, as when the session opened before the UI)."""

    async def start() -> Session:
        raise RuntimeError("no such image")

    app = RepoSimApp(Opening(sample_repo, start))
    await asyncio.wait_for(app.run_async(headless=True, size=(120, 40)), 60)
    assert app.return_code == 1
    assert isinstance(app.open_error, RuntimeError) and str(app.open_error) == "no such image"


async def test_the_editor_mounts_its_tabs_and_bars_when_the_first_file_opens(
    session: Session,
) -> None:
    """The first frame's editor is its placeholder alone: the tabs and the find and go-to bars
    (a dozen hidden widgets, each styled before that frame could be drawn) are mounted when the
    first file opens, and then work as before."""
    app = Watched(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.frames, "the first frame")
        assert app.frames[0]["editor parts"] == ["editor-empty"]
        pane = app.query_one(EditorPane)
        await pane.open_file("calc/ops.py")
        assert pane.current_path == "calc/ops.py"
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: app.query_one("#find-bar", Input).has_focus, "find")
        await pilot.press(*"add")
        count = app.query_one("#find-count")
        await wait_for(pilot, lambda: "1 of 1" in str(count.render()), "the match count")
        await pilot.press("escape", "ctrl+g")
        await wait_for(pilot, lambda: app.query_one("#goto-bar", Input).has_focus, "go to")
        # a second file goes into the same tabs
        await pane.open_file("tests/test_ops.py")
        assert pane.open_paths == ["calc/ops.py", "tests/test_ops.py"]
        assert len(app.query("#editor-tabs")) == 1


def _background(app: RepoSimApp) -> Color:
    return app.screen.styles.background


async def test_the_apps_css_is_parsed_once_before_the_first_frame(
    session: Session, monkeypatch: Any
) -> None:
    """The chosen theme (a RepoSim theme, not Textual's default) is in place before the CSS is
    parsed: choosing it through the theme's watcher parsed all of the app's CSS a second time
    before the first frame (the cost of switching themes later). Switching later still works."""
    from textual.css.stylesheet import Stylesheet

    reparsed: list[int] = []
    reparse = Stylesheet.reparse

    def counted(stylesheet: Stylesheet) -> None:
        reparsed.append(1)
        reparse(stylesheet)

    monkeypatch.setattr(Stylesheet, "reparse", counted)
    app = Watched(session)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.frames) >= 2, "two frames")
        assert reparsed == []
        assert app.theme == DEFAULT_THEME and app.has_class(f"-theme-{DEFAULT_THEME}")
        assert _background(app) == Color.parse(app.current_theme.background or "")
        other = next(name for name in app.themes.names if name != DEFAULT_THEME)
        app.theme = other
        await wait_for(
            pilot,
            lambda: _background(app) == Color.parse(app.current_theme.background or ""),
            "the other theme's background",
        )
        assert reparsed
        assert app.has_class(f"-theme-{other}") and not app.has_class(f"-theme-{DEFAULT_THEME}")


FIRST_FRAME_MODULES = """
import asyncio, json, sys
from pathlib import Path

from reposim.ui import wire_agent
from simulator.session import open_session
from widgets.app import RepoSimApp

LATE = json.loads(sys.argv[3])


class Watched(RepoSimApp):
    loaded_at_first_frame: list[str] = []

    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame)  # before the app's own after-frame call
        super().on_mount()

    def _first_frame(self) -> None:
        Watched.loaded_at_first_frame = [name for name in LATE if name in sys.modules]


async def main() -> None:
    session = await open_session(Path(sys.argv[1]), trajectory_path=Path(sys.argv[2]))
    agent, connect = wire_agent(session, None)
    app = Watched(session, agent=agent, connect_agent=connect)
    async with app.run_test(size=(160, 48)):
        pass
    await session.close()
    print(json.dumps(Watched.loaded_at_first_frame))


asyncio.run(main())
"""


def _last_line(tmp_path: Path, script_text: str, repo: Path, *args: str) -> str:
    """Run `script_text` in a fresh Python process (as `reposim open` starts) on `repo`, with a
    trajectory in tmp_path and `args`; the last line it printed."""
    script = tmp_path / "script.py"
    script.write_text(script_text)
    proc = subprocess.run(
        [sys.executable, str(script), str(repo), str(tmp_path / "t.jsonl"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_the_late_panes_modules_load_after_the_first_frame(
    sample_repo: Path, tmp_path: Path
) -> None:
    """The panel's and the agent pane's code (and the agent's) is not imported before the first
    frame: a fresh process, as `reposim open` starts, notes what is loaded at that frame."""
    late = [
        "widgets.agent_pane",
        "widgets.terminal_pane",
        "widgets.tests_panel",
        "widgets.changes_view",
        "simulator.agent",
        # the code editor (TextArea, tree-sitter): the first frame shows no open file
        "widgets.code_editor",
        "textual.widgets._text_area",
        # JUnit XML is read when tests have run; the tree's (hidden) root label is no markup,
        # so rich's table of 3,600 emoji names is not loaded to parse it
        "xml.etree.ElementTree",
        "rich._emoji_codes",
        # the trajectory header's version is a plain string (email, zipfile, csv stay out)
        "importlib.metadata",
        # the tabs (the panel's, the editor's once a file is open) and the code navigation
        "textual.widgets._tabbed_content",
        "textual.widgets._tabs",
        "widgets.codenav",
        # the local backend's owner record reads this process's start time from /proc; psutil
        # (~12 ms of imports) loads when processes are signalled or gc checks an owner
        "psutil",
    ]
    assert (
        json.loads(_last_line(tmp_path, FIRST_FRAME_MODULES, sample_repo, json.dumps(late))) == []
    )


# The end of both `reposim open` scripts below: their Watched app runs headless, as the CLI's
# `open` command would start it, and the script prints what it saw.
_RUN_OPEN = """
    async def run_async(self, **options: object) -> None:
        await super().run_async(headless=True, size=(160, 48))


widgets.app.RepoSimApp = Watched
sys.argv = ["reposim", "open", sys.argv[1], "--trajectory", sys.argv[2]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(seen))
"""


OPEN_FIRST_FRAME = (
    """
import json, sys

import widgets.app
from reposim.cli import main

seen = {}


class Watched(widgets.app.RepoSimApp):
    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame)  # before the app's own after-frame call
        super().on_mount()

    def _first_frame(self) -> None:
        seen["detection at the first frame"] = "simulator.setup.detect" in sys.modules
        self.set_interval(0.05, self._ask)  # once the session has opened (after that frame)

    def _ask(self) -> None:
        if self.session_open and "test command" not in seen:
            seen["test command"] = self.session.test_command
            seen["detection when asked"] = "simulator.setup.detect" in sys.modules
            self.exit()

"""
    + _RUN_OPEN
)


def test_reposim_open_chooses_the_test_command_after_the_first_frame(
    sample_repo: Path, tmp_path: Path
) -> None:
    """Detecting F5's command walks the repository and loads the setup workflow's detection;
    `reposim open` leaves it until the command is first asked for, after the first frame (the
    tests panel is mounted then), instead of before the session opens."""
    seen = json.loads(_last_line(tmp_path, OPEN_FIRST_FRAME, sample_repo))
    assert seen == {
        "detection at the first frame": False,
        "test command": None,  # pytest: the sample is a Python project
        "detection when asked": True,
    }


OPEN_STACK_AFTER_THE_FRAME = (
    """
import gc, json, sys

import widgets.app
from reposim.cli import main

STACK = json.loads(sys.argv[3])
seen = {}


class Watched(widgets.app.RepoSimApp):
    def on_mount(self) -> None:
        self.call_after_refresh(self._first_frame)  # before the app's own after-frame call
        super().on_mount()

    def _first_frame(self) -> None:
        seen["at the first frame"] = [name for name in STACK if name in sys.modules]
        seen["collector on"] = gc.isenabled()  # paused while the UI loaded, then back on
        seen["tree"] = [str(node.label) for node in self.query_one("FileTree").root.children]
        self.set_interval(0.05, self._opened)

    def _opened(self) -> None:
        if self.panes_mounted and "once open" not in seen:
            seen["once open"] = [name for name in STACK if name in sys.modules]
            self.exit()

"""
    + _RUN_OPEN
)


def test_reposim_open_loads_the_session_stack_after_the_first_frame(
    sample_repo: Path, tmp_path: Path
) -> None:
    """`reposim open`'s first frame lists the tree from the disk, so the CLI and the UI import
    the session, its events, the trajectory writer and the backends' shell only as the session
    opens, after that frame (~50 ms of CPU before it; issue 29), and the editor's module as the
    editor mounts (it shows "Opening the session…" until then)."""
    stack = [
        "simulator.session",
        "simulator.events",
        "simulator.trajectory",
        "simulator.wire",
        "simulator.backend_factory",
        "backends.shell",
        "backends.output",
        "widgets.editor_pane",
    ]
    seen = json.loads(
        _last_line(tmp_path, OPEN_STACK_AFTER_THE_FRAME, sample_repo, json.dumps(stack))
    )
    assert seen["at the first frame"] == []
    assert seen["collector on"]
    assert seen["tree"]  # the frame did list the repository
    assert seen["once open"] == stack


QUICK_QUIT = """
import asyncio, sys
from pathlib import Path

from simulator.session import open_session
from widgets.app import RepoSimApp


class QuitAtOnce(RepoSimApp):
    def on_mount(self) -> None:
        super().on_mount()
        self.exit()


async def main() -> None:
    session = await open_session(Path(sys.argv[1]), trajectory_path=Path(sys.argv[2]))
    await QuitAtOnce(session).run_async(headless=True, size=(160, 48))
    await session.close()
    print("simulator.analysis" in sys.modules)


asyncio.run(main())
"""


def test_a_quick_quit_does_not_load_the_code_index(sample_repo: Path, tmp_path: Path) -> None:
    """Quitting before the code index was started does not import it only to close it."""
    assert _last_line(tmp_path, QUICK_QUIT, sample_repo) == "False"


QUIT_AT_THE_FIRST_FRAME = """
import asyncio, sys
from pathlib import Path

from simulator.session import open_session
from widgets.app import RepoSimApp


class QuitAtTheFirstFrame(RepoSimApp):
    def on_mount(self) -> None:
        self.call_after_refresh(self.exit)  # before the panes' own after-frame calls
        super().on_mount()


async def main() -> None:
    session = await open_session(Path(sys.argv[1]), trajectory_path=Path(sys.argv[2]))
    app = QuitAtTheFirstFrame(session)
    await app.run_async(headless=True, size=(160, 48))
    await session.close()
    print(app.return_code, repr(app._exception))


asyncio.run(main())
"""


def test_a_quit_at_the_first_frame_ends_cleanly(sample_repo: Path, tmp_path: Path) -> None:
    """Ctrl+Q as the first frame shows: the editor's after-frame start of the code index came
    while Textual was removing the panes, and its indexing note failed to mount (MountError,
    exit code 1, a traceback over the terminal)."""
    assert _last_line(tmp_path, QUIT_AT_THE_FIRST_FRAME, sample_repo) == "0 None"
