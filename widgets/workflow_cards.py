"""Workflow events (simulator.workflow) as readable cards: progress, result, end.

Used by the agent/event pane (a card per event) and the replay viewer's detail pane, so a
recorded harness, codegen, debug, perf, setup or curation run reads as steps and figures, not
as raw JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from simulator.describe import describe_event, seconds_text, workflow_value
from simulator.events import Event, Kind, WorkflowEnd, WorkflowResult, WorkflowStart, WorkflowStep
from simulator.wire import WireError
from widgets.card_parts import diff_renderable

DIFF_LINES = 40  # lines of a debug run's diff shown in its result card

STATUS_STYLE = {
    "running": "bold yellow",
    "ok": "bold green",
    "failed": "bold red",
    "error": "bold red",
    "interrupted": "bold yellow",
}


def workflow_style(event: Event) -> str:
    """A card class: a result reads as a finish, a failed step or end as bad."""
    data = event.data
    status = str(data.status) if isinstance(data, WorkflowStep | WorkflowEnd) else ""
    if event.kind == Kind.WORKFLOW_RESULT:
        return "-finish"
    if status in ("failed", "error"):
        return "-bad"
    if event.kind == Kind.WORKFLOW_END and status == "ok":
        return "-good"
    return ""


def _value(key: str, value: Any) -> str:
    return workflow_value(value, key)


def _figures(data: dict[str, Any]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    for key, value in data.items():
        if value in (None, "", [], {}):
            continue
        if isinstance(value, dict) and "median" not in value:
            for sub, inner in value.items():
                table.add_row(f"{key}.{sub}", _value(str(sub), inner))
        else:
            table.add_row(str(key), _value(str(key), value))
    return table


def render_workflow(event: Event) -> RenderableType:
    """The body of a workflow event's card (the one-line description, then the figures)."""
    head = Text(describe_event(event).split(" ", 1)[0] + " ", style="bold")
    try:
        data = event.data
    except WireError:  # not a workflow payload RepoSim wrote: its fields as they are
        return Group(head, _figures(event.payload))
    if isinstance(data, WorkflowStart):
        head.append("started", style="bold cyan")
        return Group(head, _figures(dict(data.params)))
    if isinstance(data, WorkflowStep):
        head.append(f"{data.step} ", style="bold")
        head.append(str(data.status), style=STATUS_STYLE.get(str(data.status), ""))
        if data.seconds is not None:
            head.append(f" {float(data.seconds):.1f}s", style="dim")
        return Group(head, _figures(dict(data.detail))) if data.detail else head
    if isinstance(data, WorkflowResult):
        head.append("result", style="bold magenta")
        result = dict(data.result)
        special = RESULTS.get(data.workflow)
        body = special(result) if special is not None else None
        return Group(head, body if body is not None else _figures(result))
    if isinstance(data, WorkflowEnd):
        head.append(str(data.status), style=STATUS_STYLE.get(str(data.status), ""))
        head.append(f" in {float(data.seconds or 0):.1f}s", style="dim")
        return Group(head, Text(data.error, style="red")) if data.error else head
    return Group(head, _figures(event.payload))


# -- result cards that read better than a list of figures --------------------------------------


def _pct(value: Any) -> str:
    return f"{float(value):.0%}" if isinstance(value, int | float) else "?"


def _codegen_result(r: dict[str, Any]) -> RenderableType | None:
    """pass@k: k, n, how many samples passed, the estimate (before and after debug rounds);
    for a harness its validation found invalid, that and no pass@k."""
    if "n" not in r:
        return None
    if r.get("harness_verdict") not in (None, "valid"):
        return _codegen_withheld(r)
    first = dict(r.get("pass_at") or {})
    if not first:
        return None
    after = dict(r.get("pass_at_debug") or {})
    table = Table(box=None, padding=(0, 2), show_edge=False)
    table.add_column("k", justify="right")
    table.add_column("pass@k", justify="right", style="bold")
    debugged = r.get("correct") != r.get("correct_first")
    if debugged:
        table.add_column("after debug", justify="right")
    for key, value in first.items():
        row = [key.removeprefix("pass@"), _pct(value)]
        if debugged:
            row.append(_pct(after.get(key)))
        table.add_row(*row)
    passes = Text(f"{r.get('correct_first')} of {r.get('n')} samples pass")
    if debugged:
        passes.append(f" ({r.get('correct')} after debug rounds)")
    return Group(passes, table)


def _codegen_withheld(r: dict[str, Any]) -> RenderableType:
    head = Text("HARNESS INVALID", style="bold red")
    coverage = r.get("harness_coverage")
    if isinstance(coverage, int | float):
        head.append(f"  coverage {_pct(coverage)}", style="red")
    reasons = [Text(f"· {reason}", style="red") for reason in r.get("harness_reasons") or []]
    passes = Text(
        f"pass@k not reported: {r.get('correct_first')} of {r.get('n')} samples pass a harness "
        "that cannot judge them (curate or regenerate the harness first).",
        style="yellow",
    )
    return Group(head, *reasons, passes)


def _debug_result(r: dict[str, Any]) -> RenderableType | None:
    """Fixed / not fixed, the test summaries before and after, and the diff."""
    status = str(r.get("status") or "")
    if not status:
        return None
    style = {"fixed": "bold green", "not fixed": "bold red"}.get(status, "bold")
    lines: list[RenderableType] = [Text(status.upper(), style=style)]
    figures = {k: r.get(k) for k in ("before", "after", "agent", "summary")}
    lines.append(_figures(figures))
    diff = str(r.get("diff") or "")
    if diff:
        lines.append(diff_renderable(diff, DIFF_LINES))
    elif status != "already passing":
        lines.append(Text("no change", style="dim"))
    return Group(*lines)


_seconds = seconds_text


def _perf_result(r: dict[str, Any]) -> RenderableType | None:
    """The performance table: each side's revision and time, then the verdict."""
    a, b, verdict = r.get("a"), r.get("b"), r.get("verdict")
    if not isinstance(a, dict) or not isinstance(b, dict) or not isinstance(verdict, dict):
        return None
    table = Table(box=None, padding=(0, 2), show_edge=False)
    for column in ("", "revision", "commit", "mean", "± std", "runs"):
        table.add_column(column, justify="right" if column in ("mean", "± std", "runs") else "left")
    for label, side in (("A", a), ("B", b)):
        table.add_row(
            label,
            str(side.get("rev") or r.get(f"rev_{label.lower()}") or ""),
            str(side.get("commit") or r.get(f"commit_{label.lower()}") or "")[:10],
            _seconds(side.get("mean")),
            _seconds(side.get("std")),
            str(side.get("runs") or ""),
        )
    speedup = float(verdict.get("speedup") or 0)
    interval = (
        f"{float(verdict.get('confidence') or 0.95):.0%} CI "
        f"{float(verdict.get('ci_low') or 0):.3f}-{float(verdict.get('ci_high') or 0):.3f}"
    )
    if not verdict.get("significant"):
        sentence = Text(f"not significant: speed-up {speedup:.3f}x ({interval})", style="bold")
    else:
        word = "faster" if speedup > 1 else "slower"
        sentence = Text(
            f"B is {word}: speed-up {speedup:.3f}x ({interval})",
            style="bold green" if speedup > 1 else "bold red",
        )
    parts: list[RenderableType] = [Text(str(r.get("target") or ""), style="bold"), table, sentence]
    for reason in r.get("noise") or []:
        parts.append(Text(f"noisy machine: {reason}", style="yellow"))
    if r.get("result_file"):
        parts.append(Text(f"results: {r['result_file']}", style="dim"))
    return Group(*parts)


def _harness_result(r: dict[str, Any]) -> RenderableType | None:
    """For one target: valid or not, its branch coverage and mutation score."""
    if r.get("targets") != 1:
        return None  # many targets: the counts and quartiles read fine as figures
    coverage, mutation = r.get("coverage"), r.get("mutation")
    valid = bool(r.get("valid"))
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    table.add_row(
        "valid",
        Text("yes", style="bold green") if valid else Text("no", style="bold red"),
    )
    table.add_row("harness", "written" if r.get("harnesses") else "none")
    table.add_row("coverage", _pct(coverage.get("median")) if coverage else "?")
    table.add_row("mutation score", _pct(mutation.get("median")) if mutation else "?")
    return table


RESULTS: dict[str, Callable[[dict[str, Any]], RenderableType | None]] = {
    "codegen": _codegen_result,
    "debug": _debug_result,
    "perf.compare": _perf_result,
    "harness": _harness_result,
}
"""A workflow's own result card; None from one falls back to the figures."""
