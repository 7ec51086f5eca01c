"""mini-swe-agent trajectories, in both forms it has written.

- older: a plain JSON list of chat messages;
- current: `{"info": ..., "messages": [...], "trajectory_format": "mini-swe-agent-1.1"}`, each
  message possibly carrying an `extra` dict (and, in tool-calling runs, `tool_calls`).

An assistant message holds one action in a fenced block (```bash, ```mswea_bash_command, ...); the
user message after it is the observation, usually `<returncode>N</returncode><output>...</output>`.
An assistant message without exactly one action, and the reply to it (a format error), stay with
the next step as messages in between.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simulator.interop.model import (
    AgentStep,
    Conversation,
    InteropError,
    as_int,
    clean_message,
    dig,
)

FORMAT = "mini-swe-agent"
TRAJECTORY_FORMAT = "mini-swe-agent-1.1"
_ACTION = re.compile(r"```(?:mswea_bash_command|bash|sh|shell)?[ \t]*\n(.*?)\n```", re.DOTALL)
_OBSERVATION = re.compile(
    r"\A\s*<returncode>(-?\d+)</returncode>\s*<output>\n?(.*)</output>\s*\Z", re.DOTALL
)


def looks_like(data: Any) -> bool:
    if isinstance(data, list):
        return all(isinstance(m, dict) and "role" in m for m in data) and bool(data)
    return isinstance(data, dict) and isinstance(data.get("messages"), list)


def read(data: Any) -> Conversation:
    info: dict[str, Any] = {}
    fields: dict[str, Any]
    if isinstance(data, list):
        messages = data
        fields = {"form": "list"}
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        messages = data["messages"]
        if isinstance(data.get("info"), dict):
            info = data["info"]
        fields = {
            "form": "object",
            "keys": list(data),
            "top": {k: v for k, v in data.items() if k != "messages"},
        }
    else:
        raise InteropError("it is neither a list of messages nor an object with `messages`")
    chat = [clean_message(m) for m in messages]  # checked copies to read; the raw ones kept
    first = next((i for i, m in enumerate(chat) if m["role"] == "assistant"), len(chat))
    model = dig(info, "config", "model", "model_name") or dig(info, "model_name")
    conversation = Conversation(
        source_format=FORMAT,
        prompt=list(messages[:first]),
        info={k: v for k, v in info.items() if k != "config"},
        model=model if isinstance(model, str) else None,
        fields=fields,
    )
    if isinstance(info.get("config"), dict):
        conversation.info["config"] = info["config"]
    pending: list[dict[str, Any]] = []
    index = first
    while index < len(chat):
        message = chat[index]
        action = _action_of(message) if message["role"] == "assistant" else None
        if action is None:
            pending.append(messages[index])
            index += 1
            continue
        reply = chat[index + 1] if index + 1 < len(chat) else None
        if reply is not None and reply["role"] == "assistant":
            reply = None
        step = _step(message, action, reply)
        step.assistant_message = messages[index]
        step.observation_message = messages[index + 1] if reply is not None else None
        step.messages_before = pending
        pending = []
        conversation.steps.append(step)
        index += 2 if reply is not None else 1
    conversation.trailing = pending
    return conversation


def _action_of(message: dict[str, Any]) -> str | None:
    calls = message.get("tool_calls")
    if isinstance(calls, list) and len(calls) == 1 and isinstance(calls[0], dict):
        function = calls[0].get("function")
        if isinstance(function, dict):
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    return arguments
            if isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
                return str(arguments["command"])
            return json.dumps(arguments)
    actions = dig(message, "extra", "actions")
    if isinstance(actions, list) and len(actions) == 1 and isinstance(actions[0], dict):
        command = actions[0].get("command")
        if isinstance(command, str):
            return command
    found = _ACTION.findall(message["content"])
    return found[0] if len(found) == 1 else None


def _step(message: dict[str, Any], action: str, reply: dict[str, Any] | None) -> AgentStep:
    content = message["content"]
    match = _ACTION.search(content)
    thought = content[: match.start()].rstrip() if match else content
    step = AgentStep(action=action, observation="", thought=thought, response=content)
    extra = message.get("extra")
    if isinstance(extra, dict) and extra:
        step.extra["assistant_extra"] = extra
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[0], dict):
        step.tool_name = "bash"
        step.tool_arguments = json.dumps({"command": action})
        if isinstance(calls[0].get("id"), str):
            step.tool_call_id = calls[0]["id"]
    if reply is not None:
        observed = _OBSERVATION.match(reply["content"])
        if observed:
            step.exit_code = as_int(observed.group(1))
            step.observation = observed.group(2)
        else:
            step.observation = reply["content"]
        reply_extra = reply.get("extra")
        if isinstance(reply_extra, dict):
            code = as_int(reply_extra.get("returncode"))
            if code is not None and step.exit_code is None:
                step.exit_code = code
            step.extra["observation_extra"] = reply_extra
    return step


def write(conversation: Conversation) -> dict[str, Any] | list[dict[str, Any]]:
    """A mini-swe-agent trajectory (its current form). A conversation read from one is written
    back as it was read: its form, its messages exactly, its other top-level fields."""
    exact = conversation.source_format == FORMAT and bool(conversation.fields.get("form"))
    messages: list[dict[str, Any]] = [dict(m) for m in conversation.prompt]
    for step in conversation.steps:
        messages.extend(step.messages_before)
        if exact and step.assistant_message is not None:
            messages.append(step.assistant_message)
            if step.observation_message is not None:
                messages.append(step.observation_message)
            continue
        content = step.response
        if content is None or _action_of({"content": content}) != step.action:
            thought = step.thought.strip()
            content = (thought + "\n\n" if thought else "") + f"```bash\n{step.action}\n```"
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        if isinstance(step.extra.get("assistant_extra"), dict):
            assistant["extra"] = step.extra["assistant_extra"]
        messages.append(assistant)
        if step.exit_code is not None:
            observed = (
                f"<returncode>{step.exit_code}</returncode>\n<output>\n{step.observation}</output>"
            )
        else:
            observed = step.observation
        reply: dict[str, Any] = {"role": "user", "content": observed}
        if isinstance(step.extra.get("observation_extra"), dict):
            reply["extra"] = step.extra["observation_extra"]
        messages.append(reply)
    messages.extend(conversation.trailing)
    if exact and conversation.fields["form"] == "list":
        return messages
    if exact:
        top = dict(conversation.fields.get("top") or {})
        parts = {"messages": messages}
        return {
            key: parts[key] if key in parts else top.get(key) for key in conversation.fields["keys"]
        }
    info = _info(conversation)
    info.setdefault("exit_status", None)
    info.setdefault("submission", None)
    return {"info": info, "messages": messages, "trajectory_format": TRAJECTORY_FORMAT}


def _info(conversation: Conversation) -> dict[str, Any]:
    info = dict(conversation.info)
    if conversation.model and not dig(info, "config", "model", "model_name"):
        config = dict(info.get("config") or {})
        config["model"] = {**(config.get("model") or {}), "model_name": conversation.model}
        info["config"] = config
    return info
