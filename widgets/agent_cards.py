"""How one session event looks in the agent pane: a readable card (thought, tool call, output,
highlighted diff, test counts), built from the event alone."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from simulator.describe import describe_event
from simulator.events import Event, Kind
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


def card_style(event: Event) -> str:
    """A CSS class for the card: what kind of step it is and whether it went wrong."""
    p = event.payload
    if event.kind == Kind.TOOL_RESULT and (p.get("rejected") or p.get("format_error")):
        return "-bad"
    if event.kind == Kind.TEST_RESULT:
        return "-good" if p.get("exit_code") == 0 else "-bad"
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
    p: dict[str, Any] = event.payload
    title = Text()
    title.append(f"{event.seq:>4} ", style="dim")
    title.append(f"{event.actor!s:6} ", style=ACTOR_STYLE.get(str(event.actor), "bold"))
    kind = event.kind
    if kind == Kind.LLM_RESPONSE:
        thought = str(p.get("content") or "").strip()
        usage = p.get("usage") or {}
        cost = p.get("cost")
        meta = f"{p.get('model')} · {float(p.get('latency') or 0):.1f}s"
        if usage.get("total_tokens"):
            meta += f" · {usage['total_tokens']} tokens"
        meta += f" · ${cost:.4f}" if cost is not None else ""
        title.append("thinks ", style="bold")
        title.append(meta, style="dim")
        return Group(title, Text(thought or "(no text)", style="italic"))
    if kind == Kind.TOOL_CALL:
        title.append(f"▶ {p.get('name')} ", style="bold green")
        title.append(_arguments(str(p.get("arguments") or "")))
        return title
    if kind == Kind.TOOL_RESULT:
        name = p.get("name")
        problem = p.get("rejected") or p.get("format_error")
        if (name in ("finish", "bash", "run_tests") and not problem) or (
            name in ("edit", "create") and p.get("ok")
        ):
            return Text()  # the finish, command, test or file-change card says it better
        label = "rejected" if p.get("rejected") else "format error" if p.get("format_error") else ""
        title.append(f"◀ {p.get('name')}", style="bold")
        if label:
            title.append(f" {label}", style="bold red")
        if p.get("elided"):
            title.append(f" ({p['elided']} characters elided for the model)", style="dim")
        return Group(title, Text(head_lines(str(p.get("output") or ""), OUTPUT_LINES), style="dim"))
    if kind in (Kind.FILE_EDIT, Kind.FILE_WRITE, Kind.FILE_CREATE, Kind.FILE_DELETE):
        title.append(describe_event(event), style="bold")
        diff = str(p.get("diff") or "")
        return Group(title, diff_renderable(diff)) if diff else title
    if kind == Kind.TEST_RESULT:
        ok = p.get("exit_code") == 0
        title.append(describe_event(event), style="bold green" if ok else "bold red")
        failing = [t for t in p.get("tests") or [] if t.get("outcome") in ("failed", "error")]
        rows = [f"  ✗ {t.get('id')}: {str(t.get('message') or '')[:120]}" for t in failing[:5]]
        return Group(title, Text("\n".join(rows), style="red")) if rows else title
    if kind == Kind.AGENT_FINISH:
        cost = p.get("cost")
        title.append(f"■ {p.get('reason')}", style="bold")
        title.append(
            f"  {p.get('steps')} steps · {p.get('tokens')} tokens · "
            + (f"${cost:.4f}" if cost is not None else "cost unknown")
            + f" · {float(p.get('elapsed') or 0):.1f}s",
            style="dim",
        )
        return Group(title, Text(str(p.get("summary") or "")))
    if kind == Kind.EXEC_RESULT:
        title.append(describe_event(event), style="dim")
        output = str(p.get("output") or "")
        return Group(title, Text(head_lines(output, 4), style="dim")) if output.strip() else title
    if kind.startswith("workflow."):
        return Group(title, render_workflow(event))
    if kind == Kind.NOTE and p.get("mark") == "agent.task":
        title.append("task: ", style="bold")
        title.append(str(p.get("text") or ""))
        return title
    title.append(describe_event(event))
    return title
