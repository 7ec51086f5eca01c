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


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def read(data: Any) -> Conversation:
    if not looks_like(data):
        raise InteropError("it has neither a `trajectory` nor a `history` list")
    history = [clean_message(m) for m in data.get("history") or []]
    first_action = next(
        (i for i, m in enumerate(history) if m["role"] == "assistant"), len(history)
    )
    config = _replay_config(data)
    info = data.get("info")
    conversation = Conversation(
        source_format=FORMAT,
        prompt=history[:first_action],
        info=dict(info) if isinstance(info, dict) else {},
        model=_str_or_none(_dig(config, "agent", "model", "name")),
        image=_str_or_none(_dig(config, "env", "deployment", "image")),
    )
    commit = _str_or_none(_dig(config, "env", "repo", "base_commit"))
    name = _dig(config, "env", "repo", "repo_name") or _dig(config, "env", "repo", "path")
    if commit or name:
        conversation.repo = {"source": _str_or_none(name), "commit": commit, "git": bool(commit)}
    if isinstance(info, dict) and info and isinstance(data.get("environment"), str):
        conversation.info.setdefault("environment", data["environment"])
    steps = data.get("trajectory")
    if isinstance(steps, list) and steps:
        calls = [m for m in history[first_action:] if m["role"] == "assistant"]
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
            if index < len(calls):
                _tool_call(step, calls[index])
            conversation.steps.append(step)
    else:
        conversation.steps = _steps_from_history(history[first_action:])
    return conversation


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


def _steps_from_history(messages: list[dict[str, Any]]) -> list[AgentStep]:
    steps: list[AgentStep] = []
    pending: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if message["role"] != "assistant":
            pending.append(message)
            index += 1
            continue
        observation = ""
        if index + 1 < len(messages) and messages[index + 1]["role"] in ("tool", "user"):
            observation = messages[index + 1]["content"]
            index += 1
        thought = message.get("thought")
        step = AgentStep(
            action=text_of(message.get("action")) or message["content"],
            observation=observation,
            thought=thought if isinstance(thought, str) else message["content"],
            messages_before=pending,
        )
        if message["content"] != step.thought:
            step.response = message["content"]
        _tool_call(step, message)
        steps.append(step)
        pending = []
        index += 1
    return steps


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def write(conversation: Conversation) -> dict[str, Any]:
    history: list[dict[str, Any]] = []
    for message in conversation.prompt:
        history.append({"agent": "main", "message_type": _prompt_type(message), **message})
    trajectory = []
    for step in conversation.steps:
        history.extend(step.messages_before)
        entry: dict[str, Any] = {
            "action": step.action,
            "observation": step.observation,
            "response": step.response if step.response is not None else step.thought,
            "thought": step.thought,
            "execution_time": step.duration if step.duration is not None else 0.0,
        }
        entry.update(step.extra)
        entry.setdefault("state", {})
        trajectory.append(entry)
        action: dict[str, Any] = {
            "role": "assistant",
            "content": entry["response"],
            "thought": step.thought,
            "action": step.action,
            "agent": "main",
            "message_type": "action",
        }
        call_id = step.tool_call_id
        if step.tool_name is not None:
            call_id = call_id or f"call_{len(trajectory)}"
            action["tool_calls"] = [
                {
                    "function": {"arguments": step.tool_arguments or "{}", "name": step.tool_name},
                    "id": call_id,
                    "type": "function",
                }
            ]
        history.append(action)
        observation: dict[str, Any] = {
            "role": "tool" if call_id and step.tool_name else "user",
            "content": step.observation,
            "agent": "main",
            "message_type": "observation",
        }
        if call_id and step.tool_name:
            observation["tool_call_ids"] = [call_id]
        history.append(observation)
    history.extend(conversation.trailing)
    info = dict(conversation.info)
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


def _prompt_type(message: dict[str, Any]) -> str:
    existing = message.get("message_type")
    if isinstance(existing, str):
        return existing
    return "system_prompt" if message.get("role") == "system" else "observation"
