"""What the replay view shows beside the timeline: one step in full, and the files at a step."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from simulator import describe
from simulator.describe import describe_event
from simulator.events import Event, Kind
from simulator.trajectory import EventSource, TrajectoryError
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
    p: dict[str, Any] = event.payload
    parts: list[RenderableType] = []
    if event.kind == Kind.LLM_RESPONSE:
        if p.get("thought"):
            parts += [_section("Thought"), Text(_clip(str(p["thought"])))]
        content = p.get("content")
        if content and content != p.get("thought"):
            parts += [_section("Response"), Text(_clip(str(content)))]
        for call in p.get("tool_calls") or []:
            if isinstance(call, dict):
                parts += [
                    _section(f"Tool call {call.get('name')}"),
                    Text(_clip(str(call.get("arguments", "")))),
                ]
        return parts
    if event.kind == Kind.LLM_CALL and isinstance(p.get("messages"), list):
        for message in p["messages"]:
            if isinstance(message, dict):
                parts += [
                    _section(str(message.get("role", "message")).title()),
                    Text(_clip(str(message.get("content", "")))),
                ]
        return parts
    if event.kind in (Kind.EXEC, Kind.TEST_RUN):
        command = str(p.get("command", ""))
        if p.get("selector"):
            command += f" {p['selector']}"
        parts += [_section("Action"), Syntax(command, "bash", word_wrap=True)]
        return parts
    if event.kind in (Kind.EXEC_RESULT, Kind.TEST_RESULT):
        known = [f"exit {p['exit_code']}" if p.get("exit_code") is not None else ""]
        known.append(describe.duration_text(p.get("duration")))
        shown = ", ".join(part for part in known if part)
        parts += [
            _section("Observation" + (f" ({shown})" if shown else "")),
            Text(_clip(str(p.get("output", "")))),
        ]
        failing = [
            t
            for t in p.get("tests") or []
            if isinstance(t, dict) and t.get("outcome") in ("failed", "error")
        ]
        if failing:
            parts.append(_section("Failing tests"))
            for test in failing:
                parts.append(
                    Text(
                        f"{test.get('outcome')}: {test.get('id')}  {test.get('message', '')}",
                        style="red",
                    )
                )
        return parts
    if event.kind.startswith("file.") and p.get("diff"):
        parts += [
            _section(f"Diff of {p.get('path')}"),
            Syntax(_clip(str(p["diff"])), "diff", word_wrap=True),
        ]
        return parts
    if event.kind.startswith("workflow."):
        return [_section("Workflow"), render_workflow(event)]
    if event.kind in (Kind.TERMINAL_INPUT, Kind.TERMINAL_OUTPUT):
        return [_section("Terminal"), Text(_clip(str(p.get("data", ""))))]
    if p:
        text = json.dumps(p, ensure_ascii=False, indent=2, default=str)
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
