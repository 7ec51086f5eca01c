"""Trajectories of other agent tools: reading them as RepoSim events, and writing them.

Formats: SWE-agent `.traj`, mini-swe-agent (its older list-of-messages form and its current
`info/messages/trajectory_format` form), OpenAI chat JSONL (fine-tuning data) and asciicast v2
(terminal sessions, playable by asciinema). Every reader refuses what it cannot read with
`InteropError`, one sentence that names the file and, where it can, the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simulator.events import Event
from simulator.interop import asciicast, mini_swe_agent, openai_chat, swe_agent
from simulator.interop.model import (
    AgentStep,
    Conversation,
    InteropError,
    conversation_events,
    events_conversation,
)
from simulator.trajectory_header import MAX_DEPTH, ImportInfo, TrajectoryHeader, json_depth

EXPORT_FORMATS = ("swe-agent", "mini-swe-agent", "openai-chat", "asciicast")
_MAX_SIZE = 512 * 1024 * 1024


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > _MAX_SIZE:
            raise InteropError(
                f"{path} is too large ({size} bytes) to be another tool's trajectory."
            )
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InteropError(f"{path} does not exist.") from None
    except IsADirectoryError:
        raise InteropError(f"{path} is a directory, not a trajectory file.") from None
    except PermissionError:
        raise InteropError(f"{path} is not readable (permission denied).") from None
    except UnicodeDecodeError as exc:
        raise InteropError(f"{path} is not UTF-8 text (byte {exc.start}).") from None


def parse_foreign(text: str, name: str) -> tuple[TrajectoryHeader, list[Event]]:
    """Recognise another tool's trajectory in `text` and convert it to a header and events."""
    try:
        return _parse(text, name)
    except InteropError as exc:
        message = str(exc)
        if message.startswith(name):
            raise
        raise InteropError(f"{name} cannot be read: {message}.") from None
    except RecursionError:
        raise InteropError(
            f"{name} cannot be read: it is nested more than {MAX_DEPTH} levels deep."
        ) from None


def _parse(text: str, name: str) -> tuple[TrajectoryHeader, list[Event]]:
    stripped = text.lstrip()
    if not stripped:
        raise InteropError(f"{name} is empty.")
    first_line = stripped.split("\n", 1)[0]
    try:
        first: Any = json.loads(first_line)
    except json.JSONDecodeError:
        first = None
    if asciicast.looks_like(first):
        cast_header, events = asciicast.read(stripped)
        cast = {
            k: v for k, v in cast_header.items() if k in ("version", "width", "height", "title")
        }
        header = TrajectoryHeader.new(
            f"imported-{Path(name).stem}",
            imported=ImportInfo(asciicast.FORMAT, name, {"asciicast": cast}),
        )
        return header, events
    try:
        data: Any = json.loads(text)
        if json_depth(data) > MAX_DEPTH:
            raise InteropError(f"it is nested more than {MAX_DEPTH} levels deep")
    except json.JSONDecodeError as exc:
        if isinstance(first, dict) and "messages" in first:
            return conversation_events(openai_chat.read_lines(text), name)
        raise InteropError(
            f"{name} is neither a RepoSim trajectory nor a file of a known agent tool"
            f" (line {exc.lineno} is not JSON: {exc.msg})."
        ) from None
    if (
        isinstance(data, dict)
        and isinstance(data.get("messages"), list)
        and ("trajectory_format" in data or "info" in data)
    ):
        return conversation_events(mini_swe_agent.read(data), name)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return conversation_events(openai_chat.read_lines(text.strip().replace("\n", " ")), name)
    if swe_agent.looks_like(data):
        return conversation_events(swe_agent.read(data), name)
    if mini_swe_agent.looks_like(data):
        return conversation_events(mini_swe_agent.read(data), name)
    raise InteropError(
        f"{name} is neither a RepoSim trajectory nor a SWE-agent, mini-swe-agent, OpenAI chat or"
        " asciicast file."
    )


def load_foreign(path: Path | str) -> tuple[TrajectoryHeader, list[Event]]:
    path = Path(path)
    return parse_foreign(_read_text(path), str(path))


def export_text(header: TrajectoryHeader, events: Iterable[Event], fmt: str) -> str:
    """The trajectory in another tool's format, as the text of the file to write."""
    if fmt == "asciicast":
        return asciicast.write(header, events)
    conversation = events_conversation(header, events)
    if fmt == "swe-agent":
        return json.dumps(swe_agent.write(conversation), ensure_ascii=False, indent=2) + "\n"
    if fmt == "mini-swe-agent":
        return json.dumps(mini_swe_agent.write(conversation), ensure_ascii=False, indent=2) + "\n"
    if fmt == "openai-chat":
        return openai_chat.write(conversation)
    raise InteropError(f"Unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}.")


__all__ = [
    "EXPORT_FORMATS",
    "AgentStep",
    "Conversation",
    "InteropError",
    "conversation_events",
    "events_conversation",
    "export_text",
    "load_foreign",
    "parse_foreign",
]
