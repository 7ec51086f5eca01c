"""OpenAI chat JSONL, the fine-tuning format: one JSON object a line, `{"messages": [...]}`.

Each action is an assistant message with one tool call (`bash` with `{"command": ...}` for shell
commands, the recorded tool's own name otherwise) and the observation is the `tool` message that
answers it. Reading accepts several conversations (one a line) and joins them in order.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simulator.interop.model import (
    AgentStep,
    Conversation,
    InteropError,
    clean_message,
    not_json,
    tool_call_action,
)
from simulator.wire import json_lines

FORMAT = "openai-chat"

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a command in the repository's persistent shell.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}


def read_lines(text: str) -> Conversation:
    conversations: list[list[dict[str, Any]]] = []
    for number, data in json_lines(text.splitlines(), not_json):
        messages = data.get("messages") if isinstance(data, dict) else data
        if not isinstance(messages, list):
            raise InteropError(f"line {number} has no `messages` list")
        try:
            conversations.append([clean_message(m) for m in messages])
        except InteropError as exc:
            raise InteropError(f"line {number}: {exc}") from None
    if not conversations:
        raise InteropError("it holds no conversation")
    conversation = Conversation(source_format=FORMAT)
    for index, messages in enumerate(conversations):
        _add(conversation, messages, first=index == 0)
    return conversation


def _add(conversation: Conversation, messages: list[dict[str, Any]], *, first: bool) -> None:
    pending: list[dict[str, Any]] = list(conversation.trailing)
    start = 0
    if first:
        start = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), len(messages))
        conversation.prompt = messages[:start]
    index = start
    while index < len(messages):
        message = messages[index]
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        if not isinstance(calls, list) or not calls:
            pending.append(message)
            index += 1
            continue
        index += 1
        replies: dict[str, str] = {}
        while index < len(messages) and messages[index]["role"] == "tool":
            replies[str(messages[index].get("tool_call_id"))] = messages[index]["content"]
            index += 1
        for position, call in enumerate(calls):
            step = _step(message, call, replies, position)
            step.messages_before, pending = pending, []
            conversation.steps.append(step)
    conversation.trailing = pending


def _step(message: dict[str, Any], call: Any, replies: dict[str, str], position: int) -> AgentStep:
    if not isinstance(call, dict):
        raise InteropError("a tool call is not a JSON object")
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    assert isinstance(function, dict)
    name = str(function.get("name") or "tool")
    raw = function.get("arguments")
    arguments = raw if isinstance(raw, str) else json.dumps(raw)
    call_id = call.get("id")
    observation = replies.get(str(call_id), "")
    content = message["content"] if position == 0 else ""
    return AgentStep(
        action=tool_call_action(name, arguments),
        observation=observation,
        thought=content,
        tool_name=name,
        tool_arguments=arguments,
        tool_call_id=call_id if isinstance(call_id, str) else None,
    )


def write(conversation: Conversation) -> str:
    messages: list[dict[str, Any]] = [
        {"role": m.get("role", "user"), "content": m.get("content", "")}
        for m in conversation.prompt
    ]
    tools = {"bash"}
    for number, step in enumerate(conversation.steps, start=1):
        messages.extend(
            {"role": m.get("role", "user"), "content": m.get("content", "")}
            for m in step.messages_before
        )
        call_id = step.tool_call_id or f"call_{number}"
        if step.tool_name and step.tool_name != "bash" and step.tool_arguments is not None:
            # OpenAI function names allow letters, digits, _ and - only (file.edit -> file_edit).
            name, arguments = re.sub(r"[^A-Za-z0-9_-]", "_", step.tool_name), step.tool_arguments
            tools.add(name)
        else:
            name, arguments = "bash", json.dumps({"command": step.action}, ensure_ascii=False)
        messages.append(
            {
                "role": "assistant",
                "content": step.thought or None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": step.observation})
    messages.extend(
        {"role": m.get("role", "user"), "content": m.get("content", "")}
        for m in conversation.trailing
    )
    record: dict[str, Any] = {"messages": messages}
    record["tools"] = [BASH_TOOL] + [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in sorted(tools - {"bash"})
    ]
    return json.dumps(record, ensure_ascii=False) + "\n"
