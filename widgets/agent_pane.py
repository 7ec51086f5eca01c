"""The agent pane: the session's events as readable cards, and the agent's run under the
person's control — task input, mode switch (human / confirm / auto), approval prompts, budgets.

The app calls `add_event` for every session event. The agent itself lives in the engine
(`simulator.agent`) and is built by the composition root (reposim.ui): the pane is given the
agent, or a way to connect one on the first task, starts it, listens to its state and forwards
the person's decisions. It never reaches the backend, and asks the editor to follow the agent by
a message (FollowFile), not by reaching into it.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.console import Console, Group, RenderableType
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static, Tab, Tabs

from simulator.agent import Agent, AgentConfig, Mode, ModelClient, ModelConfigError
from simulator.checkpoint_repo import HELPER_DIR
from simulator.events import (
    TRANSIENT_KINDS,
    Actor,
    Event,
    FileChangePayload,
    FileReadPayload,
    Kind,
)
from simulator.session import Session, SessionError
from widgets.agent_cards import card_style, render_card
from widgets.card_parts import diff_renderable
from widgets.keybindings import default_bindings
from widgets.palette import PaletteAction

# Cards kept on screen; older ones are dropped (the trajectory keeps everything).
MAX_CARDS = 400
# Kinds the pane leaves out: the status line says a model call is running, the terminal shows
# its own traffic.
HIDDEN_KINDS = frozenset(
    {Kind.CHECKPOINT, Kind.TERMINAL_INPUT, Kind.TERMINAL_OUTPUT, Kind.TERMINAL_SIZE, Kind.LLM_CALL}
)
# File events of the agent that the editor follows (opens the file at the change).
FOLLOWED_KINDS = frozenset({Kind.FILE_READ, Kind.FILE_EDIT, Kind.FILE_WRITE, Kind.FILE_CREATE})
FILE_KINDS = FOLLOWED_KINDS | {Kind.FILE_DELETE, Kind.FILE_RENAME}
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)", re.MULTILINE)

RUNTIME_PREFIXES = (f"{HELPER_DIR}/", ".reposim-perf/")


def _runtime_file(event: Event) -> bool:
    """A file event on RepoSim's own files in the workspace (the harness runtime, a trace spec,
    perf tools): none of the person's or the agent's work."""
    path = event.payload.get("path")
    return event.kind in FILE_KINDS and isinstance(path, str) and path.startswith(RUNTIME_PREFIXES)


def _hunks(diff: str) -> str:
    """A diff without its `---` / `+++` file header, which the question already names: at
    80x24 the header took the rows the change itself needed."""
    lines = diff.splitlines()
    while lines and lines[0].startswith(("--- ", "+++ ", "diff ", "index ")):
        lines.pop(0)
    return "\n".join(lines)


AgentConnect = Callable[[], Awaitable[Agent]]
"""Builds an agent when the person gives a task and none was configured (a model from the
environment); raises ModelConfigError, in one sentence, when there is none."""
PLACEHOLDERS = (
    "Task for the agent (Enter), or $ command to run yourself",
    "Task for the agent, or $ command",
    "Task, or $ command",
    "Task / $ cmd",
)
PLACEHOLDERS_WITHOUT_MODEL = (
    "Task for the agent (model from $REPOSIM_MODEL), or $ command",
    "Task for the agent, or $ command",
    "Task, or $ command",
    "Task / $ cmd",
)
"""Hints for the task input, longest first: it shows the longest that fits the pane."""
NO_AGENT = "No model is configured for this session; start RepoSim with --model provider/name."


HINT_EVERY = 5.0  # seconds between two "these keys steer the agent" notices
STEER_KEYS_HINT = (
    "Keys here steer the agent (p pause, c confirm, g auto, i interrupt, s stop). "
    "To type: t for a task, Alt+2 for the editor."
)


class EventCard(Static):
    """One event, rendered by `widgets.agent_cards.render_card`."""

    DEFAULT_CSS = """
    EventCard { padding: 0 1; margin: 0 0 0 0; }
    EventCard.-thought { border-left: thick $accent; }
    EventCard.-bad { border-left: thick $error; }
    EventCard.-good { border-left: thick $success; }
    EventCard.-finish { border: round $success; }
    """

    def __init__(self, event: Event, content: RenderableType) -> None:
        super().__init__(content, classes=card_style(event))
        self.event = event
        self._content = content

    def plain_text(self, width: int = 100) -> str:
        """The card as plain text (for tests and copying)."""
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(self._content)
        return console.export_text()


class CardList(VerticalScroll):
    """The cards, following the newest while the person is at the bottom.

    Once the cards overflow the list it is anchored: Textual then keeps it at the newest card
    through every layout, however many cards arrive between two frames, until the person scrolls
    up (they are reading); back at the bottom, it follows again. Checking "at the end?" before
    each mount and scrolling after the next refresh lost cards that arrived between a layout and
    that deferred scroll. Anchored from the start, a short list would sit at the pane's bottom.
    """

    def watch_virtual_size(self) -> None:
        self.call_after_refresh(self._anchor_when_full)  # sizes settle with the layout

    def on_resize(self) -> None:
        self.call_after_refresh(self._anchor_when_full)

    def _anchor_when_full(self) -> None:
        full = self.max_scroll_y > 0
        if full and not self.is_anchored:
            self.anchor()
        elif not full and self.is_anchored:  # e.g. the pane grew: the cards start at the top
            self.anchor(False)
            self.scroll_target_y = self.scroll_y = 0


class ApprovalPrompt(Vertical, can_focus=True):
    """What the agent wants to do, waiting for a = approve or r = reject with a reason."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("agent_approval"))

    DEFAULT_CSS = """
    ApprovalPrompt {
        height: auto; border: heavy $warning; padding: 0 1; display: none;
    }
    ApprovalPrompt #approval-scroll { height: auto; max-height: 50vh; }
    ApprovalPrompt #approval-keys { height: auto; }
    ApprovalPrompt #approval-reason { height: 3; }
    ApprovalPrompt:focus { border: heavy $accent; }
    ApprovalPrompt #approval-reason { display: none; }
    ApprovalPrompt.-reasoning #approval-reason { display: block; }
    """

    @dataclass
    class Decided(Message):
        approved: bool
        reason: str = ""

    def compose(self) -> ComposeResult:
        # The edit scrolls within half the screen (the cards above give way while a question
        # waits); the keys and the reason stay visible.
        with VerticalScroll(id="approval-scroll"):
            yield Static(id="approval-what")
        yield Static(Text("a approve · r reject with a reason", style="bold"), id="approval-keys")
        yield Input(placeholder="Why not? (Enter sends it to the agent)", id="approval-reason")

    description = ""
    asker = "The agent"  # who is asking (a workflow's prompt says which workflow)

    def ask(self, description: str, diff: str | None) -> None:
        self.description = description
        what = self.query_one("#approval-what", Static)
        title = Text(f"{self.asker} wants to: ", style="bold yellow")
        title.append(description)
        if diff:
            what.update(Group(title, diff_renderable(_hunks(diff), 15)))
        else:
            what.update(title)
        self.remove_class("-reasoning")
        self.query_one("#approval-reason", Input).value = ""
        self.query_one("#approval-scroll", VerticalScroll).scroll_home(animate=False)
        self.display = True
        self.focus()

    def close(self) -> None:
        self.display = False
        self.remove_class("-reasoning")

    def action_approve(self) -> None:
        self.post_message(self.Decided(True))

    def action_reject(self) -> None:
        self.add_class("-reasoning")
        self.query_one("#approval-reason", Input).focus()

    def action_back(self) -> None:
        self.remove_class("-reasoning")
        self.focus()

    @on(Input.Submitted, "#approval-reason")
    def _reason(self, message: Input.Submitted) -> None:
        message.stop()
        self.post_message(self.Decided(False, message.value))


class AgentPane(Widget):
    """The session's events as cards, and the agent's run under the person's control."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("agent"))

    DEFAULT_CSS = """
    AgentPane { width: 1fr; height: 1fr; layout: vertical; }
    AgentPane #agent-status { height: 1; padding: 0 1; background: $boost; }
    AgentPane #agent-modes { height: 2; }
    AgentPane #agent-keys { height: 1; padding: 0 1; }
    AgentPane #agent-cards { height: 1fr; }
    AgentPane #agent-task { dock: bottom; }
    """

    class AgentChanged(Message):
        """The agent's mode, state, usage or pending approval changed."""

    @dataclass
    class FollowFile(Message):
        """The agent read or changed `path` (at `line`): whoever shows files may show it."""

        path: str
        line: int | None

    def __init__(
        self,
        session: Session,
        agent_config: AgentConfig | None = None,
        *,
        agent: Agent | None = None,
        connect: AgentConnect | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.session = session
        self.config = agent_config or AgentConfig()
        self.agent: Agent | None = None
        self._connect = connect
        self.running = False
        self.follow = True  # open the files the agent reads and edits in the editor
        self._keys_hinted_at = -HINT_EVERY  # when a stray letter last said where the keys are
        self._working_mode: Mode = (
            self.config.mode if self.config.mode is not Mode.HUMAN else Mode.AUTO
        )
        if agent is not None:
            self._adopt(agent)

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="agent-status")
        yield Tabs(
            Tab("human", id="mode-human"),
            Tab("confirm", id="mode-confirm"),
            Tab("auto", id="mode-auto"),
            active=f"mode-{self.config.mode}",
            id="agent-modes",
        )
        yield Static(
            Text(
                "p pause · c confirm · g auto · i interrupt · s stop · t task · esc back",
                style="dim",
            ),
            id="agent-keys",
        )
        yield CardList(id="agent-cards")
        yield ApprovalPrompt(id="agent-approval")
        yield Input(placeholder=self._placeholder(), id="agent-task")

    def on_mount(self) -> None:
        self._refresh_status()
        self.set_interval(1.0, self._tick)
        if self.agent is not None and self.config.task:
            # After the first refresh: by then the app has subscribed to the session and
            # settled its focus, so it sees the run's first events and the first question.
            self.call_after_refresh(self._autostart, self.config.task)

    def _autostart(self, task: str) -> None:
        # A run that starts by itself (the demo) takes the keyboard, so p / i / s work at once.
        self.query_one("#agent-cards").focus()
        self.start(task)

    def _placeholder(self, width: int | None = None) -> str:
        """The longest hint that fits the task input's `width` columns (all of it when None)."""
        hints = PLACEHOLDERS_WITHOUT_MODEL if self.agent is None else PLACEHOLDERS
        for hint in hints:
            if width is None or len(hint) <= width:
                return hint
        return hints[-1]

    def on_resize(self) -> None:
        task = self.query_one("#agent-task", Input)
        # The input's text area: its width less the border, padding and the cursor's cell.
        task.placeholder = self._placeholder(self.size.width - 7)

    # -- the session's events ----------------------------------------------------------------

    def add_event(self, event: Event) -> None:
        """Show one session event as a card (live output chunks are left to the terminal)."""
        if event.kind in TRANSIENT_KINDS or not self.is_attached:
            return
        if event.kind in FOLLOWED_KINDS and event.actor is Actor.AGENT:
            self._follow(event)
        if event.kind in HIDDEN_KINDS or (
            event.kind == Kind.FILE_READ and event.actor is Actor.HUMAN
        ):
            return  # opening a file in the editor is not news
        if event.actor is Actor.SYSTEM and _runtime_file(event):
            return  # a workflow's own plumbing (.reposim/): its step and result cards say it
        try:
            cards = self.query_one("#agent-cards", CardList)
        except NoMatches:  # not composed yet, or already torn down
            return
        content = render_card(event)
        if isinstance(content, Text) and not content.plain:
            return  # a step another card already shows
        cards.mount(EventCard(event, content))
        overflow = len(cards.children) - MAX_CARDS
        if overflow > 0:
            for old in list(cards.children)[:overflow]:
                old.remove()

    def _follow(self, event: Event) -> None:
        """Ask for the file the agent is working on to be shown, at its change."""
        if not self.follow:
            return
        data = event.data
        path = data.path if isinstance(data, FileChangePayload | FileReadPayload) else ""
        diff = data.diff if isinstance(data, FileChangePayload) else None
        hunk = _HUNK.search(diff or "")
        line = int(hunk.group(1)) + 3 if hunk else None  # difflib puts 3 lines of context first
        if path:
            self.post_message(self.FollowFile(path, line))

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        self.notify("The editor follows the agent." if self.follow else "Follow is off.")

    # -- the agent ---------------------------------------------------------------------------

    def _adopt(self, agent: Agent) -> Agent:
        def changed(_agent: Agent) -> None:
            self.post_message(self.AgentChanged())

        agent.listeners.append(changed)
        self.agent = agent
        return agent

    def start(self, task: str) -> None:
        """Give the agent a task (the first one, or a new one after it finished)."""
        if self.running:
            self.notify("The agent is still working; pause (p) or stop (s) it first.")
            return
        if self.agent is not None and self.agent.mode is Mode.HUMAN:
            # Giving the agent a task means letting it work: back to the last working mode.
            self.agent.set_mode(self._working_mode)
        self.running = True
        self._run(task)

    @work(exclusive=True, group="agent-run")
    async def _run(self, task: str) -> None:
        try:
            agent = self.agent
            if agent is None:
                agent = await self._agent_from_environment()
                if agent is None:
                    return
            await agent.run(task)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
        finally:
            self.running = False
            self._refresh_status()

    async def _agent_from_environment(self) -> Agent | None:
        """No agent was configured: have one connected (a model from the environment)."""
        if self._connect is None:
            self.notify(NO_AGENT, severity="error", timeout=10)
            return None
        self.notify("Loading the model client…")
        try:
            agent = await self._connect()
        except ModelConfigError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return None
        return self._adopt(agent)

    @property
    def confirming(self) -> bool:
        """Whether the person chose confirm mode (for the agent, and for workflows)."""
        mode = self.agent.mode if self.agent is not None else self.config.mode
        return mode is Mode.CONFIRM

    async def model_client(self) -> ModelClient | None:
        """The model the agent uses (connected from the environment if none was configured),
        for workflows started from the UI; None, after saying why, when there is none."""
        agent = self.agent or await self._agent_from_environment()
        return agent.client if agent is not None else None

    @on(AgentChanged)
    def _agent_changed(self, message: AgentChanged) -> None:
        message.stop()
        self._refresh_status()
        agent = self.agent
        prompt = self.query_one(ApprovalPrompt)
        if agent is not None and agent.state == "approval" and agent.pending is not None:
            diff = agent.pending.payload.get("diff")
            prompt.ask(agent.pending.description, str(diff) if diff else None)
        elif prompt.display:
            prompt.close()
        if agent is not None:
            tabs = self.query_one("#agent-modes", Tabs)
            if tabs.active != f"mode-{agent.mode}":
                tabs.active = f"mode-{agent.mode}"

    def _tick(self) -> None:
        if self.running:
            self._refresh_status()  # the wall-time figure moves on its own

    def _refresh_status(self) -> None:
        try:
            status = self.query_one("#agent-status", Static)
        except NoMatches:
            return
        text = Text()
        title = self.config.title or "AGENT"
        text.append(f"{title}  ", style="bold")
        agent = self.agent
        if agent is None:
            text.append("no model configured", style="dim")
            status.update(text)
            return
        text.append(f"{agent.mode} · {agent.state}", style="bold")
        usage, budgets = agent.usage, agent.budgets

        def limit(value: float | None, fmt: str = "{}") -> str:
            return f"/{fmt.format(value)}" if value is not None else ""

        cost = f"${usage.cost:.4f}" if usage.cost_known else "cost ?"
        text.append(
            f"  steps {usage.steps}{limit(budgets.max_steps)}"
            f"  tokens {usage.tokens}{limit(budgets.max_tokens)}"
            f"  {cost}{limit(budgets.max_cost, '${:.2f}')}"
            f"  {usage.elapsed:.0f}s{limit(budgets.max_time, '{:.0f}s')}",
            style="dim",
        )
        status.update(text)

    # -- the person's controls ---------------------------------------------------------------

    @on(Tabs.TabActivated, "#agent-modes")
    def _mode_tab(self, message: Tabs.TabActivated) -> None:
        message.stop()
        mode = str(message.tab.id or "").removeprefix("mode-")
        if mode and mode != Mode.HUMAN:
            self._working_mode = Mode(mode)
        if self.agent is not None and mode and mode != self.agent.mode:
            self.agent.set_mode(Mode(mode))
        self.config.mode = Mode(mode) if mode else self.config.mode

    def action_mode(self, mode: str) -> None:
        self.query_one("#agent-modes", Tabs).active = f"mode-{mode}"

    async def action_interrupt(self) -> None:
        if self.agent is not None and self.running:
            await self.agent.interrupt()

    def action_stop(self) -> None:
        if self.agent is not None and self.running:
            self.agent.stop()

    def action_focus_cards(self) -> None:
        self.query_one("#agent-cards").focus()

    def palette_actions(self) -> list[PaletteAction]:
        """The agent's commands (its keys when the pane has the focus), for the command palette."""
        return [
            PaletteAction(
                "Agent: new task…", "t: type a task, or $ command", self.action_focus_task
            ),
            PaletteAction(
                "Agent: pause (the person takes over)", "p", lambda: self.action_mode("human")
            ),
            PaletteAction(
                "Agent: confirm each action",
                "c: approve or reject every action (and a workflow's)",
                lambda: self.action_mode("confirm"),
            ),
            PaletteAction(
                "Agent: go (auto)", "g: act without asking", lambda: self.action_mode("auto")
            ),
            PaletteAction(
                "Agent: interrupt", "i: cancel the model call or command", self.action_interrupt
            ),
            PaletteAction("Agent: stop the run", "s", self.action_stop),
            PaletteAction(
                "Agent: answer the pending approval",
                "Alt+4 also goes to it: a approve · r reject",
                self.action_answer_pending,
            ),
            PaletteAction(
                "Agent: follow in the editor (on/off)",
                "f: open the files the agent edits",
                self.action_toggle_follow,
            ),
        ]

    def action_focus_task(self) -> None:
        self.query_one("#agent-task", Input).focus()

    def on_key(self, event: events.Key) -> None:
        """A letter typed at the cards that is none of their keys comes from a person who thinks
        the keyboard is elsewhere (the editor shows the agent's file, its cursor in the status
        bar, but following never takes the keyboard): say where the keys are and how to move
        them, at most every few seconds, rather than drop them without a sign."""
        if not event.is_printable or event.key in self.screen.active_bindings:
            return
        if self.app.focused is not self.query_one("#agent-cards"):
            return  # the task input types them; a question's reason field too
        now = time.monotonic()
        if now - self._keys_hinted_at >= HINT_EVERY:
            self._keys_hinted_at = now
            self.notify(STEER_KEYS_HINT)

    def pending_prompt(self) -> Widget | None:
        """Where the keyboard answers a question waiting for the person (the agent's or a
        workflow's approval; its reason field once r was pressed), or None."""
        for prompt in self.query(ApprovalPrompt):
            if prompt.display:
                reasoning = prompt.has_class("-reasoning")
                return prompt.query_one("#approval-reason") if reasoning else prompt
        return None

    def keyboard_target(self) -> Widget:
        """Where Alt+4 / Tab put the keyboard in the pane: a pending question first, else the
        task input, so text typed there never lands on the cards' one-key actions (Esc from
        the input reaches them)."""
        return self.pending_prompt() or self.query_one("#agent-task", Input)

    def action_answer_pending(self) -> None:
        target = self.pending_prompt()
        if target is None:
            self.notify("No approval is waiting for you.")
            return
        self.display = True
        target.focus()

    @on(ApprovalPrompt.Decided)
    def _decided(self, message: ApprovalPrompt.Decided) -> None:
        message.stop()
        if self.agent is None:
            return
        if message.approved:
            self.agent.approve()
        else:
            self.agent.reject(message.reason)
        self.query_one(ApprovalPrompt).close()
        self.query_one("#agent-cards").focus()

    @on(Input.Submitted, "#agent-task")
    def _task_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        text = message.value.strip()
        if not text:
            return
        message.input.value = ""
        if text.startswith("$"):
            self._run_command(text[1:].strip())
        elif self.running and self.agent is not None:
            self.agent.tell(text)
            self.notify("Sent to the agent; it reads it before its next step.")
        else:
            self.start(text)

    @work(group="agent-human")
    async def _run_command(self, command: str) -> None:
        """The person acts: a command typed in the pane runs in the session as theirs."""
        if not command:
            return
        try:
            await self.session.exec(command, actor=Actor.HUMAN, timeout=600)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
