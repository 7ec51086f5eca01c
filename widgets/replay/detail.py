"""What the replay view shows beside the timeline: one step in full, and the files at a step."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from simulator import describe
from simulator.describe import describe_event
from simulator.events import (
    DataPayload,
    Event,
    ExecPayload,
    ExecResultPayload,
    FileChangePayload,
    Kind,
    LlmCallPayload,
    LlmResponsePayload,
    Payload,
    TerminalInputPayload,
    TestResultPayload,
    TestRunPayload,
)
from simulator.terminal_record import readable_keys
from simulator.trajectory import EventSource, TrajectoryError
from simulator.wire import WireError
from widgets.terminal_screen import TerminalScreen, line_segments
from widgets.workflow_cards import render_workflow

_RESULT_OF = {
    Kind.EXEC: Kind.EXEC_RESULT,
    Kind.TEST_RUN: Kind.TEST_RESULT,
    Kind.SEARCH: Kind.SEARCH_RESULT,
}
_LOOKAHEAD = 200
_MAX_TEXT = 20_000


def _clip(text: str) -> str:
    if len(text) <= _MAX_TEXT:
        return text
    return text[:_MAX_TEXT] + f"\n[... {len(text) - _MAX_TEXT} more characters]"


def related(source: EventSource, index: int, event: Event) -> Event | None:
    """The observation answering an action, or the action an observation answers."""
    if event.cause is not None:
        for earlier in range(index - 1, max(-1, index - _LOOKAHEAD), -1):
            try:
                candidate = source.event(earlier)
            except TrajectoryError:
                continue
            if candidate.seq == event.cause:
                return candidate
        return None
    kind = _RESULT_OF.get(Kind(event.kind)) if event.kind in _RESULT_OF else None
    if kind is None:
        return None
    for later in range(index + 1, min(len(source), index + _LOOKAHEAD)):
        try:
            candidate = source.event(later)
        except TrajectoryError:
            continue
        if candidate.cause == event.seq and candidate.kind == kind:
            return candidate
    return None


def _section(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def _payload_parts(event: Event) -> list[RenderableType]:
    if event.kind.startswith("workflow."):
        return [_section("Workflow"), render_workflow(event)]
    try:
        data: Payload | None = event.data
    except WireError:  # shown below as the JSON it is
        data = None
    parts: list[RenderableType] = []
    if isinstance(data, LlmResponsePayload):
        if data.thought:
            parts += [_section("Thought"), Text(_clip(data.thought))]
        if data.content and data.content != data.thought:
            parts += [_section("Response"), Text(_clip(data.content))]
        for call in data.tool_calls:
            parts += [_section(f"Tool call {call.name}"), Text(_clip(call.arguments))]
        return parts
    if isinstance(data, LlmCallPayload) and isinstance(data.messages, list):
        for message in data.messages:
            if isinstance(message, dict):
                parts += [
                    _section(str(message.get("role", "message")).title()),
                    Text(_clip(str(message.get("content", "")))),
                ]
        return parts
    if isinstance(data, ExecPayload | TestRunPayload):
        command = data.command
        if isinstance(data, TestRunPayload) and data.selector:
            command += f" {data.selector}"
        parts += [_section("Action"), Syntax(command, "bash", word_wrap=True)]
        return parts
    if isinstance(data, ExecResultPayload | TestResultPayload):
        known = [f"exit {data.exit_code}" if data.exit_code is not None else ""]
        known.append(describe.duration_text(data.duration))
        shown = ", ".join(part for part in known if part)
        parts += [
            _section("Observation" + (f" ({shown})" if shown else "")),
            Text(_clip(data.output)),
        ]
        tests = data.tests if isinstance(data, TestResultPayload) else []
        failing = [t for t in tests if t.outcome in ("failed", "error")]
        if failing:
            parts.append(_section("Failing tests"))
            for test in failing:
                parts.append(Text(f"{test.outcome}: {test.id}  {test.message}", style="red"))
        return parts
    if isinstance(data, FileChangePayload) and data.diff:
        parts += [
            _section(f"Diff of {data.path}"),
            Syntax(_clip(data.diff), "diff", word_wrap=True),
        ]
        return parts
    if isinstance(data, DataPayload) and event.kind == Kind.TERMINAL_OUTPUT:
        return [_section("Terminal"), terminal_text(_clip(data.data))]
    if isinstance(data, TerminalInputPayload):
        typed = data.line or readable_keys(data.data)
        return [_section("Typed in the terminal"), Text(_clip(typed))]
    if event.kind == Kind.AGENT_FINISH:
        return _finish_parts(event.payload)
    return _readable_payload(event.payload)


def _text_block(text: str) -> RenderableType:
    """A recorded text as it reads: Windows line ends made plain, a diff highlighted as one."""
    text = _clip(text.replace("\r\n", "\n").strip("\r\n"))
    if text.startswith(("diff --git", "--- ")) or "\n@@ " in text:
        return Syntax(text, "diff", word_wrap=True)
    return Text(text)


def _finish_parts(p: dict[str, Any]) -> list[RenderableType]:
    """The end of an agent's run: its submission (SWE-agent's patch) as a diff, not as one
    escaped JSON string, then what else the run recorded."""
    facts = [
        f"{key.replace('_', ' ')} {describe.workflow_value(p[key], key)}"
        for key in _FINISH_FACTS
        if p.get(key) not in (None, "")
    ]
    parts: list[RenderableType] = [Text(" · ".join(facts), style="dim")] if facts else []
    summary = str(p.get("summary") or "")
    info = dict(p.get("info") or {}) if isinstance(p.get("info"), dict) else {}
    # what the finish itself says already (SWE-agent repeats it in its info)
    info = {k: v for k, v in info.items() if v != p.get(k) and v != summary}
    if summary.strip():
        parts += [_section("Submission" if "\n@@ " in summary else "Summary"), _text_block(summary)]
    rest = {k: v for k, v in p.items() if k not in {"summary", "info", *_FINISH_FACTS}}
    return parts + _readable_payload({**rest, **info})


_FINISH_FACTS = ("exit_status", "reason", "steps", "tokens", "cost", "elapsed")


def _readable_payload(p: dict[str, Any]) -> list[RenderableType]:
    """Fields no dedicated view knows: texts of several lines under their own heading, as
    text; the rest as JSON."""
    texts = {k: v for k, v in p.items() if isinstance(v, str) and "\n" in v.strip()}
    rest = {k: v for k, v in p.items() if k not in texts and v not in (None, "", [], {})}
    parts: list[RenderableType] = []
    if rest:
        text = json.dumps(rest, ensure_ascii=False, indent=2, default=str)
        parts += [_section("Payload"), Syntax(_clip(text), "json", word_wrap=True)]
    for key, value in texts.items():
        parts += [_section(key.replace("_", " ").capitalize()), _text_block(value)]
    return parts


TERMINAL_COLUMNS = 250
"""Columns of the emulator terminal output is drawn through: at least the recorded terminal's,
so no line wraps where it did not (the step pane wraps long lines itself)."""


def terminal_text(data: str) -> Text:
    """A chunk of terminal output as the terminal pane would draw it: through the same
    emulator (widgets.terminal_screen), so colours show as colours and cursor moves, erases,
    carriage returns and titles are applied rather than shown as `^[[01;32m` escape codes."""
    rows = max(1, min(data.count("\n") + 1, 2000))
    screen = TerminalScreen(TERMINAL_COLUMNS, rows, scrollback=10_000, fast_path=False)
    screen.feed(data)
    lines: list[Text] = []
    for number in range(screen.history_size + screen.rows):
        line = Text()
        for segment in line_segments(screen.line_at(number), TERMINAL_COLUMNS):
            line.append(segment.text, segment.style)
        line.rstrip()
        lines.append(line)
    while lines and not lines[-1].plain:
        lines.pop()
    return Text("\n").join(lines)


def render_step(source: EventSource, index: int) -> RenderableType:
    """Everything about one step: who, when, what, and the action/observation pair."""
    try:
        event = source.event(index)
    except TrajectoryError as exc:
        return Text(str(exc), style="bold red")
    title = Text()
    title.append(f"Step {event.seq}", style="bold")
    title.append(f"  {event.t:.2f}s  {event.actor}  {event.kind}", style="dim")
    if event.cause is not None:
        title.append(f"  answers step {event.cause}", style="dim")
    parts: list[RenderableType] = [title, Text(describe_event(event), style="bold")]
    other = related(source, index, event)
    if other is not None and other.cause is None:
        parts += _payload_parts(other)
    parts += _payload_parts(event)
    if other is not None and other.cause is not None:
        parts += _payload_parts(other)
    return Group(*parts)


def render_file(path: str, text: str | None) -> RenderableType:
    if text is None:
        return Text(f"{path} does not exist at this step (deleted or renamed).", style="dim")
    return Syntax(_clip(text), Syntax.guess_lexer(path, text), line_numbers=True, word_wrap=False)
