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

from simulator.events import (
    Actor,
    AgentFinishPayload,
    Event,
    ExecPayload,
    ExecResultPayload,
    FileChangePayload,
    FileRenamePayload,
    Kind,
    LlmCallPayload,
    LlmResponsePayload,
    NotePayload,
    Payload,
    SearchPayload,
    SearchResultPayload,
    TestResultPayload,
    TestRunPayload,
    ToolCallPayload,
    ToolResultPayload,
    parse_payload,
)
from simulator.trajectory_header import (
    AgentInfo,
    BackendInfo,
    ImportInfo,
    RepoInfo,
    TrajectoryError,
    TrajectoryHeader,
)
from simulator.wire import WireError


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
    assistant_message: dict[str, Any] | None = None
    """The message that asked for the action, exactly as the other tool wrote it."""
    observation_message: dict[str, Any] | None = None
    """The message that answered it, exactly as the other tool wrote it (templates and all)."""


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
    fields: dict[str, Any] = field(default_factory=dict)
    """What of the file has no event (its other top-level fields, its form), to write it back."""

    @property
    def task(self) -> str:
        return self._first("user")

    @property
    def system(self) -> str:
        return self._first("system")

    def _first(self, role: str) -> str:
        """The text of the prompt's first message from `role` ("" without one)."""
        for message in self.prompt:
            if message.get("role") == role:
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
) -> tuple[TrajectoryHeader, list[Event]]:
    """The header and events of a RepoSim trajectory holding `conversation`."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    header = TrajectoryHeader.new(
        f"imported-{digest}",
        repo=RepoInfo.from_dict({"source": None, "git": False, **conversation.repo}, "repo"),
        backend=BackendInfo(
            kind="docker" if conversation.image else None,
            image=conversation.image,
        ),
        agent=AgentInfo(model=conversation.model, mode="auto"),
        imported=ImportInfo(conversation.source_format, source, conversation.fields),
    )
    events: list[Event] = []
    clock = 0.0

    def add(actor: Actor, kind: Kind, data: Payload, cause: int | None = None) -> int:
        seq = len(events) + 1
        events.append(Event.of(seq, round(clock, 6), actor, data, kind=kind, cause=cause))
        return seq

    if conversation.prompt:
        add(Actor.AGENT, Kind.LLM_CALL, LlmCallPayload(conversation.model, conversation.prompt))
    for step in conversation.steps:
        if step.messages_before:
            messages = step.messages_before
            add(Actor.AGENT, Kind.LLM_CALL, LlmCallPayload(conversation.model, messages))
        calls = []
        if step.tool_name is not None:
            calls = [ToolCallPayload(step.tool_call_id, step.tool_name, step.tool_arguments or "")]
        response = LlmResponsePayload(
            content=step.response if step.response is not None else step.thought,
            thought=step.thought,
            tool_calls=calls,
            message=step.assistant_message,
        )
        add(Actor.AGENT, Kind.LLM_RESPONSE, response)
        dotted = (step.tool_name or "").replace("_", ".", 1)  # file_edit from OpenAI chat
        file_kind = Kind(dotted) if dotted in FILE_KINDS else None
        if file_kind is not None:
            arguments = _loads_object(step.tool_arguments)
            arguments.setdefault("path", "")
            arguments["diff"] = step.observation
            try:
                change = parse_payload(file_kind, arguments)
            except WireError as exc:
                raise InteropError(f"the {step.tool_name} call cannot be read: {exc}") from None
            add(Actor.AGENT, file_kind, change)
        else:
            action = add(Actor.AGENT, Kind.EXEC, ExecPayload(step.action))
            clock += step.duration or 0.0
            result = ExecResultPayload(
                exit_code=step.exit_code,
                output=step.observation,
                duration=step.duration if step.duration is not None else 0.0,
                extra=step.extra or None,
                message=step.observation_message,
            )
            add(Actor.AGENT, Kind.EXEC_RESULT, result, cause=action)
    if conversation.trailing:
        add(Actor.AGENT, Kind.LLM_CALL, LlmCallPayload(conversation.model, conversation.trailing))
    if any(value not in (None, "", {}, []) for value in conversation.info.values()):
        finish = AgentFinishPayload(
            summary=str(conversation.info.get("submission") or ""),
            exit_status=conversation.info.get("exit_status"),
            info=conversation.info,
        )
        add(Actor.AGENT, Kind.AGENT_FINISH, finish)
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


def _file_action(
    kind: Kind, data: FileChangePayload | FileRenamePayload
) -> tuple[str, dict[str, Any]]:
    path = data.path
    if isinstance(data, FileRenamePayload):
        return f"rename {path} {data.to}", {"path": path, "to": data.to}
    if kind == Kind.FILE_EDIT:
        args: dict[str, Any] = {"path": path, "old": data.old, "new": data.new}
        if data.replacements not in (None, 1):
            args["replacements"] = data.replacements
        return f"edit {path}", args
    if kind == Kind.FILE_DELETE:
        return f"delete {path}", {"path": path}
    verb = "create" if kind == Kind.FILE_CREATE else "write"
    return f"{verb} {path}", {"path": path, "content": data.content}


def events_conversation(header: TrajectoryHeader, events: Iterable[Event]) -> Conversation:
    """Read the agent's (and the human's) steps back out of RepoSim events."""
    imported = header.imported
    repo = header.repo
    conversation = Conversation(
        source_format=imported.format if imported is not None else "reposim",
        model=header.agent.model if header.agent is not None else None,
        repo={"source": repo.source, "git": repo.git, "commit": repo.commit},
        image=header.backend.image,
        fields=dict(imported.extra) if imported is not None else {},
    )
    pending: list[dict[str, Any]] = []
    thought: LlmResponsePayload | None = None
    actions: dict[int, Event] = {}
    tool_calls: dict[int, ToolCallPayload] = {}
    for event in events:
        data = event.data
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
        if isinstance(data, LlmCallPayload):
            messages = data.messages if isinstance(data.messages, list) else []
            if not conversation.steps and not thought:
                conversation.prompt.extend(messages)
            else:
                pending.extend(messages)
        elif isinstance(data, NotePayload) and data.mark == "agent.task":
            task = {"role": "user", "content": data.text}
            (pending if conversation.steps else conversation.prompt).append(task)
        elif isinstance(data, LlmResponsePayload):
            thought = data
        elif isinstance(data, ToolCallPayload):
            tool_calls[event.seq] = data
        elif isinstance(data, ToolResultPayload):
            call = tool_calls.pop(event.cause, None) if event.cause is not None else None
            if call is None:
                continue
            step = _tool_step(call, data)
            _attach(step, thought, pending)
            conversation.steps.append(step)
            thought, pending = None, []
        elif event.kind in _ACTION_KINDS:
            actions[event.seq] = event
        elif isinstance(data, ExecResultPayload | TestResultPayload | SearchResultPayload):
            action_event = actions.pop(event.cause, None) if event.cause is not None else None
            if action_event is None:
                continue
            step = _command_step(action_event.data, data)
            _attach(step, thought, pending)
            conversation.steps.append(step)
            thought, pending = None, []
        elif isinstance(data, FileChangePayload | FileRenamePayload):
            action, args = _file_action(event.kind, data)
            diff = data.diff if isinstance(data, FileChangePayload) else None
            step = AgentStep(
                action=action,
                observation=diff or "",
                tool_name=str(event.kind),
                tool_arguments=json.dumps(args, ensure_ascii=False),
            )
            _attach(step, thought, pending)
            if thought is None or not step.tool_call_id:
                step.tool_call_id = f"call_{event.seq}"
            conversation.steps.append(step)
            thought, pending = None, []
        elif isinstance(data, AgentFinishPayload):
            conversation.info = (
                dict(data.info)
                if data.info is not None
                else {"submission": data.summary, "exit_status": data.exit_status}
            )
    conversation.trailing = pending
    return conversation


_ACTION_KINDS = (Kind.EXEC, Kind.TEST_RUN, Kind.SEARCH)


def not_json(number: int, message: str) -> InteropError:
    """The error for line `number` of another tool's JSON-lines file that is not JSON."""
    return InteropError(f"line {number} is not JSON ({message})")


def dig(data: Any, *keys: str) -> Any:
    """`data[k1][k2]...` of nested JSON objects, or None where one is missing or not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def tool_call_action(name: str, arguments: str) -> str:
    """The action of a tool call `name(arguments)` (JSON text): a bash call's command, else as
    SWE-agent renders a call: the name, then the argument values."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        parsed = None
    if name == "bash" and isinstance(parsed, dict) and isinstance(parsed.get("command"), str):
        return str(parsed["command"])
    if isinstance(parsed, dict):
        return " ".join([name, *(str(v) for v in parsed.values())])
    return f"{name} {arguments}"


def _tool_step(call: ToolCallPayload, result: ToolResultPayload) -> AgentStep:
    name, arguments = call.name, call.arguments
    return AgentStep(
        action=tool_call_action(name, arguments),
        observation=result.output,
        tool_name=name,
        tool_arguments=arguments,
        tool_call_id=call.id,
    )


def _command_step(
    action: Payload, result: ExecResultPayload | TestResultPayload | SearchResultPayload
) -> AgentStep:
    if isinstance(action, TestRunPayload):
        text = action.command + (f" {action.selector}" if action.selector else "")
    elif isinstance(action, SearchPayload):
        text = f"grep -rn {json.dumps(action.pattern)} {action.path}"
    elif isinstance(action, ExecPayload):
        text = action.command
    else:
        text = ""
    if isinstance(result, SearchResultPayload):
        observation = "\n".join(f"{path}:{line}:{found}" for path, line, found in result.matches)
        return AgentStep(action=text, observation=observation)
    step = AgentStep(
        action=text,
        observation=result.output,
        exit_code=result.exit_code,
        duration=result.duration,
    )
    if isinstance(result, ExecResultPayload):
        step.extra = dict(result.extra or {})
        step.observation_message = result.message
    return step


def _attach(
    step: AgentStep, thought: LlmResponsePayload | None, pending: list[dict[str, Any]]
) -> None:
    step.messages_before = pending
    if thought is None:
        return
    step.assistant_message = thought.message
    step.thought = thought.thought if thought.thought is not None else thought.content or ""
    if thought.content is not None and thought.content != step.thought:
        step.response = thought.content
    if thought.tool_calls:
        call = thought.tool_calls[0]
        if step.tool_name is None:
            step.tool_name = call.name
            step.tool_arguments = call.arguments
        if call.id is not None:
            step.tool_call_id = call.id
