"""What the replay view shows beside the timeline: one step in full, and the files at a step."""

from __future__ import annotations

import json

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
from simulator.trajectory import EventSource, TrajectoryError
from simulator.wire import WireError
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
    if isinstance(data, TerminalInputPayload | DataPayload) and event.kind in (
        Kind.TERMINAL_INPUT,
        Kind.TERMINAL_OUTPUT,
    ):
        return [_section("Terminal"), Text(_clip(data.data))]
    if event.payload:
        text = json.dumps(event.payload, ensure_ascii=False, indent=2, default=str)
        parts += [_section("Payload"), Syntax(_clip(text), "json", word_wrap=True)]
    return parts


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
