"""The shape every agent tool's trajectory shares, and its mapping to RepoSim events.

Other tools record an agent's run as a prompt (system and task messages) followed by steps: a
thought, an action (a command or a tool call) and the observation that answered it. RepoSim records
the same run as events (`llm.call`, `llm.response`, `exec` + `exec.result`, file events, ...).
`Conversation` is the meeting point: readers build one from a foreign file, `conversation_events`
turns it into RepoSim events, `events_conversation` reads one back out of RepoSim events, and
writers produce foreign files from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from simulator import __version__
from simulator.events import Actor, Event, Kind
from simulator.trajectory import SCHEMA, TrajectoryError, now_iso


class InteropError(TrajectoryError):
    """A file of another tool that cannot be read or written; one clear sentence."""


FILE_KINDS = (
    Kind.FILE_WRITE,
    Kind.FILE_CREATE,
    Kind.FILE_EDIT,
    Kind.FILE_DELETE,
    Kind.FILE_RENAME,
)


@dataclass
class AgentStep:
    action: str
    observation: str
    thought: str = ""
    response: str | None = None
    """The model's whole answer when it is more than the thought (e.g. thought + code block)."""
    exit_code: int | None = None
    duration: float | None = None
    tool_name: str | None = None
    tool_arguments: str | None = None
    """JSON text of the tool call's arguments (function calling)."""
    tool_call_id: str | None = None
    messages_before: list[dict[str, Any]] = field(default_factory=list)
    """Messages between the previous step and this one that are neither (e.g. format errors)."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Conversation:
    source_format: str
    prompt: list[dict[str, Any]] = field(default_factory=list)
    steps: list[AgentStep] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    """exit status, submission, model stats, ... as the tool recorded them."""
    model: str | None = None
    repo: dict[str, Any] = field(default_factory=dict)
    image: str | None = None
    trailing: list[dict[str, Any]] = field(default_factory=list)
    """Messages after the last step."""

    @property
    def task(self) -> str:
        for message in self.prompt:
            if message.get("role") == "user":
                return text_of(message.get("content"))
        return ""

    @property
    def system(self) -> str:
        for message in self.prompt:
            if message.get("role") == "system":
                return text_of(message.get("content"))
        return ""


def text_of(content: Any) -> str:
    """Message content as text: a string, or OpenAI's list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text", "")))
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return str(content)


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return None


def clean_message(message: Any) -> dict[str, Any]:
    """A chat message as a plain dict with a role and text content (extra keys kept)."""
    if not isinstance(message, dict):
        raise InteropError("a message is not a JSON object")
    out = dict(message)
    out["role"] = str(message.get("role", "user"))
    out["content"] = text_of(message.get("content"))
    return out


# -- Conversation -> RepoSim events ------------------------------------------------------------


def conversation_events(
    conversation: Conversation, source: str
) -> tuple[dict[str, Any], list[Event]]:
    """The header and events of a RepoSim trajectory holding `conversation`."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    repo = {"source": None, "git": False, **conversation.repo}
    header: dict[str, Any] = {
        "schema": SCHEMA,
        "session": f"imported-{digest}",
        "created": now_iso(),
        "repo": repo,
        "backend": {"kind": "docker" if conversation.image else None, "image": conversation.image},
        "agent": {"model": conversation.model, "mode": "auto"},
        "reposim": __version__,
        "imported": {"format": conversation.source_format, "file": source},
    }
    events: list[Event] = []
    clock = 0.0

    def add(actor: Actor, kind: str, payload: dict[str, Any], cause: int | None = None) -> int:
        seq = len(events) + 1
        events.append(
            Event(seq=seq, t=round(clock, 6), actor=actor, kind=kind, payload=payload, cause=cause)
        )
        return seq

    if conversation.prompt:
        add(
            Actor.AGENT,
            Kind.LLM_CALL,
            {"model": conversation.model, "messages": conversation.prompt},
        )
    for step in conversation.steps:
        if step.messages_before:
            add(
                Actor.AGENT,
                Kind.LLM_CALL,
                {"model": conversation.model, "messages": step.messages_before},
            )
        response: dict[str, Any] = {
            "content": step.response if step.response is not None else step.thought,
            "thought": step.thought,
        }
        if step.tool_name is not None:
            response["tool_calls"] = [
                {
                    "id": step.tool_call_id,
                    "name": step.tool_name,
                    "arguments": step.tool_arguments or "",
                }
            ]
        add(Actor.AGENT, Kind.LLM_RESPONSE, response)
        dotted = (step.tool_name or "").replace("_", ".", 1)  # file_edit from OpenAI chat
        file_kind = dotted if dotted in FILE_KINDS else None
        if file_kind is not None:
            payload = _loads_object(step.tool_arguments)
            payload.setdefault("path", "")
            payload["diff"] = step.observation
            add(Actor.AGENT, file_kind, payload)
        else:
            action = add(Actor.AGENT, Kind.EXEC, {"command": step.action, "timeout": None})
            clock += step.duration or 0.0
            result: dict[str, Any] = {
                "exit_code": step.exit_code,
                "output": step.observation,
                "duration": step.duration if step.duration is not None else 0.0,
                "timed_out": False,
                "interrupted": False,
                "shell_restarted": False,
                "oom_killed": False,
                "cwd": None,
            }
            if step.extra:
                result["extra"] = step.extra
            add(Actor.AGENT, Kind.EXEC_RESULT, result, cause=action)
    if conversation.trailing:
        add(
            Actor.AGENT,
            Kind.LLM_CALL,
            {"model": conversation.model, "messages": conversation.trailing},
        )
    if any(value not in (None, "", {}, []) for value in conversation.info.values()):
        add(
            Actor.AGENT,
            Kind.AGENT_FINISH,
            {
                "summary": str(conversation.info.get("submission") or ""),
                "exit_status": conversation.info.get("exit_status"),
                "info": conversation.info,
            },
        )
    return header, events


def _loads_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


# -- RepoSim events -> Conversation ------------------------------------------------------------


def _file_action(event: Event) -> tuple[str, dict[str, Any]]:
    p = event.payload
    path = str(p.get("path", ""))
    if event.kind == Kind.FILE_EDIT:
        args = {"path": path, "old": p.get("old"), "new": p.get("new")}
        if p.get("replacements", 1) != 1:
            args["replacements"] = p.get("replacements")
        return f"edit {path}", args
    if event.kind == Kind.FILE_RENAME:
        return f"rename {path} {p.get('to')}", {"path": path, "to": p.get("to")}
    if event.kind == Kind.FILE_DELETE:
        return f"delete {path}", {"path": path}
    verb = "create" if event.kind == Kind.FILE_CREATE else "write"
    return f"{verb} {path}", {"path": path, "content": p.get("content")}


def events_conversation(header: dict[str, Any], events: Iterable[Event]) -> Conversation:
    """Read the agent's (and the human's) steps back out of RepoSim events."""
    imported = header.get("imported") or {}
    agent = header.get("agent") or {}
    repo = header.get("repo") or {}
    backend = header.get("backend") or {}
    conversation = Conversation(
        source_format=str(imported.get("format") or "reposim"),
        model=agent.get("model") if isinstance(agent, dict) else None,
        repo={k: repo.get(k) for k in ("source", "commit", "git") if k in repo}
        if isinstance(repo, dict)
        else {},
        image=backend.get("image") if isinstance(backend, dict) else None,
    )
    pending: list[dict[str, Any]] = []
    thought: dict[str, Any] | None = None
    actions: dict[int, Event] = {}
    tool_calls: dict[int, Event] = {}
    for event in events:
        p = event.payload
        if (
            tool_calls
            and event.actor == Actor.AGENT
            and (
                event.kind in _ACTION_KINDS
                or event.kind in FILE_KINDS
                or event.kind == Kind.FILE_READ
            )
        ):
            continue  # the implementation of an agent's tool call: the call is the step
        if event.kind == Kind.LLM_CALL:
            listed = p.get("messages")
            messages = (
                [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
            )
            if not conversation.steps and not thought:
                conversation.prompt.extend(messages)
            else:
                pending.extend(messages)
        elif event.kind == Kind.NOTE and p.get("mark") == "agent.task":
            task = {"role": "user", "content": str(p.get("text", ""))}
            (pending if conversation.steps else conversation.prompt).append(task)
        elif event.kind == Kind.LLM_RESPONSE:
            thought = p
        elif event.kind == Kind.TOOL_CALL:
            tool_calls[event.seq] = event
        elif event.kind == Kind.TOOL_RESULT:
            call = tool_calls.pop(event.cause, None) if event.cause is not None else None
            if call is None:
                continue
            step = _tool_step(call, event)
            _attach(step, thought, pending)
            conversation.steps.append(step)
            thought, pending = None, []
        elif event.kind in _ACTION_KINDS:
            actions[event.seq] = event
        elif event.kind in (Kind.EXEC_RESULT, Kind.TEST_RESULT, Kind.SEARCH_RESULT):
            action_event = actions.pop(event.cause, None) if event.cause is not None else None
            if action_event is None:
                continue
            step = _command_step(action_event, event)
            _attach(step, thought, pending)
            conversation.steps.append(step)
            thought, pending = None, []
        elif event.kind in FILE_KINDS:
            action, args = _file_action(event)
            step = AgentStep(
                action=action,
                observation=str(p.get("diff") or ""),
                tool_name=event.kind,
                tool_arguments=json.dumps(args, ensure_ascii=False),
            )
            _attach(step, thought, pending)
            if thought is None or not step.tool_call_id:
                step.tool_call_id = f"call_{event.seq}"
            conversation.steps.append(step)
            thought, pending = None, []
        elif event.kind == Kind.AGENT_FINISH:
            info = p.get("info")
            conversation.info = (
                dict(info)
                if isinstance(info, dict)
                else {"submission": p.get("summary"), "exit_status": p.get("exit_status")}
            )
    conversation.trailing = pending
    return conversation


_ACTION_KINDS = (Kind.EXEC, Kind.TEST_RUN, Kind.SEARCH)


def _tool_step(call: Event, result: Event) -> AgentStep:
    name = str(call.payload.get("name") or "tool")
    raw = call.payload.get("arguments")
    arguments = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        parsed = None
    if name == "bash" and isinstance(parsed, dict) and isinstance(parsed.get("command"), str):
        action = parsed["command"]
    elif isinstance(parsed, dict):
        action = " ".join([name, *(str(v) for v in parsed.values())])
    else:
        action = f"{name} {arguments}"
    call_id = call.payload.get("id")
    return AgentStep(
        action=action,
        observation=str(result.payload.get("output", "")),
        tool_name=name,
        tool_arguments=arguments,
        tool_call_id=call_id if isinstance(call_id, str) else None,
    )


def _command_step(action: Event, result: Event) -> AgentStep:
    a, r = action.payload, result.payload
    if action.kind == Kind.TEST_RUN:
        text = str(a.get("command", "")) + (f" {a['selector']}" if a.get("selector") else "")
        observation = str(r.get("output", ""))
    elif action.kind == Kind.SEARCH:
        text = f"grep -rn {json.dumps(str(a.get('pattern', '')))} {a.get('path', '.')}"
        observation = "\n".join(
            f"{m[0]}:{m[1]}:{m[2]}"
            for m in r.get("matches") or []
            if isinstance(m, list) and len(m) == 3
        )
    else:
        text = str(a.get("command", ""))
        observation = str(r.get("output", ""))
    step = AgentStep(
        action=text,
        observation=observation,
        exit_code=as_int(r.get("exit_code")),
        duration=as_float(r.get("duration")),
    )
    extra = r.get("extra")
    if isinstance(extra, dict):
        step.extra = dict(extra)
    return step


def _attach(step: AgentStep, thought: dict[str, Any] | None, pending: list[dict[str, Any]]) -> None:
    step.messages_before = pending
    if thought is None:
        return
    step.thought = str(
        thought.get("thought")
        if thought.get("thought") is not None
        else thought.get("content") or ""
    )
    content = thought.get("content")
    if isinstance(content, str) and content != step.thought:
        step.response = content
    calls = thought.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        call = calls[0]
        function: dict[str, Any] = call
        if isinstance(call.get("function"), dict):
            function = call["function"]
        name = function.get("name")
        if step.tool_name is None and isinstance(name, str):
            step.tool_name = name
            arguments = function.get("arguments")
            step.tool_arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        if isinstance(call.get("id"), str):
            step.tool_call_id = call["id"]
