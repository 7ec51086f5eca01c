"""A fleet session attached: its trajectory followed as it grows (the replay viewer), and where
the session is still running on this machine, take-over — pause the agent after its step, run
commands in its terminal, edit a file, tell it something, let it go on.

What the person does goes through the session itself (simulator/agent/control.py), so it is
recorded in the same trajectory as the person's and shows up here as the file grows; the agent
is told about it when it resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TextArea

from simulator.agent.control import ControlClient, ControlError
from widgets.keybindings import default_bindings
from widgets.replay import screen as replay_screen
from widgets.replay.screen import ReplayScreen
from widgets.replay.timeline import Timeline

_OUTPUT_LINES = 10


class AttachedScreen(ReplayScreen):
    """The replay viewer following a live session, with take-over keys."""

    CSS_PATH = str(Path(replay_screen.__file__).with_name("replay.tcss"))
    DEFAULT_CSS = """
    #takeover {
        height: auto;
        display: none;
        background: $boost;
        border-top: solid $warning;
    }
    #takeover.shown {
        display: block;
    }
    #takeover-state {
        height: auto;
        padding: 0 1;
        color: $warning;
        text-style: bold;
    }
    #takeover-output {
        height: auto;
        max-height: 12;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("fleet_attached"))

    @dataclass
    class Answer(Message):
        """What the session said to a take-over request (or why it could not)."""

        op: str
        answer: dict[str, object] | None
        error: str = ""

    def __init__(self, path: Path | str, **options: object) -> None:
        super().__init__(path, follow=True, **options)  # type: ignore[arg-type]
        self.taken = False
        self._box_purpose = "command"  # command | path | message
        self.last_answer: dict[str, object] | None = None
        self.answers = 0  # requests answered (tests wait on it)

    def compose(self) -> ComposeResult:
        yield from super().compose()
        with Vertical(id="takeover"):
            yield Static("", id="takeover-state")
            yield Static("", id="takeover-output")
            yield Input(id="takeover-input")

    def on_mount(self) -> None:
        # Textual calls ReplayScreen.on_mount too (handlers run for each class of the MRO).
        self._say_if_live()

    @work(thread=True, group="takeover-probe")
    def _say_if_live(self) -> None:
        client = ControlClient.for_trajectory(self.path)
        if client is None:
            return
        try:
            status = client.request("status")
        except ControlError:
            return
        self.app.call_from_thread(
            self.notify,
            f"This session is running (agent {status.get('state')}): p pauses its agent after "
            "its step and gives you its terminal.",
            timeout=8,
        )

    # -- requests --------------------------------------------------------------------------

    @work(thread=True, group="takeover")
    def _request(self, op: str, fields: dict[str, object]) -> None:
        client = ControlClient.for_trajectory(self.path)
        if client is None:
            self.post_message(
                self.Answer(
                    op,
                    None,
                    "Read-only: this session is not running on this machine any more (or never "
                    "was), so it cannot be taken over.",
                )
            )
            return
        try:
            self.post_message(self.Answer(op, client.request(op, **fields)))
        except ControlError as exc:
            self.post_message(self.Answer(op, None, str(exc)))

    @on(Answer)
    def _answered(self, message: Answer) -> None:
        self.answers += 1
        self.last_answer = message.answer
        if message.answer is None:
            self.notify(message.error, severity="error" if self.taken else "warning")
            self._set_state(message.error if self.taken else "")
            return
        answer = message.answer
        if message.op == "pause":
            self.taken = True
            self._show_bar()
            self._ask("command")
        elif message.op == "resume":
            self.taken = False
            self.query_one("#takeover").remove_class("shown")
            self.query_one(Timeline).focus()
            self.notify("The agent goes on; it is told what you did.")
        elif message.op == "exec":
            code = answer.get("exit_code")
            status = "timed out" if answer.get("timed_out") else f"exit {code}"
            lines = str(answer.get("output", "")).rstrip("\n").splitlines()[-_OUTPUT_LINES:]
            self.query_one("#takeover-output", Static).update(
                "\n".join([*lines, f"[{status}]"]), layout=True
            )
        elif message.op == "read":
            path = str(answer.get("path"))
            self.app.push_screen(
                EditFileScreen(path, str(answer.get("text", ""))),
                callback=lambda text: self._save(path, text),
            )
        elif message.op == "write":
            self.notify(f"Saved {answer.get('path')} in the session.")
        elif message.op == "tell":
            self.notify("The agent reads it before its next step.")
        self._set_state()

    def _save(self, path: str, text: str | None) -> None:
        if text is not None:
            self._request("write", {"path": path, "text": text})

    # -- the bar ---------------------------------------------------------------------------

    def _set_state(self, problem: str = "") -> None:
        if not self.taken:
            return
        text = (
            "You have the session (the agent is paused). Enter runs the command in its "
            "terminal · Esc back to the steps, then: E edits a file · M tells the agent · "
            "r lets it go on"
        )
        self.query_one("#takeover-state", Static).update(f"{text}\n{problem}" if problem else text)

    def _show_bar(self) -> None:
        self.query_one("#takeover").add_class("shown")
        self._set_state()

    def _ask(self, purpose: str) -> None:
        self._box_purpose = purpose
        box = self.query_one("#takeover-input", Input)
        box.value = ""
        box.placeholder = {
            "command": "$ command to run in the session's terminal (Esc: back to the steps)",
            "path": "file to edit, relative to the repository (Enter: open)",
            "message": "a message for the agent, read before its next step",
        }[purpose]
        box.focus()

    @on(Input.Submitted, "#takeover-input")
    def _submitted(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        if not text:
            return
        message.input.value = ""
        if self._box_purpose == "command":
            self.query_one("#takeover-output", Static).update(f"$ {text}  …", layout=True)
            self._request("exec", {"command": text})
        elif self._box_purpose == "path":
            self._request("read", {"path": text})
            self._ask("command")
        else:
            self._request("tell", {"text": text})
            self._ask("command")

    # -- actions ---------------------------------------------------------------------------

    def action_take_over(self) -> None:
        if self.taken:
            self._ask("command")
            return
        self.notify("Pausing the agent after its current step…")
        self._request("pause", {})

    def action_resume(self) -> None:
        self._request("resume", {})

    def action_edit_file(self) -> None:
        if not self.taken:
            self.notify("Take the session over first (p).", severity="warning")
            return
        self._show_bar()
        self._ask("path")

    def action_message(self) -> None:
        self.query_one("#takeover").add_class("shown")
        self._set_state()
        self._ask("message")

    def action_escape(self) -> None:
        if self.focused is self.query_one("#takeover-input", Input):
            if not self.taken:
                self.query_one("#takeover").remove_class("shown")
            self.query_one(Timeline).focus()
            return
        super().action_escape()


class EditFileScreen(ModalScreen[str | None]):
    """A file of the session in an editor: Ctrl+S saves it into the session, Esc leaves it."""

    DEFAULT_CSS = """
    EditFileScreen {
        align: center middle;
    }
    #edit-box {
        width: 90%;
        height: 80%;
        border: round $accent;
        background: $surface;
    }
    #edit-title {
        height: 1;
        padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("fleet_edit"))

    def __init__(self, path: str, text: str) -> None:
        super().__init__()
        self.path = path
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="edit-box"):
            yield Static(
                f"{self.path} · Ctrl+S saves into the session · Esc leaves", id="edit-title"
            )
            yield TextArea(self.text, id="edit-text", show_line_numbers=True)

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)
