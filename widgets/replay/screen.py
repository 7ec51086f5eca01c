"""The replay view: watch a trajectory step by step (RepoSim's own, or another tool's).

Opening is Toolong-style: the file is indexed by line offsets in a worker thread, events are
parsed only when a row is drawn or selected, and the timeline renders visible rows only. Filters
(actor, kind group) and step searches scan the raw lines in a worker, never on the event loop.
"""

from __future__ import annotations

import gc
import threading
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from simulator.events import (
    ExecPayload,
    ExecResultPayload,
    Kind,
    TerminalInputPayload,
    TestResultPayload,
)
from simulator.interop.edits import is_edit_command
from simulator.replay.workspace import start_files, start_text, workspace_at
from simulator.trajectory import (
    EventSource,
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryIndex,
    open_trajectory,
)
from simulator.wire import WireError
from widgets.key_order import KeyOrderedApp
from widgets.keybindings import default_bindings
from widgets.replay.detail import render_file, render_step
from widgets.replay.stepview import StepView
from widgets.replay.timeline import Timeline

ACTORS = ("all", "human", "agent", "system")
KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "all": (),
    "actions": ("exec", "test.run", "search", "file.", "restore", "checkpoint"),
    "commands": ("exec", "terminal.input"),  # the terminal's: entered lines only
    "files": ("file.",),
    "tests": ("test.",),
    "model": ("llm.", "tool.", "agent."),
    "terminal": ("terminal.",),
}
# The detail pane follows the cursor in the same frame, unless the previous step was shown less
# than this long ago (a held key, fast play): then the latest step is shown when this has passed.
_DETAIL_SETTLE = 0.025
_FIRST_CHUNK = 256 * 1024
_CHUNK = 512 * 1024
SPEEDS = (1.0, 2.0, 5.0, 10.0, 25.0, 50.0)
EDIT_KINDS = (Kind.FILE_WRITE, Kind.FILE_EDIT, Kind.FILE_CREATE, Kind.FILE_DELETE, Kind.FILE_RENAME)


# Full garbage collections, not rendering, made the slowest jumps (the p95): each jump renders
# rows and a step that the panes' caches keep for a while; as these age into the oldest
# generation they trigger full collections, which walked the whole heap inside a frame (about
# 110k objects here, 30-120 ms of CPU). So while the viewer is open: what is alive once the file
# is open (the app's widgets, styles, modules) is frozen (moved to the permanent generation,
# which no collection walks again: the app's objects live as long as the viewer, and acyclic
# ones are still freed by reference counting), full collections are made ten times rarer, and
# one runs when the person has stopped moving for a moment.
_FULL_GC_RARER = 10
_IDLE_COLLECT = 1.0


def _settle_heap() -> None:
    gc.collect(1)
    gc.freeze()


def _warm_up_highlighting() -> None:
    """Load the syntax lexers the detail pane uses, off the event loop (pygments imports them
    on first use, which would otherwise stall the first step shown)."""
    from pygments.lexers import get_lexer_by_name

    for name in ("bash", "diff", "json", "python"):
        get_lexer_by_name(name)


def _edits_by_command(source: EventSource, index: int) -> bool:
    """A command that edits a file the way other tools' agents do (SWE-agent's `edit 287:295`,
    mini-swe-agent's `sed -i`, ...): imported as a command, an edit to navigate by."""
    try:
        data = source.event(index).data
    except (TrajectoryError, WireError):
        return False
    return isinstance(data, ExecPayload) and is_edit_command(data.command)


def _entered(source: EventSource, index: int) -> bool:
    """Whether terminal input at `index` entered a command line (see TerminalInputPayload)."""
    try:
        data = source.event(index).data
        return isinstance(data, TerminalInputPayload) and bool(data.line)
    except (TrajectoryError, WireError):
        return False


def _kind_matches(kind: str, prefixes: tuple[str, ...]) -> bool:
    return not prefixes or any(
        kind == p or (p.endswith(".") and kind.startswith(p)) for p in prefixes
    )


class ReplayScreen(Screen[None]):
    """A self-contained screen; the main app can push it with a trajectory path."""

    CSS_PATH = "replay.tcss"

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("replay"))

    @dataclass
    class Loaded(Message):
        source: EventSource | None
        error: str | None = None

    @dataclass
    class ForkRequested(Message):
        """The person asked to continue live from a step; the app that pushed the screen
        forks (simulator.replay.fork) and opens the session. `repo` is the repository the
        person named when the recorded one is not on this machine (None: the recorded one)."""

        path: Path
        step: int
        repo: Path | None = None

    class Grew(Message):
        """More of the file has been indexed."""

    @dataclass
    class RowsReady(Message):
        rows: array[int] | None

    @dataclass
    class Found(Message):
        index: int | None
        what: str

    @dataclass
    class FileText(Message):
        path: str
        text: str | None

    @dataclass
    class FilesReady(Message):
        index: int
        files: dict[str, str | None]

    def __init__(
        self,
        path: Path | str,
        *,
        name: str | None = None,
        at_step: int | None = None,
        notice: str | None = None,
        repo: Path | None = None,
        follow: bool = False,
        series: str = "",
    ) -> None:
        """`at_step` puts the cursor on that step once loaded, `notice` is shown then (the
        stand-alone view reopens so when a fork it asked for could not start), `repo` is the
        repository a fork starts from instead of the recorded one. With `follow`, a session
        still being recorded is followed as its file grows (the fleet view's attach), the
        cursor staying on the last step while it is there. `series` says which file of a
        folder this is ("2/5")."""
        super().__init__(name=name)
        self.path = Path(path)
        self.series = series
        self.follow = follow
        self._to_end = follow  # attach opens on the last step
        self._rows_shown = 0
        self._at_step = at_step
        self._notice = notice
        self._fork_repo = repo
        self._fork_step: int | None = None
        self.source: EventSource | None = None
        self.actor_filter = "all"
        self.kind_filter = "all"
        self.speed_index = 1
        self._player: Timer | None = None
        self._files: dict[str, str | None] = {}
        self._files_index = -1
        self._search_text = ""
        self._detail_index: int | None = None
        self._detail_timer: Timer | None = None
        self._detail_shown_at = 0.0
        self._first_frame = threading.Event()
        self._start_files: list[str] = []
        self._bars: dict[str, str] = {}
        self._gc_threshold = gc.get_threshold()
        self._idle_collect: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"Opening {self.path} …", id="replay-title")
        with Horizontal(id="replay-body"):
            with Vertical(id="replay-left"):
                yield Input(placeholder="/ search steps (Enter: next match)", id="replay-search")
                yield Static("", id="replay-filters")
                yield Timeline(id="replay-timeline", on_select=self._selected_index)
            with TabbedContent(id="replay-right"):
                with TabPane("Step", id="replay-tab-step"):
                    yield StepView(id="replay-detail")
                with TabPane("Files", id="replay-tab-files"), Horizontal():
                    yield OptionList(id="replay-files")
                    with VerticalScroll(id="replay-file-scroll"):
                        yield Static("", id="replay-file")
        with Vertical(id="replay-fork"):
            yield Static("", id="replay-fork-notice")
            yield Input(
                placeholder="path of the repository (Enter: fork, Esc: cancel)",
                id="replay-fork-repo",
            )
        yield Static("", id="replay-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Timeline).focus()
        self._gc_threshold = gc.get_threshold()
        young, middle, old = self._gc_threshold
        gc.set_threshold(young, middle, old * _FULL_GC_RARER)
        self._load()

    def on_unmount(self) -> None:
        gc.set_threshold(*self._gc_threshold)
        self._release()

    def _release(self) -> None:
        """Stop playing and following and close the file (the viewer closes, or moves to the
        next file of a folder)."""
        self._stop()
        self.follow = False  # the follow loop stops before the file closes under it
        self._first_frame.set()
        if self.source is not None:
            self.source.close()

    def _collect_while_idle(self) -> None:
        self._idle_collect = None
        gc.collect()

    # -- loading ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="replay-load")
    def _load(self) -> None:
        # Toolong-style: index a first chunk, show it, index the rest while the user reads.
        try:
            source = open_trajectory(self.path, lazy=True)
        except TrajectoryError as exc:
            self.post_message(self.Loaded(None, str(exc)))
            return
        if not isinstance(source, TrajectoryIndex):
            self._start_files = start_files(source.header)
            self.post_message(self.Loaded(source))
            self.post_message(self.Grew())
            return
        source.scan(_FIRST_CHUNK)
        self.post_message(self.Loaded(source))
        # Indexing holds the GIL; let the first frame paint before going on, and pause between
        # chunks so that the event loop is never starved while the rest is indexed.
        self._first_frame.wait(timeout=5)
        _warm_up_highlighting()
        self._start_files = start_files(source.header)
        worker = get_current_worker()
        chunks = 0
        while not source.scan(_CHUNK):
            if worker.is_cancelled:
                return
            chunks += 1
            if chunks % 8 == 0:
                self.post_message(self.Grew())
            time.sleep(0.001)
        self.post_message(self.Grew())
        while self.follow and not worker.is_cancelled:
            # A live session's file: what it appends shows within half a second.
            time.sleep(0.5)
            try:
                if self.follow and source.grow():
                    while not source.scan(_CHUNK) and not worker.is_cancelled:
                        time.sleep(0.001)
                    self.post_message(self.Grew())
            except (ValueError, OSError):  # the viewer closed the file meanwhile
                return

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        title = self.query_one("#replay-title", Static)
        if message.source is None:
            title.update(f"[b red]Cannot open:[/] {message.error}")
            self._first_frame.set()
            return
        self.source = message.source
        self._update_title()
        self.query_one(Timeline).set_source(message.source)
        self.call_after_refresh(self._first_frame.set)
        self._update_status()
        if self._at_step is not None:
            index = _index_of_step(message.source, self._at_step)
            if index is not None:
                self.query_one(Timeline).go_to_index(index)
        if self._notice:
            self.notify(self._notice, severity="error", timeout=15)

    @on(Grew)
    def _grew(self) -> None:
        if self.source is None:
            return
        timeline = self.query_one(Timeline)
        # The source has already grown when this arrives: "at the end" is judged against the
        # rows shown before this growth.
        stay = self.follow and (self._to_end or timeline.cursor >= self._rows_shown - 1)
        timeline.grow()
        self._rows_shown = timeline.row_count
        if stay and timeline.row_count:
            timeline.action_last()
            self._to_end = False
        self._update_title()
        self._update_status()
        scanned = not isinstance(self.source, TrajectoryIndex) or self.source.scanned
        filtered = self.actor_filter != "all" or self.kind_filter != "all"
        if filtered and scanned:
            self._filter()
        if scanned:
            _settle_heap()

    def _update_title(self) -> None:
        source = self.source
        if source is None:
            return
        header = source.header
        origin = f"  (from {header.imported.format})" if header.imported is not None else ""
        commit = (header.repo.commit or "")[:12]
        where = header.repo.source
        counted = f"{len(source)} steps"
        if isinstance(source, TrajectoryIndex) and not source.scanned:
            counted += " so far (indexing …)"
        parts = [f"[b]{self.path.name}[/]{origin}", counted]
        if self.series:
            parts.insert(0, f"file {self.series} (H/L)")
        if where:
            parts.append(f"{where}" + (f" @ {commit}" if commit else ""))
        if source.problem:
            parts.append(f"[red]stops early: {source.problem}[/]")
        self.query_one("#replay-title", Static).update("  ·  ".join(parts), layout=False)

    # -- selection -------------------------------------------------------------------------

    def _selected_index(self, index: int) -> None:
        """The timeline's cursor moved (called by the timeline as it moves, so that the detail
        and the status bar are painted in the same frame as the timeline's rows)."""
        if self.source is None:
            return
        self._update_status()
        if self._idle_collect is not None:
            self._idle_collect.stop()
        self._idle_collect = self.set_timer(_IDLE_COLLECT, self._collect_while_idle)
        # While the cursor moves quickly (playing, holding a key) the latest selection replaces
        # queued ones and the pane follows once it settles.
        self._detail_index = index
        now = time.monotonic()
        if not self._detail_shown_at:
            # The first step's detail waits for the first frame of the timeline.
            self._detail_shown_at = now
            self._detail_timer = self.set_timer(_DETAIL_SETTLE, self._show_detail)
        elif now - self._detail_shown_at > _DETAIL_SETTLE and self._detail_timer is None:
            self._show_detail()
        elif self._detail_timer is None:
            self._detail_timer = self.set_timer(_DETAIL_SETTLE, self._show_detail)

    def _show_detail(self) -> None:
        self._detail_timer = None
        index = self._detail_index
        if self.source is None or index is None:
            return
        self._detail_shown_at = time.monotonic()
        source = self.source
        # Keyed by the number of events too: while the file is still being indexed, a step's
        # observation may not be there yet.
        self.query_one(StepView).show(lambda: render_step(source, index), key=(index, len(source)))
        if self.query_one(TabbedContent).active == "replay-tab-files":
            self._compute_files(index)

    @property
    def shown_step(self) -> int | None:
        """The event index the detail pane shows (it may trail the cursor briefly)."""
        return self._detail_index if self._detail_timer is None else None

    def _update_status(self) -> None:
        timeline = self.query_one(Timeline)
        playing = "▶ playing" if self._player is not None else "⏸ paused"
        position = timeline.current_index
        total = len(self.source) if self.source is not None else 0
        shown = timeline.row_count
        where = f"step {position + 1 if position is not None else 0}/{total}"
        if shown != total:
            where += f" ({shown} shown)"
        self._set_bar(
            "#replay-status", f"{playing}  {SPEEDS[self.speed_index]:g} steps/s   {where}"
        )
        self._set_bar(
            "#replay-filters",
            f"actor: [b]{self.actor_filter}[/] (a)   kind: [b]{self.kind_filter}[/] (t)",
        )

    def _set_bar(self, selector: str, text: str) -> None:
        """One-line bars of fixed height: repainted without a layout pass, and only when their
        text changes (an unchanged bar repainted would widen the frame's dirty area)."""
        if self._bars.get(selector) != text:
            self._bars[selector] = text
            self.query_one(selector, Static).update(text, layout=False)

    # -- files at the step -----------------------------------------------------------------

    def action_show_files(self) -> None:
        self.query_one(TabbedContent).active = "replay-tab-files"
        index = self.query_one(Timeline).current_index
        if index is not None:
            self._compute_files(index)

    def action_show_step(self) -> None:
        self.query_one(TabbedContent).active = "replay-tab-step"

    @work(thread=True, exclusive=True, group="replay-files")
    def _compute_files(self, index: int) -> None:
        if self.source is None or index == self._files_index:
            return
        files = workspace_at(self.source, index)
        if not get_current_worker().is_cancelled:
            self.post_message(self.FilesReady(index, files))

    @on(FilesReady)
    def _files_ready(self, message: FilesReady) -> None:
        self._files, self._files_index = message.files, message.index
        options = self.query_one("#replay-files", OptionList)
        options.clear_options()
        # The recorded start's files (when the repository is here) plus every file the steps
        # so far changed; changed ones are marked, deleted ones struck through.
        paths = sorted(set(self._start_files) | set(message.files))
        for path in paths:
            if path not in message.files:
                prompt = Text(f"  {path}")
            elif message.files[path] is None:
                prompt = Text(f"- {path}", style="strike dim")
            else:
                prompt = Text(f"● {path}", style="bold")
            options.add_option(Option(prompt, id=path))
        view = self.query_one("#replay-file", Static)
        changed = [p for p in paths if p in message.files]
        if changed:
            options.highlighted = paths.index(changed[0])
        elif paths:
            options.highlighted = 0
        else:
            view.update(
                "No file has been changed by this step, and the recorded repository is not on"
                " this machine to show the others."
            )

    @on(OptionList.OptionHighlighted, "#replay-files")
    def _file_highlighted(self, message: OptionList.OptionHighlighted) -> None:
        path = message.option.id
        if path is None:
            return
        view = self.query_one("#replay-file", Static)
        if path in self._files:
            view.update(render_file(path, self._files[path]))
        else:
            view.update(f"Reading {path} at the recorded commit …")
            self._read_start_file(path)

    @work(thread=True, exclusive=True, group="replay-file")
    def _read_start_file(self, path: str) -> None:
        if self.source is not None:
            self.post_message(self.FileText(path, start_text(self.source.header, path)))

    @on(FileText)
    def _file_text(self, message: FileText) -> None:
        options = self.query_one("#replay-files", OptionList)
        highlighted = options.highlighted
        if highlighted is None or options.get_option_at_index(highlighted).id != message.path:
            return
        self.query_one("#replay-file", Static).update(render_file(message.path, message.text))

    # -- playing and jumping ---------------------------------------------------------------

    def action_toggle_play(self) -> None:
        if self._player is not None:
            self._stop()
        else:
            self._player = self.set_interval(1 / SPEEDS[self.speed_index], self._tick)
        self._update_status()

    def pause(self) -> None:
        """Stop playing (the viewer moves to another file)."""
        self._stop()
        self._update_status()

    def _stop(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player = None

    def _tick(self) -> None:
        timeline = self.query_one(Timeline)
        if timeline.cursor >= timeline.row_count - 1:
            self._stop()
            self._update_status()
            return
        timeline.action_move(1)

    def action_speed(self, delta: int) -> None:
        self.speed_index = max(0, min(len(SPEEDS) - 1, self.speed_index + delta))
        if self._player is not None:
            self._stop()
            self._player = self.set_interval(1 / SPEEDS[self.speed_index], self._tick)
        self._update_status()

    def action_next_edit(self) -> None:
        self._seek("edit")

    def action_next_failure(self) -> None:
        self._seek("failure")

    @work(thread=True, exclusive=True, group="replay-seek")
    def _seek(self, what: str, text: str = "", direction: int = 1) -> None:
        source = self.source
        start = self.query_one(Timeline).current_index
        if source is None or start is None:
            return
        worker = get_current_worker()
        found: int | None = None
        if what == "text":
            found = (
                source.search(text, start + direction, backward=direction < 0)
                if 0 <= start + direction < len(source)
                else None
            )
        else:
            for index in range(start + 1, len(source)):
                if worker.is_cancelled:
                    return
                _, kind = source.meta(index)
                if what == "edit" and (
                    kind in EDIT_KINDS or (kind == Kind.EXEC and _edits_by_command(source, index))
                ):
                    found = index
                    break
                if what == "failure" and kind in (Kind.EXEC_RESULT, Kind.TEST_RESULT, Kind.ERROR):
                    try:
                        data = source.event(index).data
                    except (TrajectoryError, WireError):
                        continue
                    results = ExecResultPayload | TestResultPayload
                    code = data.exit_code if isinstance(data, results) else None
                    if kind == Kind.ERROR or (code not in (0, None)):
                        found = index
                        break
        self.post_message(self.Found(found, what))

    @on(Found)
    def _found(self, message: Found) -> None:
        if message.index is None:
            label = {"edit": "edit", "failure": "failure"}.get(message.what, "match")
            self.notify(f"No further {label}.", timeout=2)
            return
        self.query_one(Timeline).go_to_index(message.index)

    # -- search and filters ----------------------------------------------------------------

    def action_focus_search(self) -> None:
        self.query_one("#replay-search", Input).focus()

    @on(Input.Submitted, "#replay-search")
    def _search(self, message: Input.Submitted) -> None:
        self._search_text = message.value
        if self._search_text:
            self._seek("text", self._search_text, 1)
        self.query_one(Timeline).focus()

    def action_search_next(self, direction: int) -> None:
        if self._search_text:
            self._seek("text", self._search_text, direction)

    def action_cycle_actor(self) -> None:
        self.actor_filter = ACTORS[(ACTORS.index(self.actor_filter) + 1) % len(ACTORS)]
        self._filter()

    def action_cycle_kind(self) -> None:
        names = list(KIND_GROUPS)
        self.kind_filter = names[(names.index(self.kind_filter) + 1) % len(names)]
        self._filter()

    def _filter(self) -> None:
        self._update_status()
        self._compute_rows(self.actor_filter, self.kind_filter)

    @work(thread=True, exclusive=True, group="replay-filter")
    def _compute_rows(self, actor: str, group: str) -> None:
        source = self.source
        if source is None:
            return
        if actor == "all" and group == "all":
            self.post_message(self.RowsReady(None))
            return
        prefixes = KIND_GROUPS[group]
        rows = array("q")
        worker = get_current_worker()
        for index in range(len(source)):
            if index % 4096 == 0 and worker.is_cancelled:
                return
            event_actor, kind = source.meta(index)
            if (actor == "all" or event_actor == actor) and _kind_matches(kind, prefixes):
                if (
                    group == "commands"
                    and kind == Kind.TERMINAL_INPUT
                    and not _entered(source, index)
                ):
                    continue  # keys that ran no command line (^C, a pause, a program's keys)
                rows.append(index)
        self.post_message(self.RowsReady(rows))

    @on(RowsReady)
    def _rows_ready(self, message: RowsReady) -> None:
        self.query_one(Timeline).set_rows(message.rows)
        self._update_status()

    # -- forking ---------------------------------------------------------------------------

    def action_fork(self) -> None:
        index = self.query_one(Timeline).current_index
        if self.source is None or index is None:
            return
        try:
            step = self.source.event(index).seq
        except TrajectoryError:
            return
        self._fork_step = step
        problem = fork_problem(self.source.header, self._fork_repo)
        if problem is None:
            self._hide_fork_bar()
            self.post_message(self.ForkRequested(self.path, step, self._fork_repo))
            return
        # The start cannot be rebuilt from what the file records (an imported trajectory names
        # no repository, or one that is not on this machine): ask for a copy of it.
        self.query_one("#replay-fork-notice", Static).update(
            f"To fork at step {step}: {problem}", layout=False
        )
        self.query_one("#replay-fork").display = True
        box = self.query_one("#replay-fork-repo", Input)
        if self._fork_repo is not None and not box.value:
            box.value = str(self._fork_repo)
        box.focus()

    @on(Input.Submitted, "#replay-fork-repo")
    def _fork_repo_given(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        if not text:
            return
        self._fork_repo = Path(text).expanduser()
        self.action_fork()

    def _hide_fork_bar(self) -> None:
        bar = self.query_one("#replay-fork")
        if bar.display:
            bar.display = False
            self.query_one(Timeline).focus()

    def action_escape(self) -> None:
        """Esc steps back one level: out of the search box or the fork's repository box (to
        the timeline), from the Files tab to the Step tab, out of the step pane, then clears the
        filters. It never closes the viewer (q does): an Esc too many lost the place."""
        timeline = self.query_one(Timeline)
        if self.focused is self.query_one("#replay-search", Input):
            timeline.focus()
            return
        if self.query_one("#replay-fork").display:
            self._hide_fork_bar()
            return
        tabs = self.query_one(TabbedContent)
        if tabs.active == "replay-tab-files":
            tabs.active = "replay-tab-step"
            timeline.focus()
            return
        if self.focused is not timeline:
            timeline.focus()
            return
        if (self.actor_filter, self.kind_filter) != ("all", "all"):
            self.actor_filter = self.kind_filter = "all"
            self._filter()
            return
        self.notify("q closes the replay viewer.", timeout=3)

    def action_close(self) -> None:
        self._release()
        if isinstance(self.app, ReplayApp) or len(self.app.screen_stack) <= 1:
            self.app.exit()
        else:
            self.app.pop_screen()


@dataclass(frozen=True)
class ForkChoice:
    """Where the person asked the stand-alone view to fork: the step, and the repository to
    start from when the recorded one is not on this machine."""

    step: int
    repo: Path | None = None
    path: Path | None = None  # the trajectory forked (one of a folder's); None: the one opened


def fork_problem(header: TrajectoryHeader, repo: Path | None) -> str | None:
    """Why a fork could not rebuild the recorded start from `repo` (None: the recorded
    repository), in a sentence for the viewer; None when it can."""
    if repo is None and not header.repo.source:
        return "the trajectory records no repository to start from; type the path of a copy."
    if repo is not None and not repo.is_dir():
        return f"{repo} is not a folder on this machine; type the path of a copy of the repository."
    # Imported here: re-execution brings the session and backends, which viewing never needs.
    from simulator.replay.reexec import StartError, plan_start

    try:
        # Whether the start can be rebuilt does not depend on where the commands will run
        # (that is asked, line by line, when the fork starts): checked as for a container.
        plan_start(header, repo=repo, backend_kind="docker")
    except StartError as exc:
        if repo is None and not Path(header.repo.source or "").is_dir():
            return (
                f"the recorded repository {header.repo.source} is not on this machine;"
                " type the path of a copy."
            )
        return str(exc)
    return None


def _index_of_step(source: EventSource, step: int) -> int | None:
    """The index of the event numbered `step` (steps are numbered from 1 in order, so it is
    found at or before index step - 1)."""
    for index in range(min(step, len(source)) - 1, -1, -1):
        try:
            seq = source.event(index).seq
        except TrajectoryError:
            continue
        if seq == step:
            return index
        if seq < step:
            return None
    return None


class ReplayApp(KeyOrderedApp[ForkChoice | None]):
    """`reposim replay FILE` (or FOLDER): the replay screen on its own. Its result is where the
    person asked to fork, if they did (the CLI then forks and opens the session in the main UI).
    Given the trajectories of a folder (`files`), H and L move to the previous and the next one,
    as mini-swe-agent's inspector does."""

    TITLE = "RepoSim replay"
    # Textual loads a screen's CSS_PATH when the screen is pushed, not for the default screen:
    # without this the stand-alone view is laid out without replay.tcss (a one-column timeline).
    CSS_PATH = ReplayScreen.CSS_PATH
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("replay_app"))

    def __init__(
        self,
        path: Path | str,
        *,
        at_step: int | None = None,
        notice: str | None = None,
        repo: Path | None = None,
        files: list[Path] | None = None,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.files = list(files) if files else [self.path]
        self._file_index = self.files.index(self.path) if self.path in self.files else 0
        self._repo = repo
        self._screen_options = {"at_step": at_step, "notice": notice, "repo": repo}

    def _series(self) -> str:
        return f"{self._file_index + 1}/{len(self.files)}" if len(self.files) > 1 else ""

    def get_default_screen(self) -> Screen[None]:
        # The replay screen is the app's first screen: no blank default screen to lay out first.
        return ReplayScreen(self.path, series=self._series(), **self._screen_options)  # type: ignore[arg-type]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "other_file":
            return len(self.files) > 1 and isinstance(self.screen, ReplayScreen)
        return True

    def action_other_file(self, step: int) -> None:
        """The previous or next trajectory of the folder (wrapping), from its first step; the
        first file opened is the app's default screen, kept where it was under the others."""
        if isinstance(self.screen, ReplayScreen):
            self.screen.pause()
        self._file_index = (self._file_index + step) % len(self.files)
        self.path = self.files[self._file_index]
        first = self.screen_stack[0]
        if isinstance(first, ReplayScreen) and first.path == self.path:
            while len(self.screen_stack) > 1:
                self.pop_screen()
            return
        screen = ReplayScreen(self.path, series=self._series(), repo=self._repo)
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    @on(ReplayScreen.ForkRequested)
    def _fork(self, message: ReplayScreen.ForkRequested) -> None:
        self.exit(ForkChoice(message.step, message.repo, message.path))
