"""How one session event looks in the agent pane: a readable card (thought, tool call, output,
highlighted diff, test counts), built from the event alone."""

from __future__ import annotations

import json

from rich.console import Group, RenderableType
from rich.text import Text

from simulator.describe import describe_event
from simulator.events import (
    AgentFinishPayload,
    Event,
    ExecResultPayload,
    FileChangePayload,
    Kind,
    LlmResponsePayload,
    NotePayload,
    Payload,
    TestResultPayload,
    ToolCallPayload,
    ToolResultPayload,
)
from simulator.wire import WireError
from widgets.card_parts import diff_renderable, head_lines
from widgets.workflow_cards import render_workflow, workflow_style

OUTPUT_LINES = 8  # lines of a tool's output shown on its card; the trajectory keeps it all

ACTOR_STYLE = {"agent": "bold magenta", "human": "bold cyan", "system": "bold yellow"}


def _arguments(raw: str) -> str:
    """A tool call's arguments as `key=value` pairs (raw text when they are not JSON)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return raw
    if not isinstance(value, dict):
        return raw
    parts = []
    for key, item in value.items():
        shown = item if isinstance(item, str) else json.dumps(item)
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        parts.append(f"{key}={shown!r}" if isinstance(item, str) else f"{key}={shown}")
    return " ".join(parts)


def _typed(event: Event) -> Payload | None:
    """The event's typed payload; None when it does not parse (the card then shows the event's
    one-line description, like any kind without a card of its own)."""
    try:
        return event.data
    except WireError:
        return None


def card_style(event: Event) -> str:
    """A CSS class for the card: what kind of step it is and whether it went wrong."""
    data = _typed(event)
    if isinstance(data, ToolResultPayload) and (data.rejected or data.format_error):
        return "-bad"
    if isinstance(data, TestResultPayload):
        return "-good" if data.exit_code == 0 else "-bad"
    if event.kind == Kind.ERROR:
        return "-bad"
    if event.kind == Kind.AGENT_FINISH:
        return "-finish"
    if event.kind == Kind.LLM_RESPONSE:
        return "-thought"
    if event.kind.startswith("workflow."):
        return workflow_style(event)
    return ""


def render_card(event: Event) -> RenderableType:
    title = Text()
    title.append(f"{event.seq:>4} ", style="dim")
    title.append(f"{event.actor!s:6} ", style=ACTOR_STYLE.get(str(event.actor), "bold"))
    if event.kind.startswith("workflow."):
        return Group(title, render_workflow(event))
    data = _typed(event)
    if isinstance(data, LlmResponsePayload):
        tokens = data.usage.total_tokens if data.usage is not None else None
        meta = f"{data.model} · {float(data.latency or 0):.1f}s"
        if tokens:
            meta += f" · {tokens} tokens"
        meta += f" · ${data.cost:.4f}" if data.cost is not None else ""
        title.append("thinks ", style="bold")
        title.append(meta, style="dim")
        thought = (data.content or "").strip()
        return Group(title, Text(thought or "(no text)", style="italic"))
    if isinstance(data, ToolCallPayload):
        title.append(f"▶ {data.name} ", style="bold green")
        title.append(_arguments(data.arguments))
        return title
    if isinstance(data, ToolResultPayload):
        name = data.name
        problem = data.rejected or data.format_error
        if (name in ("finish", "bash", "run_tests") and not problem) or (
            name in ("edit", "create") and data.ok
        ):
            return Text()  # the finish, command, test or file-change card says it better
        label = "rejected" if data.rejected else "format error" if data.format_error else ""
        title.append(f"◀ {name}", style="bold")
        if label:
            title.append(f" {label}", style="bold red")
        if data.elided:
            title.append(f" ({data.elided} characters elided for the model)", style="dim")
        return Group(title, Text(head_lines(data.output, OUTPUT_LINES), style="dim"))
    if isinstance(data, FileChangePayload):
        title.append(describe_event(event), style="bold")
        return Group(title, diff_renderable(data.diff)) if data.diff else title
    if isinstance(data, TestResultPayload):
        ok = data.exit_code == 0
        title.append(describe_event(event), style="bold green" if ok else "bold red")
        failing = [t for t in data.tests if t.outcome in ("failed", "error")]
        rows = [f"  ✗ {t.id}: {t.message[:120]}" for t in failing[:5]]
        return Group(title, Text("\n".join(rows), style="red")) if rows else title
    if isinstance(data, AgentFinishPayload):
        title.append(f"■ {data.reason}", style="bold")
        title.append(
            f"  {data.steps} steps · {data.tokens} tokens · "
            + (f"${data.cost:.4f}" if data.cost is not None else "cost unknown")
            + f" · {float(data.elapsed or 0):.1f}s",
            style="dim",
        )
        return Group(title, Text(data.summary))
    if isinstance(data, ExecResultPayload):
        title.append(describe_event(event), style="dim")
        output = data.output
        return Group(title, Text(head_lines(output, 4), style="dim")) if output.strip() else title
    if isinstance(data, NotePayload) and data.mark == "agent.task":
        title.append("task: ", style="bold")
        title.append(data.text)
        return title
    title.append(describe_event(event))
    return title
