"""One-line, human-readable descriptions of events, shared by the CLI summary and the UI."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from simulator.events import Event, Kind
from simulator.terminal_record import readable_keys
from simulator.trajectory import Trajectory


def _short(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _diffstat(diff: str) -> str:
    added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return f"+{added} -{removed}"


# Escape sequences a terminal acts on rather than prints: OSC (titles), CSI (colours, cursor
# moves, erases), and two-character escapes.
_TERMINAL_CODES = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[ -/]*[0-~]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def terminal_words(data: str) -> str:
    """A chunk of terminal output as words on one line: escape codes dropped, each line's
    text after its last carriage return (a progress bar's final state), lines joined by ⏎."""
    text = _TERMINAL_CODES.sub("", data).replace("\r\n", "\n")
    lines = []
    for line in text.split("\n"):
        parts = [part for part in line.split("\r") if part]
        shown = _CONTROLS.sub("", parts[-1] if parts else "").strip()
        if shown:
            lines.append(shown)
    return " ⏎ ".join(lines)


def duration_text(value: Any) -> str:
    """A duration, or nothing when it is unknown: imports without timings record 0.0, which a
    command that really ran (timed to the microsecond) never takes."""
    if not isinstance(value, int | float) or not value:
        return ""
    return f"{float(value):.2f}s"


class _Fields(dict[str, Any]):
    """A payload for `str.format_map`: a field it lacks reads as None (as `p.get` would)."""

    def __missing__(self, key: str) -> None:
        return None


# Kinds described by their payload's fields in a line.
_TEMPLATES: dict[str, str] = {
    Kind.FILE_RENAME: "rename {path} -> {to}",
    Kind.FILE_READ: "read {path}",
    Kind.SEARCH: "search {pattern!r} in {path}",
    Kind.SEARCH_RESULT: "{count} matches",
    Kind.CHECKPOINT: "checkpoint {name}",
    Kind.RESTORE: "restore {name}",
    Kind.SESSION_END: "session ended ({reason})",
}

# Kinds described by one text field, shortened to a width: (prefix, field, width).
_SHORTENED: dict[str, tuple[str, str, int]] = {
    Kind.EXEC: ("$ ", "command", 80),
    Kind.NOTE: ("note: ", "text", 80),
    Kind.TOOL_RESULT: ("tool result: ", "output", 60),
    Kind.AGENT_FINISH: ("finished: ", "summary", 80),
    Kind.ERROR: ("error: ", "message", 80),
}

_FILE_CHANGES = (Kind.FILE_WRITE, Kind.FILE_EDIT, Kind.FILE_CREATE, Kind.FILE_DELETE)


def _exec_result(p: dict[str, Any]) -> str:
    flags = [
        name
        for name in ("timed_out", "interrupted", "shell_restarted", "oom_killed")
        if p.get(name)
    ]
    if p.get("output_capped"):
        flags.append("output cut at the cap")
    if p.get("cleared"):
        flags.append("runaway processes cleared meanwhile")
    # Other tools' trajectories may not know the exit code or the time (imports): only
    # what is known is shown.
    code = p.get("exit_code")
    state = f"exit {code}" if code is not None else ""
    if flags:
        state = f"{state} ({', '.join(flags)})".lstrip()
    # output_lines counts the whole output; older recordings only have the (possibly
    # shortened) text.
    lines = p.get("output_lines")
    if not isinstance(lines, int):
        lines = str(p.get("output", "")).count("\n")
    known = (state, f"{lines} lines of output", duration_text(p.get("duration")))
    return ", ".join(part for part in known if part)


def _test_run(p: dict[str, Any]) -> str:
    sel = f" {p['selector']}" if p.get("selector") else ""
    return f"run tests: {_short(str(p.get('command', '')))}{sel}"


def _test_result(p: dict[str, Any]) -> str:
    counts = p.get("counts")
    if counts:
        parts = [f"{n} {k}" for k, n in counts.items() if n]
        return "tests: " + (", ".join(parts) or "no tests ran")
    code = p.get("exit_code")
    return f"tests exit {code}" if code is not None else "tests ran"


def _policy_decision(p: dict[str, Any]) -> str:
    verdict = "approved" if p.get("allowed") else "rejected"
    reason = f": {p['reason']}" if p.get("reason") else ""
    return f"{verdict} {p.get('action')} {_short(str(p.get('target', '')), 40)}{reason}"


def _llm_call(p: dict[str, Any]) -> str:
    model = p.get("model")
    return f"model call {model}" if model else "model call"


def _llm_response(p: dict[str, Any]) -> str:
    usage = p.get("usage") or {}
    tokens = usage.get("total_tokens")
    return "model answered" + (f" ({tokens} tokens)" if tokens else "")


def _tool_call(p: dict[str, Any]) -> str:
    return f"tool {p.get('name')}({_short(str(p.get('arguments', '')), 60)})"


def _terminal_input(p: dict[str, Any]) -> str:
    # An entered command line reads like a command; other keys as they were typed.
    line = p.get("line")
    if line:
        return f"terminal $ {_short(str(line))}"
    return f"typed {_short(readable_keys(str(p.get('data', ''))), 60)}"


def _terminal_output(p: dict[str, Any]) -> str:
    return f"output {_short(terminal_words(str(p.get('data', ''))), 60)}"


# Kinds whose line needs more than their fields.
_DESCRIBERS: dict[str, Callable[[dict[str, Any]], str]] = {
    Kind.EXEC_RESULT: _exec_result,
    Kind.TEST_RUN: _test_run,
    Kind.TEST_RESULT: _test_result,
    Kind.POLICY_DECISION: _policy_decision,
    Kind.LLM_CALL: _llm_call,
    Kind.LLM_RESPONSE: _llm_response,
    Kind.TOOL_CALL: _tool_call,
    Kind.TERMINAL_INPUT: _terminal_input,
    Kind.TERMINAL_OUTPUT: _terminal_output,
}


def describe_event(event: Event) -> str:
    p: dict[str, Any] = event.payload
    kind = event.kind
    if kind in _TEMPLATES:
        return _TEMPLATES[kind].format_map(_Fields(p))
    if kind in _SHORTENED:
        prefix, field_name, width = _SHORTENED[kind]
        return prefix + _short(str(p.get(field_name, "")), width)
    if kind in _DESCRIBERS:
        return _DESCRIBERS[kind](p)
    if kind in _FILE_CHANGES:
        verb = kind.split(".")[1]
        return f"{verb} {p.get('path')} ({_diffstat(str(p.get('diff', '')))})"
    if kind.startswith("workflow."):
        return describe_workflow(kind, p)
    detail = next((str(v) for v in p.values() if isinstance(v, str | int | float)), "")
    return f"{kind} {_short(detail, 60)}".strip()


def summarize(trajectory: Trajectory) -> str:
    """A readable summary: where it came from, who did what, and every step in one line."""
    h = trajectory.header
    repo, backend = h.repo, h.backend
    lines = [
        f"trajectory {trajectory.path}",
        f"  session  {h.session}  created {h.created}  reposim {h.reposim}",
        f"  repo     {repo.source or '(not recorded)'}"
        + (
            f" @ {(repo.commit or '')[:12]}{' (dirty)' if repo.dirty else ''}"
            if repo.git and repo.commit
            else ""
        ),
        f"  backend  {backend.kind or '(not recorded)'}"
        + (f"  image {backend.image}" if backend.image else ""),
    ]
    if h.imported is not None:
        lines.append(f"  imported from {h.imported.format}: {h.imported.file}")
    if h.agent is not None:
        model = h.agent.model or "model not recorded"
        lines.append(f"  agent    {model}" + (f" ({h.agent.mode})" if h.agent.mode else ""))
    events = trajectory.events
    actors = Counter(str(e.actor) for e in events)
    kinds = Counter(e.kind for e in events)
    duration = events[-1].t if events else 0.0
    lines.append(
        f"  {len(events)} steps over {duration:.1f}s; "
        + ", ".join(f"{n} by {a}" for a, n in sorted(actors.items()))
    )
    commands = kinds.get(Kind.EXEC, 0)
    edits = sum(
        kinds.get(k, 0)
        for k in (
            Kind.FILE_WRITE,
            Kind.FILE_EDIT,
            Kind.FILE_CREATE,
            Kind.FILE_DELETE,
            Kind.FILE_RENAME,
        )
    )
    tests = [e for e in events if e.kind == Kind.TEST_RESULT]
    typed = sum(1 for e in events if e.kind == Kind.TERMINAL_INPUT and e.payload.get("line"))
    in_terminal = f" (+{typed} typed in the terminal)" if typed else ""
    lines.append(
        f"  {commands} commands{in_terminal}, {edits} file changes, {len(tests)} test runs"
    )
    if tests:
        lines.append(f"  last test run: {describe_event(tests[-1]).removeprefix('tests: ')}")
    lines.append("")
    for event in events:
        cause = f" <- {event.cause}" if event.cause is not None else ""
        lines.append(
            f"{event.seq:5d} {event.t:8.2f}s {event.actor!s:6} {describe_event(event)}{cause}"
        )
    if trajectory.problem:
        lines.append("")
        lines.append(f"warning: reading stopped early: {trajectory.problem}")
    return "\n".join(lines)


def is_time_key(key: str) -> bool:
    """Figures in seconds (call_seconds, min_time...), which must not read as rates."""
    return key.endswith(("seconds", "_time", "time_s")) or key in ("seconds", "time")


def seconds_text(value: Any) -> str:
    """A duration in seconds with a readable unit: 1.250 s, 3.100 ms, 12.0 ns."""
    if not isinstance(value, int | float):
        return "?"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3f} {unit}"
    return f"{value / 1e-9:.1f} ns"


def workflow_value(value: Any, key: str = "") -> str:
    """A workflow figure in a few characters: durations (by their key) with a unit, rates as
    percents, quartiles as median (q1-q3)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and is_time_key(key):
        return seconds_text(value)
    if isinstance(value, float):
        return f"{value:.0%}" if 0.0 <= value <= 1.0 else f"{value:.2f}"
    if isinstance(value, dict) and "median" in value:

        def pct(v: Any) -> str:
            return workflow_value(float(v))

        return (
            f"median {pct(value['median'])} ({pct(value.get('q1', 0))}-"
            f"{pct(value.get('q3', 0))}, n={value.get('n')})"
        )
    if isinstance(value, dict):
        return _short(_mapping_text(value), 60)
    if isinstance(value, list):
        return _short(", ".join(workflow_value(v) for v in value), 60) if value else "none"
    return _short(str(value), 60)


TEST_OUTCOMES = frozenset(
    {"passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed", "deselected"}
)


def _mapping_text(value: dict[Any, Any]) -> str:
    """A dict as a person reads it, not Python's repr: test counts as `929 passed, 2 failed`
    (as the test cards say them), anything else as `key value` pairs."""
    shown = {k: v for k, v in value.items() if v not in (None, "", [], {})}
    if not shown:
        return "none"
    if set(shown) <= TEST_OUTCOMES and all(isinstance(v, int) for v in shown.values()):
        return ", ".join(f"{n} {k}" for k, n in shown.items() if n) or "no tests ran"
    return ", ".join(f"{k} {workflow_value(v, str(k))}" for k, v in shown.items())


def _fields(data: dict[str, Any], limit: int = 4) -> str:
    shown = [f"{k}={workflow_value(v, k)}" for k, v in data.items() if v not in (None, "", [], {})]
    return " ".join(shown[:limit]) + (" …" if len(shown) > limit else "")


def describe_workflow(kind: str, p: dict[str, Any]) -> str:
    """One line for a workflow.start/step/result/end event (see simulator.workflow)."""
    name = str(p.get("workflow", "workflow"))
    if kind == Kind.WORKFLOW_START:
        return f"{name} started {_fields(dict(p.get('params') or {}))}".rstrip()
    if kind == Kind.WORKFLOW_STEP:
        seconds = p.get("seconds")
        took = f" {float(seconds):.1f}s" if seconds is not None else ""
        detail = _fields(dict(p.get("detail") or {}))
        return f"{name} · {p.get('step')} {p.get('status')}{took} {detail}".rstrip()
    if kind == Kind.WORKFLOW_RESULT:
        return f"{name} result: {_fields(dict(p.get('result') or {}), 6)}"
    error = f": {p['error']}" if p.get("error") else ""
    return f"{name} {p.get('status')} in {float(p.get('seconds') or 0):.1f}s{error}"
