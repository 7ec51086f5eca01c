"""SWE-agent `.traj` files: `trajectory` (steps), `history` (the chat), `info`, `replay_config`.

Older files and function-calling runs may have an empty or missing `trajectory`; the steps are then
read from `history` (assistant `action` messages and the observation that follows each).
`replay_config` is a dict in some versions and a JSON string in others.
"""

from __future__ import annotations

import json
from typing import Any

from simulator.interop.model import (
    AgentStep,
    Conversation,
    InteropError,
    as_float,
    clean_message,
    dig,
    text_of,
)

FORMAT = "swe-agent"
_STEP_KEYS = ("action", "observation", "response", "thought", "execution_time")


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and (
        isinstance(data.get("trajectory"), list)
        or (isinstance(data.get("history"), list) and "messages" not in data)
    )


def _replay_config(data: dict[str, Any]) -> dict[str, Any]:
    config = data.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            return {}
    return config if isinstance(config, dict) else {}


def read(data: Any) -> Conversation:
    if not looks_like(data):
        raise InteropError("it has neither a `trajectory` nor a `history` list")
    raw_history = data.get("history") or []
    if not isinstance(raw_history, list):
        raise InteropError("its `history` is not a list")
    history = [clean_message(m) for m in raw_history]  # checked copies to read; raw ones kept
    first_action = next(
        (i for i, m in enumerate(history) if m["role"] == "assistant"), len(history)
    )
    config = _replay_config(data)
    info = data.get("info")
    conversation = Conversation(
        source_format=FORMAT,
        prompt=list(raw_history[:first_action]),
        info=dict(info) if isinstance(info, dict) else {},
        model=_str_or_none(dig(config, "agent", "model", "name")),
        image=_str_or_none(dig(config, "env", "deployment", "image")),
        fields={
            "keys": list(data),
            "top": {k: v for k, v in data.items() if k not in ("trajectory", "history")},
        },
    )
    commit = _str_or_none(dig(config, "env", "repo", "base_commit"))
    name = dig(config, "env", "repo", "repo_name") or dig(config, "env", "repo", "path")
    if commit or name:
        conversation.repo = {"source": _str_or_none(name), "commit": commit, "git": bool(commit)}
    steps = data.get("trajectory")
    if isinstance(steps, list) and steps:
        _steps_from_trajectory(conversation, steps, raw_history, history, first_action)
        # which fields each step had, in order: written back, none invented (issue 23)
        conversation.fields["step_keys"] = [list(raw) for raw in steps]
    else:
        conversation.steps, conversation.trailing = _steps_from_history(
            raw_history[first_action:], history[first_action:]
        )
    return conversation


def _steps_from_trajectory(
    conversation: Conversation,
    steps: list[Any],
    raw_history: list[dict[str, Any]],
    history: list[dict[str, Any]],
    first_action: int,
) -> None:
    """Steps from `trajectory`, each with the history messages that asked for its action and
    answered it (kept exactly); history messages that belong to no step stay in between."""
    cursor = first_action
    for index, raw in enumerate(steps):
        if not isinstance(raw, dict):
            raise InteropError(f"step {index + 1} of `trajectory` is not a JSON object")
        step = AgentStep(
            action=text_of(raw.get("action")),
            observation=text_of(raw.get("observation")),
            thought=text_of(raw.get("thought")),
            duration=as_float(raw.get("execution_time")),
            extra={k: v for k, v in raw.items() if k not in _STEP_KEYS},
        )
        response = raw.get("response")
        if isinstance(response, str) and response != step.thought:
            step.response = response
        found = _assistant_for(step, history, cursor)
        if found is not None:
            step.messages_before = list(raw_history[cursor:found])
            step.assistant_message = raw_history[found]
            _tool_call(step, history[found])
            cursor = found + 1
            if cursor < len(history) and history[cursor]["role"] in ("tool", "user"):
                step.observation_message = raw_history[cursor]
                cursor += 1
        conversation.steps.append(step)
    conversation.trailing = list(raw_history[cursor:])


def _assistant_for(step: AgentStep, history: list[dict[str, Any]], start: int) -> int | None:
    """The index of the assistant message that asked for `step` (the next one whose action is
    the step's, else simply the next one)."""
    assistants = [i for i in range(start, len(history)) if history[i]["role"] == "assistant"]
    for i in assistants:
        if text_of(history[i].get("action")) == step.action:
            return i
    return assistants[0] if assistants else None


def _tool_call(step: AgentStep, message: dict[str, Any]) -> None:
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        function = calls[0].get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            step.tool_name = function["name"]
            arguments = function.get("arguments")
            step.tool_arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
        if isinstance(calls[0].get("id"), str):
            step.tool_call_id = calls[0]["id"]


def _steps_from_history(
    raw: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> tuple[list[AgentStep], list[dict[str, Any]]]:
    """Steps read from the history alone, and the messages after the last one."""
    steps: list[AgentStep] = []
    pending: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if message["role"] != "assistant":
            pending.append(raw[index])
            index += 1
            continue
        observation, observed = "", None
        if index + 1 < len(messages) and messages[index + 1]["role"] in ("tool", "user"):
            observation = messages[index + 1]["content"]
            observed = raw[index + 1]
        thought = message.get("thought")
        step = AgentStep(
            action=text_of(message.get("action")) or message["content"],
            observation=observation,
            thought=thought if isinstance(thought, str) else message["content"],
            messages_before=pending,
            assistant_message=raw[index],
            observation_message=observed,
        )
        if message["content"] != step.thought:
            step.response = message["content"]
        _tool_call(step, message)
        steps.append(step)
        pending = []
        index += 2 if observed is not None else 1
    return steps, pending


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def write(conversation: Conversation) -> dict[str, Any]:
    """A .traj file. A conversation read from one is written back as it was read: its messages
    as they were (templates, agent names and all), its other top-level fields untouched."""
    exact = conversation.source_format == FORMAT and bool(conversation.fields.get("keys"))
    history: list[dict[str, Any]] = []
    for message in conversation.prompt:
        if exact:
            history.append(message)
        else:
            history.append({"agent": "main", "message_type": _prompt_type(message), **message})
    trajectory = []
    step_keys = conversation.fields.get("step_keys") if exact else None
    # Durations are known for RepoSim's own sessions and for SWE-agent steps that had them;
    # a conversation from a tool that records none gets no `execution_time` (never a zero).
    timed = conversation.source_format == "reposim"
    for number, step in enumerate(conversation.steps):
        history.extend(step.messages_before)
        entry: dict[str, Any] = {
            "action": step.action,
            "observation": step.observation,
            "response": step.response if step.response is not None else step.thought,
            "thought": step.thought,
        }
        if step.duration is not None and (timed or exact):
            entry["execution_time"] = step.duration
        entry.update(step.extra)
        if not exact:
            entry.setdefault("state", {})
        if isinstance(step_keys, list) and number < len(step_keys):
            keys = step_keys[number]
            entry = {key: entry.get(key) for key in keys if key in entry or key in _STEP_KEYS}
        trajectory.append(entry)
        if exact:
            if step.assistant_message is not None:
                history.append(step.assistant_message)
            if step.observation_message is not None:
                history.append(step.observation_message)
            continue
        history.extend(_messages(step, entry["response"], len(trajectory)))
    history.extend(conversation.trailing)
    info = dict(conversation.info)
    if exact:
        top = dict(conversation.fields.get("top") or {})
        parts = {"trajectory": trajectory, "history": history}
        return {
            key: parts[key] if key in parts else top.get(key) for key in conversation.fields["keys"]
        }
    environment = info.pop("environment", "main")
    repo = conversation.repo or {}
    return {
        "environment": environment,
        "trajectory": trajectory,
        "history": history,
        "info": info,
        "replay_config": {
            "env": {
                "deployment": {"image": conversation.image, "type": "docker"},
                "repo": {"repo_name": repo.get("source"), "base_commit": repo.get("commit")},
            },
            "agent": {"model": {"name": conversation.model}},
        },
    }


def _messages(step: AgentStep, response: str, number: int) -> list[dict[str, Any]]:
    """The history messages of a step that has none of its own (a RepoSim session's)."""
    action: dict[str, Any] = {
        "role": "assistant",
        "content": response,
        "thought": step.thought,
        "action": step.action,
        "agent": "main",
        "message_type": "action",
    }
    call_id = step.tool_call_id
    if step.tool_name is not None:
        call_id = call_id or f"call_{number}"
        action["tool_calls"] = [
            {
                "function": {"arguments": step.tool_arguments or "{}", "name": step.tool_name},
                "id": call_id,
                "type": "function",
            }
        ]
    observation: dict[str, Any] = {
        "role": "tool" if call_id and step.tool_name else "user",
        "content": step.observation,
        "agent": "main",
        "message_type": "observation",
    }
    if call_id and step.tool_name:
        observation["tool_call_ids"] = [call_id]
    return [action, observation]


def _prompt_type(message: dict[str, Any]) -> str:
    existing = message.get("message_type")
    if isinstance(existing, str):
        return existing
    return "system_prompt" if message.get("role") == "system" else "observation"
