"""RepoSimApp: the VS Code-like shell around a session.

File tree left, editor tabs centre, a bottom panel (terminal, tests, changes) below the editor,
the agent pane right and a status bar. Every pane talks to the session; the app subscribes to the
session's events and forwards them to the panes as Textual messages.

The first frame comes first: compose draws the tree, the (empty) editor and the status bar; the
bottom panel and the agent pane are mounted just after that frame (`_mount_late_panes`), and
until then nothing asks for them (their actions are disabled, session events wait).

Given an `Opening` instead of a session (`reposim open` on a repository), the app does not wait
for the session stack to start: the first frame is the tree of the repository read from the
disk and a placeholder; the session starts opening after that frame, and the editor, the
status bar and the late panes are mounted once it is there (keys other than quit and help wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import CommandPalette
from textual.containers import Horizontal, Vertical
from textual.css.scalar import Scalar
from textual.geometry import Size
from textual.message import Message
from textual.theme import Theme
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

# Only the light engine modules: the first frame comes before the session opens, and
# simulator.session and simulator.events load with it, after that frame (issue 29).
from simulator.event_kinds import Kind
from simulator.paths import config_dir
from simulator.session_errors import opened
from themes import DEFAULT_THEME
from widgets.coalesce import Coalesced
from widgets.curation.keys import CURATION_BINDINGS, SURVIVORS_BINDINGS
from widgets.file_tree import FILE_KINDS, FileTree
from widgets.key_order import KeyGate
from widgets.keymap import (
    APP_BINDINGS,
    HELP_BINDINGS,
    SEARCH_BINDINGS,
    binding_ids,
    unknown_ids,
)
from widgets.palette import ActionProvider, FileProvider, PaletteAction, collect_files
from widgets.pane_focus import TAB_HELP, next_pane_target
from widgets.settings import load_settings, save_theme
from widgets.status_bar import StatusBar
from widgets.theming import ThemeSet
from widgets.workspace_app import WorkspaceApp

if TYPE_CHECKING:
    from rich.console import RenderableType
    from textual.pilot import Pilot
    from textual.widgets import TabbedContent, TextArea

    from simulator.agent import Agent, AgentConfig, ModelClient
    from simulator.events import Event
    from simulator.session import Session
    from widgets.agent_pane import AgentConnect, AgentPane
    from widgets.changes_view import ChangesView
    from widgets.editor_pane import EditorPane
    from widgets.terminal_pane import TerminalPane
    from widgets.tests_panel import TestsPanel

# Live output chunks are not forwarded to the panes: the terminal pane renders its own stream and
# exec.result / test.result carry the whole output once it is done.
STREAM_KINDS = frozenset({Kind.EXEC_OUTPUT, Kind.TERMINAL_OUTPUT})
WORKSPACE_MAY_HAVE_CHANGED = frozenset({Kind.EXEC_RESULT, Kind.TEST_RESULT, Kind.RESTORE})
TERMINAL_QUIET = 0.6
"""Seconds without terminal output after which the workspace is looked at again."""
TERMINAL_WATCH_FOR = 600.0
"""How long after the last output a long-running terminal command is still watched."""
PANEL_TARGETS = {
    "panel-terminal": "#terminal",
    "panel-tests": "#tests-list",
    "panel-changes": "#changes-files",
}
"""What takes the keyboard in each tab of the bottom panel."""
LATE_ACTIONS = frozenset(
    {"toggle_terminal", "toggle_agent", "run_tests", "show_changes", "restart_terminal",
     "focus_pane", "resize_panel"}
)  # fmt: skip
"""Actions on the panes mounted after the first frame: disabled until they are."""
NARROW = 120
"""Below this many columns the agent pane starts hidden (toggle it with Ctrl+J), unless a run
starts by itself (the demo): then the file tree gives way to it instead."""


OPENING_ACTIONS = frozenset({"quit", "help"})
"""What the app's keys do at once while its session is still opening (see `Opening`); the
others are held and applied, in order, once it has opened."""


@dataclass
class Opening:
    """A session still opening, as the app can be given it instead of a session (`reposim open`
    on a repository): the first frame shows the tree of `source`, the directory the workspace
    starts as, listed from the disk; `start()` is called after that frame and the editor, the
    status bar and the other panes come once its session is there (issue 29: the session stack
    starting is not in the first frame's path). `agent` gives the session's agent and how to
    connect one (reposim.ui.wire_agent). If opening fails the app exits with `open_error` set."""

    source: Path
    start: Callable[[], Awaitable[Session]]
    agent: Callable[[Session], tuple[Agent | None, AgentConnect]] | None = None


def kept_changes_path(session: Session) -> Path | None:
    """Where the session's changes are kept when it ends, as a patch beside its trajectory; None
    when the session works in the repository itself (--in-place), whose files are the result.
    A scratch copy (local or in a container) is deleted with the session: the patch is what a
    person takes back to their repository, which RepoSim never changes unasked."""
    if session.description.extra.get("in_place"):
        return None
    return session.trajectory_path.with_suffix(".patch")


# The app's panes by the id of their outermost widget, and what Alt+1..Alt+4 call them.
PANE_IDS = {"sidebar": "tree", "editor": "editor", "panel": "panel", "agent": "agent"}


class RepoSimApp(WorkspaceApp):
    CSS_PATH = str(Path(__file__).with_name("app.tcss"))  # absolute: subclasses live elsewhere
    TITLE = "RepoSim"
    BINDINGS: ClassVar[list[BindingType]] = list(APP_BINDINGS)
    COMMANDS: ClassVar[set[type[ActionProvider]]] = {ActionProvider}  # type: ignore[assignment]
    ENABLE_COMMAND_PALETTE = True
    # F10 zooms a pane (Harlequin's key); the status bar stays. Esc keeps its meaning in the
    # panes (leave the task input, close find) instead of restoring the zoom: F10 does that.
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, StatusBar"
    ESCAPE_TO_MINIMIZE = False

    @dataclass
    class SessionEvent(Message):
        """A session event, delivered on the app's message queue."""

        event: Event

    def __init__(
        self,
        session: Session | Opening,
        *,
        agent_config: AgentConfig | None = None,
        agent: Agent | None = None,
        connect_agent: AgentConnect | None = None,
        theme_name: str | None = None,
    ) -> None:
        """`agent` (built for this session) and `connect_agent` (builds one on the first task
        when there is none) come from the composition root, reposim.ui; `agent_config` says
        its mode, budgets, title and the task it starts with."""
        self._key_gate = KeyGate(self, super().post_message)
        super().__init__()
        self._opening = session if isinstance(session, Opening) else None
        self._session = None if isinstance(session, Opening) else session
        self._source = session.source
        self.open_error: BaseException | None = None
        """Why the session given as an `Opening` did not open (the app then exits)."""
        self._early_open: tuple[str, int | None] | None = None
        self._open_started = False
        self._held_keys: list[events.Event] = []
        self.agent_config = agent_config
        self._agent = agent
        self._connect_agent = connect_agent
        self.settings = load_settings()
        self.themes = ThemeSet()
        self._requested_theme = theme_name or self.settings.theme or DEFAULT_THEME
        self._files: list[str] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._agent_toggled = False
        self._tree_toggled = False
        self._panes_live = False  # from on_mount until the app starts to exit
        self._late_mounted = asyncio.Event()  # the panel and the agent pane are mounted
        self._late_mounting = False  # they are being mounted: a quit waits (see `exit`)
        self._held_exit: tuple[None, int, RenderableType | None] | None = None
        self._early_events: list[RepoSimApp.SessionEvent] = []
        # A run that starts by itself (the demo) is what the person came to watch.
        self._agent_runs = bool(agent is not None and agent_config and agent_config.task)
        self._resized_tree = False
        self._resized_panel = False
        self._resized_agent = False
        # The zoomed pane (F10) and the width and height it had before.
        self._zoomed: tuple[Widget, Scalar | None, Scalar | None] | None = None
        self._debounce_timers: dict[str, Timer] = {}
        self._terminal_output_at = 0.0
        self._terminal_entered_at = 0.0
        self._terminal_seen_at = 0.0
        self._terminal_watch: Timer | None = None
        self._refresh_changes_coalesced = Coalesced(self, self._refresh_changes, "status-changes")
        self.set_keymap(self.settings.keymap)
        # Registered and chosen before the first frame: switching later re-applies all CSS.
        for theme in self.themes.app_themes.values():
            self.register_theme(theme)
        known = self._requested_theme in self.themes.app_themes
        self._choose_first_theme(self._requested_theme if known else DEFAULT_THEME)

    def _choose_first_theme(self, name: str) -> None:
        """Make `name` the theme before any CSS is parsed. Setting `self.theme` would run its
        watcher, which re-parses all of the app's CSS (what a switch later costs): here the
        stylesheet's variables, the theme's classes and the ANSI colours' filter are set as
        the watcher sets them, and the start-up parse is the only one."""
        self.set_reactive(RepoSimApp.theme, name)
        theme = self.current_theme
        self.stylesheet.set_variables(self.get_css_variables())
        self.set_class(True, f"-theme-{name}", update=False)
        self.set_class(theme.dark, "-dark-mode", update=False)
        self.set_class(not theme.dark, "-light-mode", update=False)
        self._refresh_truecolor_filter(self.ansi_theme)

    async def on_event(self, event: events.Event) -> None:
        # a key waits until the one before it has been applied (widgets.key_order)
        if KeyGate.takes(event) and self._keys_wait(event):
            self._held_keys.append(event)  # typed while the session opens: applied after
            return
        if KeyGate.takes(event):
            await self._key_gate.handle(event, super().on_event)
        else:
            await super().on_event(event)

    def post_message(self, message: Message) -> bool:
        return self._key_gate.capture(message) or super().post_message(message)

    def _keys_wait(self, event: events.Event) -> bool:
        """Whether a key (or paste) typed now waits for the session: until an `Opening` has
        opened and every pane is mounted, in the order typed, except a quit."""
        if self._opening is None or self._late_mounted.is_set():
            return False
        if isinstance(event, events.Key):
            active = self.active_bindings.get(event.key)
            if active is not None and active.binding.action in OPENING_ACTIONS:
                return False
        return True

    # -- layout ------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The session the app shows; SessionError while it is still opening (`Opening`)."""
        return opened(self._session)

    @property
    def session_open(self) -> bool:
        """Whether the app has its session (given one, or its `Opening` has opened)."""
        return self._session is not None

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="sidebar"):
                yield Static(f"EXPLORER  {self._source.name}", id="sidebar-title")
                yield FileTree(self._session, source=self._source, id="tree")
            with Vertical(id="centre"):
                if self._session is None:
                    yield Static("Opening the session…", id="editor-opening")
                else:
                    from widgets.editor_pane import EditorPane

                    yield EditorPane(self._session, id="editor")
        if self._session is not None:
            yield StatusBar(self._session, id="status")

    def _late_panes(self) -> tuple[TabbedContent, AgentPane]:
        # Their modules load here, after the first frame, not with the app (issue 29); the
        # tabs' too (the editor's come with its first file).
        from textual.widgets import TabbedContent, TabPane

        from widgets.agent_pane import AgentPane
        from widgets.changes_view import ChangesView
        from widgets.terminal_pane import TerminalPane
        from widgets.tests_panel import TestsPanel

        panel = TabbedContent(id="panel", initial="panel-terminal")
        for title, pane_id, pane in (
            ("Terminal", "panel-terminal", TerminalPane(self.session, id="terminal")),
            ("Tests", "panel-tests", TestsPanel(self.session, id="tests")),
            ("Changes", "panel-changes", ChangesView(self.session, id="changes")),
        ):
            panel.compose_add_child(TabPane(title, pane, id=pane_id))
        agent = AgentPane(
            self.session,
            self.agent_config,
            agent=self._agent,
            connect=self._connect_agent,
            id="agent",
        )
        return panel, agent

    def _start_opening(self) -> None:
        """After the first frame, with an `Opening`: open the session, then mount the rest."""
        if not self._open_started:  # once, whoever else calls on_mount (Textual calls each
            self._open_started = True  # class's own; a subclass's may call super's too)
            self.run_worker(self._open_session(), group="session-open")

    async def _open_session(self) -> None:
        assert self._opening is not None
        try:
            # shielded: a quit while it opens cancels this worker, not the opening, and the
            # session it opens is closed by whoever started the app (reposim.ui.run_ui)
            session = await asyncio.shield(self._opening.start())
        except Exception as exc:  # said by run_ui once the app has exited
            self.open_error = exc
            self.exit(return_code=1)
            return
        if not self._panes_live:
            return  # quitting: nothing more is mounted
        self._session = session
        if self._opening.agent is not None:
            self._agent, self._connect_agent = self._opening.agent(session)
            config = self.agent_config
            self._agent_runs = bool(self._agent is not None and config and config.task)
        self.query_one(FileTree).attach(session)
        stale = session.description.extra.get("venv_stale")
        if stale:  # said on stderr when the session opens before the UI
            self.notify(f"{stale}.", severity="warning", timeout=10)
        # mounted by the app's own message loop, as when it was given its session (the keys
        # held meanwhile are then replayed there, in order, before any newer one)
        self.call_later(self._mount_late_panes)

    def _session_started(self) -> None:
        """The app has its session: follow its events; the status bar counts its changes.
        Once, however often on_mount runs (Textual calls each class's own; a subclass's may call
        super's too): a second subscription would forward every event twice and outlive the app."""
        if self._unsubscribe is not None:
            return
        self._unsubscribe = self.session.subscribe(self._forward)
        self.refresh_changes()

    async def _mount_late_panes(self) -> None:
        """After the first frame: the bottom panel and the agent pane, then what waited. With
        an `Opening`, once the session has opened: the editor and the status bar first."""
        if self._late_mounted.is_set() or not self._panes_live:
            return  # the app is quitting (`exit` was called): Textual would mount nothing
        self._late_mounting = True
        try:
            if not self.query("#editor"):
                from widgets.editor_pane import EditorPane

                await self.query("#editor-opening").remove()
                await self.query_one("#centre").mount(EditorPane(self.session, id="editor"))
                await self.mount(StatusBar(self.session, id="status"))
                self._session_started()
            panel, agent = self._late_panes()
            await self.query_one("#centre").mount(panel)
            await self.query_one("#main").mount(agent)
        finally:
            self._late_mounting = False
            held, self._held_exit = self._held_exit, None
        self._late_mounted.set()
        if held is not None:
            self.exit(*held)  # the quit asked for while they mounted
            return
        self._auto_layout(self.size)
        early, self._early_events = self._early_events, []
        for message in early:
            self._session_event(message)
        if self._early_open is not None:  # a file chosen in the tree while the session opened
            path, line = self._early_open
            self._early_open = None
            self.open_path(path, line)
        typed, self._held_keys = self._held_keys, []
        for key in typed:  # typed while the session opened: now, in order, before any newer
            await self.on_event(key)

    # The panes mounted after the first frame, by id: their classes load with them (late).
    @property
    def _editor(self) -> EditorPane:
        """The editor (mounted once the session is there: with an `Opening`, after the first
        frame, whose imports do not include it)."""
        return self.query_one("#editor", Widget)  # type: ignore[return-value]

    @property
    def _agent_pane(self) -> AgentPane:
        return self.query_one("#agent", Widget)  # type: ignore[return-value]

    @property
    def _tests_panel(self) -> TestsPanel:
        return self.query_one("#tests", Widget)  # type: ignore[return-value]

    @property
    def _changes_view(self) -> ChangesView:
        return self.query_one("#changes", Widget)  # type: ignore[return-value]

    @property
    def _terminal_pane(self) -> TerminalPane:
        return self.query_one("#terminal", Widget)  # type: ignore[return-value]

    @property
    def panes_mounted(self) -> bool:
        """Whether the panes mounted after the first frame are there."""
        return self._late_mounted.is_set()

    @contextlib.asynccontextmanager
    async def run_test(self, *args: Any, **kwargs: Any) -> AsyncIterator[Pilot[None]]:
        """Textual's, handing over the pilot once every pane is mounted (what tests drive)."""
        async with super().run_test(*args, **kwargs) as pilot:
            await asyncio.wait_for(self._late_mounted.wait(), 30)
            yield pilot

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self._session is None and action not in OPENING_ACTIONS:
            return False
        if action in LATE_ACTIONS and not self._late_mounted.is_set():
            return False
        return super().check_action(action, parameters)

    def on_mount(self) -> None:
        self._panes_live = True
        if self._session is None:
            self.call_after_refresh(self._start_opening)
        else:
            self.call_after_refresh(self._mount_late_panes)
        self._auto_layout(self.size)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        if self._requested_theme != self.theme:
            self.notify(
                f"There is no theme named {self._requested_theme!r}; using {DEFAULT_THEME}.",
                severity="warning",
            )
        for problem in self.settings.problems:
            self.notify(problem, severity="warning", timeout=10)
        # The panes' bindings load their modules: looked at here only when there is a keymap.
        keymap = self.settings.keymap
        unknown = unknown_ids(keymap, self._known_binding_ids()) if keymap else []
        if unknown:
            self.notify(
                f"keymap.toml names unknown bindings: {', '.join(unknown)} (see F1).",
                severity="warning",
                timeout=10,
            )
        if self._session is not None:
            self._session_started()
        self.query_one(FileTree).focus()

    def _forward(self, event: Event) -> None:
        if event.kind == Kind.TERMINAL_OUTPUT:
            self._terminal_output_at = time.monotonic()  # read by _watch_terminal; no message
        elif event.kind not in STREAM_KINDS:
            self.post_message(self.SessionEvent(event))

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: this handler runs before App._on_resize stores the new one.
        self._auto_layout(event.size)

    def _auto_layout(self, size: Size) -> None:
        """The layout rules for this terminal size, the same at start and on every resize.
        A pane the user toggled keeps their choice; a pane they resized keeps its size."""
        width = size.width
        narrow = width < NARROW
        if not self._late_mounted.is_set():  # the first frame: the tree and the editor
            if not self._resized_tree:
                self.query_one("#sidebar").styles.width = max(20, min(32, width // 5))
            return
        agent = self._agent_pane
        if not self._agent_toggled:
            agent.display = self._agent_runs or not narrow
        # On a narrow screen the agent gets about two fifths, the editor the rest.
        if not self._resized_agent:
            agent.styles.width = max(30, width * 2 // 5) if narrow else max(40, width // 4)
        if not self._tree_toggled:
            self.query_one("#sidebar").display = not (narrow and agent.display)
        if not self._resized_tree:
            self.query_one("#sidebar").styles.width = max(20, min(32, width // 5))
        if not self._resized_panel:
            self.query_one("#panel").styles.height = max(7, min(14, size.height // 3))
        self._keep_zoom()

    # -- session events ----------------------------------------------------------------------

    @on(SessionEvent)
    def _session_event(self, message: SessionEvent) -> None:
        event = message.event
        if not self._late_mounted.is_set():
            self._early_events.append(message)  # shown once every pane is there
            return
        if not self._panes_live or not self.query(FileTree):
            return  # the app is closing: its panes mount nothing more (see `exit`)
        from simulator.events import TerminalInputPayload, file_paths  # loaded: `event` is one

        self._agent_pane.add_event(event)
        self.query_one(FileTree).on_session_event(event)
        kind = event.kind
        if kind in FILE_KINDS:
            if kind not in (Kind.FILE_WRITE, Kind.FILE_EDIT):
                self._files = None  # the set of files changed: quick-open lists them again
            for path in file_paths(event):
                if path:
                    self._reload_in_editor(path)
            self._debounce("changes", 0.3, self.refresh_changes)
        elif kind in WORKSPACE_MAY_HAVE_CHANGED:
            self._workspace_changed()
        elif kind == Kind.TERMINAL_INPUT and "\r" in event.typed(TerminalInputPayload).data:
            self._start_terminal_watch()
        elif kind == Kind.TEST_RUN:
            self.query_one(StatusBar).activity = "running tests…"
        if kind == Kind.TEST_RESULT:
            self._test_result(event)

    def _test_result(self, event: Event) -> None:
        """A test run ended, whoever started it: the status bar and the tests panel show it."""
        from simulator.checkpoint_repo import HELPER_DIR
        from simulator.events import TestResultPayload
        from simulator.wire import WireError

        status = self.query_one(StatusBar)
        try:
            result = event.typed(TestResultPayload).result()
        except WireError:
            status.activity = "tests: finished"
            return
        if f"{HELPER_DIR}/" in result.command:
            # a workflow's harness under .reposim/, not the repository's tests: said as such,
            # and the Tests panel keeps the repository's last run
            status.activity = f"harness: {result.summary()}"
            return
        status.activity = f"tests: {result.summary()}"
        self._tests_panel.show_result(result)

    def _workspace_changed(self) -> None:
        """Something ran that may have changed any file: look again (coalesced)."""
        if not self._live():
            return
        self._files = None
        self.query_one(FileTree).schedule_refresh(relist=True)
        self._debounce("reload-open", 0.2, self._reload_open_files)
        self._debounce("changes", 0.2, self.refresh_changes)

    def _start_terminal_watch(self) -> None:
        """A command line was entered in the terminal. The PTY says nothing about when a command
        ends, so the workspace is looked at again each time the terminal's output goes quiet
        (the prompt coming back is output too), until it has been silent for a while."""
        self._terminal_entered_at = time.monotonic()
        self._terminal_seen_at = 0.0
        if self._terminal_watch is None:
            self._terminal_watch = self.set_interval(0.5, self._watch_terminal)

    def _watch_terminal(self) -> None:
        if not self._live():
            self._stop_timers()
            return
        now = time.monotonic()
        last_output = max(self._terminal_output_at, self._terminal_entered_at)
        if last_output > self._terminal_seen_at and now - last_output >= TERMINAL_QUIET:
            self._terminal_seen_at = last_output
            self._workspace_changed()
            self._editor.on_workspace_changed()  # its code index reads it again
        elif now - last_output >= TERMINAL_WATCH_FOR and self._terminal_watch is not None:
            self._terminal_watch.stop()
            self._terminal_watch = None

    def _debounce(self, name: str, delay: float, callback: Callable[[], object]) -> None:
        timer = self._debounce_timers.get(name)
        if timer is not None:
            timer.stop()
        if self._live():
            self._debounce_timers[name] = self.set_timer(delay, callback)

    def _live(self) -> bool:
        """True while the panes exist: timers that fire during shutdown then do nothing."""
        session = self._session
        return self._panes_live and self.is_running and session is not None and not session.closed

    def _stop_timers(self) -> None:
        for timer in self._debounce_timers.values():
            timer.stop()
        self._debounce_timers.clear()
        if self._terminal_watch is not None:
            self._terminal_watch.stop()
            self._terminal_watch = None

    def _reload_open_files(self) -> None:
        if not self._live():
            return
        editor = self._editor
        for path in editor.open_paths:
            self._reload_in_editor(path)

    @work
    async def _reload_in_editor(self, path: str) -> None:
        """The editor looks at `path` again, in a worker. The worker is given this method, not a
        coroutine of it: a file event handled while the app exits (the save of Ctrl+Q's Save)
        starts a worker that shutdown cancels before it runs, and a coroutine made for it would
        never be awaited (a RuntimeWarning at exit)."""
        await self._editor.on_external_change(path)

    def refresh_changes(self) -> None:
        if self._live():
            self._refresh_changes_coalesced()

    async def _refresh_changes(self) -> None:
        try:
            changes = await self.session.changes()
        except Exception:  # no git in the backend: the status bar shows no count
            return
        if not self._live():
            return
        self.query_one(StatusBar).changed = len(changes)
        if not self._late_mounted.is_set():
            return
        changes_view = self._changes_view
        if self._panel().active == "panel-changes":
            changes_view.reload()

    # -- messages from the panes -------------------------------------------------------------

    def on_agent_pane_follow_file(self, message: AgentPane.FollowFile) -> None:
        self.run_worker(
            self._show_followed(message.path, message.line), group="agent-follow", exclusive=True
        )

    async def _show_followed(self, path: str, line: int | None) -> None:
        # Following is passive: the file is shown without taking the keyboard, so nothing is
        # given back afterwards either. Giving back the focus found at the start took the keys
        # from a question (a workflow's, or the agent's) that came up while the file opened.
        await self._editor.open_file(path, line, focus=False)

    @on(FileTree.FileChosen)
    def _file_chosen(self, message: FileTree.FileChosen) -> None:
        self.open_path(message.path)

    def on_tests_panel_open_location(self, message: TestsPanel.OpenLocation) -> None:
        self.open_path(message.path, message.line)

    def on_tests_panel_finished(self, message: TestsPanel.Finished) -> None:
        status = self.query_one(StatusBar)
        status.activity = f"tests: {message.result.summary()}"

    def on_changes_view_open_file(self, message: ChangesView.OpenFile) -> None:
        self.open_path(message.path, message.line)

    # by name, not `@on(EditorPane.FileOpened)`: that would load the editor's module with the
    # app, before the first frame
    def on_editor_pane_file_opened(self, message: EditorPane.FileOpened) -> None:
        self._style_editors()
        self.query_one(FileTree).reveal(message.path)

    def on_editor_pane_cursor_moved(self, message: EditorPane.CursorMoved) -> None:
        for status in self.query(StatusBar):  # none while the app shuts down
            status.cursor = message.position

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # by name, not `@on(TabbedContent.TabActivated, "#panel")`: that would load the tabs'
        # module with the app, before the first frame
        if event.control.id == "panel" and event.pane.id == "panel-changes":
            self._changes_view.reload()

    def _panel(self) -> TabbedContent:
        """The bottom panel (mounted after the first frame: NoMatches before)."""
        from textual.widgets import TabbedContent

        return self.query_one("#panel", TabbedContent)

    # -- the PaletteHost protocol ------------------------------------------------------------

    async def workspace_files(self) -> list[str]:
        if self._files is None:
            self._files = await collect_files(self.session)
        return self._files

    def open_path(self, path: str, line: int | None = None) -> None:
        if not self._late_mounted.is_set() and not self.query("#editor"):
            self._early_open = (path, line)  # the session is opening: opened once it is there
            return
        editor = self._editor
        self.run_worker(editor.open_file(path, line), group="open-file")

    def palette_actions(self) -> list[PaletteAction]:
        from widgets.curation.entries import workflow_actions

        actions = [
            PaletteAction("Open file…", "Quick-open a file by name", self.action_quick_open),
            PaletteAction("Run tests", "Run the test suite (F5)", self.action_run_tests),
            PaletteAction(
                "Show changes", "Diff against the session start", self.action_show_changes
            ),
            PaletteAction(
                "Search in files", "Find text in the workspace", self.action_search_files
            ),
            PaletteAction("Toggle file tree", "Ctrl+B", self.action_toggle_tree),
            PaletteAction("Toggle terminal panel", "Ctrl+`", self.action_toggle_terminal),
            PaletteAction("Toggle agent pane", "Ctrl+J", self.action_toggle_agent),
            PaletteAction(
                "Zoom the pane (on/off)",
                "F10: the pane with the keyboard fills the screen",
                self.action_zoom,
            ),
            PaletteAction("Save file", "Ctrl+S", self.action_save),
            PaletteAction("Restart terminal", "A fresh shell", self.action_restart_terminal),
            PaletteAction("Refresh file tree", "List the folders again", self.action_refresh),
            PaletteAction("Keys and help", "F1", self.action_help),
            PaletteAction("Quit", "Close the session and exit", self.action_quit),
            *self._editor.palette_actions(),
            *self.query_one(FileTree).palette_actions(),
            *self._agent_palette_actions(),
            *workflow_actions(self),
        ]
        for name in self.themes.names:
            actions.append(
                PaletteAction(
                    f"Theme: {name}",
                    "Switch the colour theme (saved in config.toml)",
                    lambda name=name: self.action_set_theme(name),  # type: ignore[misc]
                )
            )
        return actions

    def _agent_palette_actions(self) -> list[PaletteAction]:
        """The agent pane's commands; choosing one brings a hidden pane in first."""
        if not self._late_mounted.is_set():
            return []
        pane = self._agent_pane

        def shown(run: Callable[[], Any]) -> Callable[[], Any]:
            def go() -> Any:
                if not pane.display:
                    self.action_toggle_agent()
                return run()

            return go

        return [PaletteAction(a.title, a.help, shown(a.run)) for a in pane.palette_actions()]

    async def model_client(self) -> ModelClient:
        """The model the agent uses, for workflows that need one (the curation screen's model
        regeneration): the agent's, else the configured one, else $REPOSIM_MODEL as the agent
        pane connects it. ModelConfigError, one sentence, when none is set."""
        if self._agent is not None:
            return self._agent.client
        if self.agent_config is not None and self.agent_config.client is not None:
            return self.agent_config.client
        from simulator.agent import litellm_client

        return await asyncio.to_thread(litellm_client, None)

    # -- actions -----------------------------------------------------------------------------

    def action_quick_open(self) -> None:
        self.push_screen(
            CommandPalette(providers=[FileProvider], placeholder="Open a file by name…")
        )

    def action_toggle_tree(self) -> None:
        self._tree_toggled = True
        sidebar = self.query_one("#sidebar")
        sidebar.display = not sidebar.display
        if sidebar.display:
            self.query_one(FileTree).focus()
        elif self.focused is None or not self.focused.display:
            self._focus_editor()

    def action_toggle_terminal(self) -> None:
        panel = self._panel()
        terminal = self._terminal_pane
        if not panel.display:
            panel.display = True
            panel.active = "panel-terminal"
            terminal.focus()
        elif panel.active == "panel-terminal" and terminal.has_focus:
            panel.display = False
            self._focus_editor()
        else:
            panel.active = "panel-terminal"
            terminal.focus()

    def action_toggle_agent(self) -> None:
        agent = self._agent_pane
        self._agent_toggled = True
        agent.display = not agent.display
        self._auto_layout(self.size)  # on a narrow screen the tree gives way to it

    def action_run_tests(self) -> None:
        self._show_panel("panel-tests")
        self._tests_panel.run_tests()

    def action_show_changes(self) -> None:
        self._show_panel("panel-changes")
        changes = self._changes_view
        changes.reload()
        changes.query_one("#changes-files").focus()  # as VS Code: F7 lands in the list

    def action_search_files(self) -> None:
        from widgets.search_screen import SearchScreen  # loaded on first use: faster start

        def chosen(result: tuple[str, int] | None) -> None:
            if result is not None:
                self.open_path(*result)

        self.push_screen(SearchScreen(self.session), chosen)

    async def action_save(self) -> None:
        await self._editor.save_current()

    async def action_restart_terminal(self) -> None:
        self._show_panel("panel-terminal")
        await self._terminal_pane.restart()

    def action_refresh(self) -> None:
        self._files = None
        self.query_one(FileTree).relist_loaded()
        self.refresh_changes()

    def action_workflow(self, name: str) -> None:
        from widgets.workflow_entries import run_named  # the workflows load on first use

        run_named(self, name)

    def action_help(self) -> None:
        from widgets.help_screen import HelpScreen  # loaded on first use: faster start

        if isinstance(self.screen, HelpScreen):
            return
        rows = self.help_rows()
        first = getattr(self.screen, "HELP_FIRST", ())  # a screen's own keys at the top
        rows.sort(key=lambda row: row[0] not in first)
        self.push_screen(HelpScreen(rows, str(config_dir() / "keymap.toml")))

    def action_focus_pane(self, pane: str) -> None:
        # Focusing a hidden pane shows it, which is the person's choice (kept through resizes);
        # focusing a visible one changes nothing the layout rules decide.
        if pane == "tree":
            sidebar = self.query_one("#sidebar")
            self._tree_toggled = self._tree_toggled or not sidebar.display
            sidebar.display = True
            self.query_one(FileTree).focus()
        elif pane == "editor":
            self._focus_editor()
        elif pane == "panel":
            panel = self._panel()
            order = ["panel-terminal", "panel-tests", "panel-changes"]
            focused = self.focused
            if panel.display and focused is not None and panel in focused.ancestors:
                # Pressed again inside the panel: its next tab (Terminal, Tests, Changes).
                panel.active = order[(order.index(panel.active) + 1) % len(order)]
            panel.display = True
            self.query_one(PANEL_TARGETS.get(panel.active, "#terminal")).focus()
        elif pane == "agent":
            agent = self._agent_pane
            self._agent_toggled = self._agent_toggled or not agent.display
            agent.display = True
            # a pending approval first (else nothing brings the keyboard back to it), else
            # the task input: typed text never lands on the cards' one-key actions
            agent.keyboard_target().focus()

    def action_resize_tree(self, delta: int) -> None:
        if self._zoomed is not None:
            return  # a zoomed pane fills the screen: sizes apply once F10 restores it
        self._resized_tree = True
        sidebar = self.query_one("#sidebar")
        width = sidebar.outer_size.width or 24
        sidebar.styles.width = max(12, min(width + delta, self.size.width // 2))

    def action_resize_agent(self, delta: int) -> None:
        """Alt+Left / Alt+Right in the agent pane: wider / narrower, kept through resizes."""
        if self._zoomed is not None:
            return  # a zoomed pane fills the screen: sizes apply once F10 restores it
        self._resized_agent = True
        agent = self._agent_pane
        width = agent.outer_size.width or 40
        agent.styles.width = max(24, min(width + delta, self.size.width - 20))

    def action_zoom(self) -> None:
        """F10: the pane holding the keyboard fills the screen (the status bar stays); again,
        the layout comes back. Focus that leaves the zoomed pane (Alt+1..4, Tab) restores it."""
        screen = self.screen_stack[0]
        if self.screen is not screen:
            return  # a dialog is open: it has the keyboard
        if screen.maximized is not None:
            self._unzoom()
            return
        pane = self._pane_container(screen.focused)
        if pane is None:
            self.notify("Put the keyboard in a pane first (Alt+1..Alt+4), then F10 zooms it.")
            return
        self._zoomed = (pane, pane.styles.width, pane.styles.height)
        screen.maximized = pane
        self._keep_zoom()

    def _keep_zoom(self) -> None:
        """The zoomed pane fills the screen: its own width and height (set by the layout
        rules or the person, inline, so above any CSS) are put aside until the zoom ends, and
        a layout change meanwhile (a resize) updates what is put aside."""
        if self._zoomed is None:
            return
        pane, _width, _height = self._zoomed
        whole = Scalar.parse("1fr")
        if pane.styles.width != whole or pane.styles.height != whole:
            self._zoomed = (pane, pane.styles.width, pane.styles.height)
            pane.styles.width = pane.styles.height = whole

    def _unzoom(self) -> None:
        self.screen_stack[0].minimize()
        if self._zoomed is not None:
            pane, width, height = self._zoomed
            self._zoomed = None
            pane.styles.width = width
            pane.styles.height = height

    def _pane_container(self, widget: Widget | None) -> Widget | None:
        """The pane (tree, editor, panel or agent) a widget is in."""
        if widget is None:
            return None
        return next(
            (n for n in widget.ancestors_with_self if isinstance(n, Widget) and n.id in PANE_IDS),
            None,
        )

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if not self.screen_stack:  # a focus event that arrives while the app shuts down
            return
        screen = self.screen_stack[0]
        zoomed = screen.maximized
        if zoomed is not None and self._pane_container(event.widget) not in (None, zoomed):
            self._unzoom()  # the keyboard went to another pane: show it

    def action_resize_panel(self, delta: int) -> None:
        if self._zoomed is not None:
            return  # a zoomed pane fills the screen: sizes apply once F10 restores it
        self._resized_panel = True
        panel = self._panel()
        height = panel.outer_size.height or 12
        panel.styles.height = max(5, min(height + delta, self.size.height - 6))

    def action_set_theme(self, name: str) -> None:
        self.theme = name
        try:
            save_theme(name)
        except OSError as exc:
            self.notify(f"The theme could not be saved: {exc}", severity="warning")

    async def action_quit(self) -> None:
        """Quit; unsaved edits are asked about first (the scratch workspace goes with the app,
        so an edit not saved now is lost for good)."""
        if not self.query("#editor"):  # the session is still opening: nothing to save
            self.exit()
            return
        from widgets.editor_pane import ChoiceScreen  # loaded: the editor is there

        editor = self._editor
        dirty = editor.dirty_paths()
        if isinstance(self.screen, ChoiceScreen):
            return  # already asking
        if not dirty:
            self.exit()
            return
        names = dirty[0] if len(dirty) == 1 else f"{len(dirty)} files ({', '.join(dirty[:3])}…)"
        if len(dirty) in (2, 3):
            names = f"{len(dirty)} files ({', '.join(dirty)})"

        async def answered(choice: str | None) -> None:
            saved = choice == "save" and await editor.save_all()
            if choice == "discard" or saved:
                self.exit()

        kept = kept_changes_path(self.session)
        if kept is None:
            where = f"Save writes them to {self.session.source}."
        else:
            where = (
                "Save writes them to the session's scratch copy, deleted on exit; the session's "
                f"changes are then kept in {kept} for `git apply` (your repository is not changed)."
            )
        self.push_screen(
            ChoiceScreen(
                f"{names} {'has' if len(dirty) == 1 else 'have'} unsaved edits. {where}",
                [("cancel", "Cancel"), ("discard", "Discard"), ("save", "Save")],
                default="cancel",
            ),
            answered,
        )

    def exit(
        self, result: None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        """Textual's, held while the late panes mount. From `App.exit()` on, Textual mounts
        nothing (`mount_all` returns at once) and refuses `mount` (`is_attached` is false), until
        the shutdown prunes the DOM: a Ctrl+Q while the panel was being composed left its tab
        bar without tabs (`ValueError: No Tab with id ...`) or the agent pane without a parent
        (`MountError`), a traceback over the terminal. The mount takes a fraction of a second;
        the quit takes effect as soon as it ends."""
        if self._late_mounting:
            self._held_exit = (result, return_code, message)
            return
        self._panes_live = False  # nothing is mounted from now on: events are not shown
        super().exit(result, return_code, message)

    async def _on_exit_app(self) -> None:
        # Textual's first step of any shutdown: no debounced refresh fires while panes unmount.
        self._panes_live = False
        self._stop_timers()
        await super()._on_exit_app()

    def on_unmount(self) -> None:
        # Dispatched after every pane has unmounted (the terminal has closed its PTY). The
        # session outlives the app: whoever launched the app closes it (reposim.ui.run_ui).
        self._panes_live = False
        self._stop_timers()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # -- helpers -----------------------------------------------------------------------------

    def _show_panel(self, pane_id: str) -> None:
        panel = self._panel()
        panel.display = True
        panel.active = pane_id

    def _focus_editor(self) -> None:
        area = self._editor.current_editor
        target = area or next_pane_target(self, None, 1)  # no file open: the first pane
        if target is not None:
            target.focus()

    # -- Tab between panes (widgets.pane_focus) ------------------------------------------------

    def action_focus_next(self) -> None:
        self._tab_to_pane(1)

    def action_focus_previous(self) -> None:
        self._tab_to_pane(-1)

    def _tab_to_pane(self, step: int) -> None:
        if self.screen is not self.screen_stack[0]:  # a dialog: Tab walks its own widgets
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        target = next_pane_target(self, self.focused, step)
        if target is not None:
            target.focus()

    def pane_of(self, widget: Widget | None) -> str | None:
        if widget is None:
            return None
        for node in widget.ancestors_with_self:
            if node.id in PANE_IDS:
                return PANE_IDS[node.id]
        return None

    def pane_target(self, pane: str) -> Widget | None:
        if pane == "tree":
            sidebar = self.query_one("#sidebar")
            return self.query_one(FileTree) if sidebar.display else None
        if pane == "editor":
            return self._editor.current_editor
        if not self._late_mounted.is_set():
            return None
        if pane == "panel":
            panel = self._panel()
            return self.query_one(PANEL_TARGETS[panel.active]) if panel.display else None
        agent = self._agent_pane
        return agent.keyboard_target() if agent.display else None

    def _theme_changed(self, theme: Theme) -> None:
        self._style_editors()

    def _style_editors(self) -> None:
        # By type name: TextArea loads with the first open file, not before the first frame.
        for area in self.query("TextArea"):
            self.themes.apply_to_editor(cast("TextArea", area), self.theme)

    def _pane_bindings(self) -> list[tuple[str, list[Binding]]]:
        from widgets.agent_pane import AgentPane
        from widgets.changes_view import ChangesView, DiffScreen
        from widgets.editor_pane import EditorPane
        from widgets.terminal_pane import TerminalPane

        panes: list[tuple[str, list[BindingType]]] = [
            ("Editor", list(EditorPane.help_bindings())),
            ("Tree", list(FileTree.BINDINGS)),
            ("Changes", [*ChangesView.BINDINGS, *DiffScreen.BINDINGS]),
            ("Terminal", list(TerminalPane.BINDINGS)),
            ("Agent", list(AgentPane.BINDINGS)),
            ("Search", list(SEARCH_BINDINGS)),
            ("Help", list(HELP_BINDINGS)),
            ("Curation", list(CURATION_BINDINGS)),
            ("Survivors", list(SURVIVORS_BINDINGS)),
        ]
        out = []
        for where, declared in panes:
            bindings = [b for b in declared if isinstance(b, Binding)]
            if bindings:
                out.append((where, bindings))
        return out

    def _known_binding_ids(self) -> list[str]:
        ids = binding_ids()
        for _, bindings in self._pane_bindings():
            ids.extend(b.id for b in bindings if b.id)
        return ids

    def help_rows(self) -> list[tuple[str, str, str, str]]:
        from widgets.help_screen import rows_for, text_area_rows

        rows = rows_for("App", APP_BINDINGS, self.settings.keymap)
        rows.append(("App", "Tab / Shift+Tab", TAB_HELP, ""))
        listed = {key.strip() for binding in APP_BINDINGS for key in binding.key.split(",")}
        for where, bindings in self._pane_bindings():
            rows.extend(rows_for(where, bindings, self.settings.keymap))
            listed |= {key.strip() for binding in bindings for key in binding.key.split(",")}
            if where == "Editor":
                rows.extend(text_area_rows("Editor", listed))
        rows.append(("Tree", "Enter", "Open the file / expand the folder", ""))
        rows.append(("Tests", "Enter", "Open a failure at its line", ""))
        rows.append(("Changes", "Enter", "Open the changed file at its first change", ""))
        return rows
