"""Workflow events (simulator.workflow) as readable cards: progress, result, end.

Used by the agent/event pane (a card per event) and the replay viewer's detail pane, so a
recorded harness, codegen, debug, perf, setup or curation run reads as steps and figures, not
as raw JSON.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from simulator.describe import describe_event, workflow_value
from simulator.events import Event, Kind

STATUS_STYLE = {
    "running": "bold yellow",
    "ok": "bold green",
    "failed": "bold red",
    "error": "bold red",
    "interrupted": "bold yellow",
}


def workflow_style(event: Event) -> str:
    """A card class: a result reads as a finish, a failed step or end as bad."""
    status = str(event.payload.get("status") or "")
    if event.kind == Kind.WORKFLOW_RESULT:
        return "-finish"
    if status in ("failed", "error"):
        return "-bad"
    if event.kind == Kind.WORKFLOW_END and status == "ok":
        return "-good"
    return ""


def _figures(data: dict[str, Any]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    for key, value in data.items():
        if value in (None, "", [], {}):
            continue
        if isinstance(value, dict) and "median" not in value:
            for sub, inner in value.items():
                table.add_row(f"{key}.{sub}", workflow_value(inner))
        else:
            table.add_row(str(key), workflow_value(value))
    return table


def render_workflow(event: Event) -> RenderableType:
    """The body of a workflow event's card (the one-line description, then the figures)."""
    p: dict[str, Any] = event.payload
    status = str(p.get("status") or "")
    head = Text(describe_event(event).split(" ", 1)[0] + " ", style="bold")
    if event.kind == Kind.WORKFLOW_START:
        head.append("started", style="bold cyan")
        return Group(head, _figures(dict(p.get("params") or {})))
    if event.kind == Kind.WORKFLOW_STEP:
        head.append(f"{p.get('step')} ", style="bold")
        head.append(status, style=STATUS_STYLE.get(status, ""))
        if p.get("seconds") is not None:
            head.append(f" {float(p['seconds']):.1f}s", style="dim")
        detail = dict(p.get("detail") or {})
        return Group(head, _figures(detail)) if detail else head
    if event.kind == Kind.WORKFLOW_RESULT:
        head.append("result", style="bold magenta")
        return Group(head, _figures(dict(p.get("result") or {})))
    head.append(status, style=STATUS_STYLE.get(status, ""))
    head.append(f" in {float(p.get('seconds') or 0):.1f}s", style="dim")
    if p.get("error"):
        return Group(head, Text(str(p["error"]), style="red"))
    return head
