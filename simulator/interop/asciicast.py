"""asciicast v2 (asciinema's format): a header line, then `[time, code, data]` lines.

Export writes the terminal pane's traffic (`terminal.output` as "o", `terminal.input` as "i"); a
session without terminal events is rendered from its commands (a prompt line, then the output).
Import reads "o" and "i" back as terminal events and keeps markers ("m") as notes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

from simulator.events import (
    Actor,
    DataPayload,
    Event,
    ExecPayload,
    ExecResultPayload,
    Kind,
    NotePayload,
    TerminalInputPayload,
    TerminalSizePayload,
    TestResultPayload,
    TestRunPayload,
)
from simulator.interop.model import InteropError, not_json
from simulator.trajectory_header import TrajectoryHeader
from simulator.wire import json_lines

FORMAT = "asciicast"


def looks_like(first_line: Any) -> bool:
    return (
        isinstance(first_line, dict)
        and first_line.get("version") == 2
        and ("width" in first_line or "height" in first_line)
    )


def read(text: str) -> tuple[dict[str, Any], list[Event]]:
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not looks_like(header):
        raise InteropError("line 1 is not an asciicast v2 header")
    assert isinstance(header, dict)
    events: list[Event] = []
    for number, item in json_lines(lines[1:], not_json, start=2):
        if (
            not isinstance(item, list)
            or len(item) != 3
            or isinstance(item[0], bool)
            or not isinstance(item[0], int | float)
            or not isinstance(item[1], str)
            or not isinstance(item[2], str)
        ):
            raise InteropError(f"line {number} is not a [time, code, data] event")
        t, code, data = float(item[0]), item[1], item[2]
        seq = len(events) + 1
        if code == "o":
            events.append(Event(seq, t, Actor.HUMAN, Kind.TERMINAL_OUTPUT, {"data": data}))
        elif code == "i":
            events.append(Event(seq, t, Actor.HUMAN, Kind.TERMINAL_INPUT, {"data": data}))
        elif code == "m":
            events.append(Event(seq, t, Actor.HUMAN, Kind.NOTE, {"text": data, "mark": "marker"}))
        else:
            events.append(
                Event(seq, t, Actor.SYSTEM, Kind.NOTE, {"text": data, "mark": f"asciicast:{code}"})
            )
    return header, events


DEFAULT_SIZE = (120, 32)
"""The header's size for a trajectory with no terminal (commands only) or recorded before the
terminal's size was."""


def write(header: TrajectoryHeader, events: Iterable[Event], *, title: str | None = None) -> str:
    created = header.created
    cast: dict[str, Any] = {"version": 2, "width": DEFAULT_SIZE[0], "height": DEFAULT_SIZE[1]}
    if header.imported is not None and isinstance(header.imported.extra.get("asciicast"), dict):
        cast.update(header.imported.extra["asciicast"])
    if title or "title" not in cast:
        cast["title"] = title or f"reposim session {header.session}".strip()
    if "timestamp" not in cast:
        from datetime import datetime

        with contextlib.suppress(ValueError):
            cast["timestamp"] = int(
                datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
            )
    terminal: list[list[Any]] = []
    commands: list[list[Any]] = []
    size: tuple[int, int] | None = None
    for event in events:
        data = event.data
        t = round(event.t, 6)
        if isinstance(data, TerminalSizePayload):
            if size is None and not terminal:
                size = (data.cols, data.rows)  # the size the terminal opened at: the header's
            else:
                terminal.append([t, "r", f"{data.cols}x{data.rows}"])
        elif isinstance(data, DataPayload) and event.kind == Kind.TERMINAL_OUTPUT:
            terminal.append([t, "o", data.data])
        elif isinstance(data, TerminalInputPayload):
            terminal.append([t, "i", data.data])
        elif isinstance(data, NotePayload) and data.mark == "marker":
            terminal.append([t, "m", data.text])
        elif isinstance(data, ExecPayload | TestRunPayload):
            command = data.command
            if isinstance(data, TestRunPayload) and data.selector:
                command += f" {data.selector}"
            commands.append([t, "o", f"$ {command}\r\n"])
        elif isinstance(data, ExecResultPayload | TestResultPayload) and data.output:
            text = data.output.replace("\r\n", "\n").replace("\n", "\r\n")
            commands.append([t, "o", text])
    if size is not None:
        cast["width"], cast["height"] = size
    lines = [json.dumps(cast)]
    for item in terminal or commands:
        lines.append(json.dumps(item, ensure_ascii=False))
    return "\n".join(lines) + "\n"
