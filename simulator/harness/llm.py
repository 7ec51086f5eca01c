"""One-shot model calls for the workflows (harness, codegen): recorded like the agent's."""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Sequence

from simulator.agent.models import Message, ModelClient, ModelError, ModelTurn, turn_payload
from simulator.events import Actor, ErrorPayload, Kind, LlmCallPayload
from simulator.session import Session

_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


async def ask(session: Session, client: ModelClient, messages: Sequence[Message]) -> ModelTurn:
    """Ask the model for a text answer (no tools); `llm.call`/`llm.response` are recorded."""
    call = session.emit(
        Actor.AGENT,
        Kind.LLM_CALL,
        LlmCallPayload(model=client.model, messages=len(messages), tools=0),
    )
    started = time.monotonic()
    try:
        turn = await client.complete(list(messages), [])
    except ModelError as exc:
        session.emit(Actor.SYSTEM, Kind.ERROR, ErrorPayload(str(exc)), cause=call.seq)
        raise
    session.emit(
        Actor.AGENT,
        Kind.LLM_RESPONSE,
        turn_payload(turn, turn.model or client.model, round(time.monotonic() - started, 3)),
        cause=call.seq,
    )
    return turn


def code_block(text: str) -> str | None:
    """The (last, longest) Python code block of an answer, or the whole answer if it parses."""
    blocks = _BLOCK.findall(text)
    if blocks:
        return str(max(blocks, key=len)).strip("\n") + "\n"
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text.strip("\n") + "\n" if text.strip() else None
