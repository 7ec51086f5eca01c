"""Model clients: what the agent loop asks for its next turn.

`LiteLLMClient` talks to any provider litellm knows (keys from the environment), `ReplayClient`
returns the turns recorded in a trajectory, `ScriptedClient` returns turns written by hand (tests
and the bundled demonstration). All three return the same `ModelTurn`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from simulator.events import LlmResponsePayload, ToolCallPayload, UsagePayload
from simulator.trajectory import open_trajectory

Message = dict[str, Any]


class ModelError(Exception):
    """A model call that failed for good; the message is one clear sentence."""


class ModelConfigError(ModelError):
    """No model, an unknown model or a missing key: the user has to change something."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # as the model sent it: JSON text, possibly malformed

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class ModelTurn:
    """One answer from a model: its text (the thought) and the tools it wants to call."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    cost: float | None = None  # None when the price of the model is unknown, never a guessed 0
    model: str = ""
    finish_reason: str | None = None
    attempts: int = 1

    def as_message(self) -> Message:
        """The assistant message that goes back into the conversation."""
        message: Message = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


# Called before each retry: (attempt number that failed, the error, seconds until the retry).
RetryHook = Callable[[int, Exception, float], None]


class ModelClient(Protocol):
    model: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        *,
        on_retry: RetryHook | None = None,
    ) -> ModelTurn: ...


# -- litellm ---------------------------------------------------------------------------------


@dataclass
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 1.0
    max_delay: float = 20.0

    def delay(self, attempt: int) -> float:
        """Exponential backoff with jitter, so that many clients do not retry in step."""
        raw = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return raw * (0.5 + random.random() / 2)


def import_litellm() -> Any:
    """litellm, imported once and quietly (it is slow to import: seconds, a minute under load)."""
    # The remote cost map is unreachable from many machines and costs seconds of retries.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@dataclass
class LiteLLMClient:
    """Any `provider/model` litellm accepts; keys come from the environment."""

    model: str
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    temperature: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    _litellm: Any = field(default=None, init=False, repr=False)

    def check(self) -> None:
        """Fail early, in one sentence, when the model is unknown or its key is missing."""
        litellm = self._lib()
        try:
            litellm.get_llm_provider(self.model, api_base=self.api_base)
        except Exception:
            raise ModelConfigError(
                f"litellm does not know the model {self.model!r}; name it as provider/model, "
                "for example openai/gpt-4o-mini or anthropic/claude-3-5-sonnet-20240620."
            ) from None
        if self.api_key:
            return
        missing = litellm.validate_environment(self.model).get("missing_keys") or []
        if missing:
            names = " and ".join(missing)
            raise ModelConfigError(
                f"Set {names} in the environment to use {self.model} "
                "(the key is read from the environment)."
            )

    def _lib(self) -> Any:
        if self._litellm is None:
            self._litellm = import_litellm()
        return self._litellm

    def _transient(self, exc: Exception) -> bool:
        lib = self._lib()
        permanent = (
            lib.AuthenticationError,
            lib.PermissionDeniedError,
            lib.ContextWindowExceededError,
            lib.NotFoundError,
            lib.BadRequestError,
            lib.ContentPolicyViolationError,
        )
        if isinstance(exc, permanent):
            return False
        transient = (
            lib.RateLimitError,
            lib.InternalServerError,
            lib.ServiceUnavailableError,
            lib.BadGatewayError,
            lib.APIConnectionError,
            lib.Timeout,
            lib.APIError,
            lib.APIResponseValidationError,
        )
        return isinstance(exc, transient)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        *,
        on_retry: RetryHook | None = None,
    ) -> ModelTurn:
        if self._litellm is None:
            # in a thread: the first import takes seconds (a minute under load), and on the
            # event loop it froze a UI for all of it as a workflow called the model
            self._litellm = await asyncio.to_thread(import_litellm)
        lib = self._litellm
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "tools": list(tools),
            "timeout": self.timeout,
            "num_retries": 0,  # retries are ours: backoff, and none on permanent errors
            "max_retries": 0,  # nor the OpenAI SDK's own, underneath litellm
            # Our tools are plain functions; without this litellm's MCP bridge imports the
            # optional `mcp` package whenever tools are passed, and fails when it is absent.
            "_skip_mcp_handler": True,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await lib.acompletion(**kwargs)
                return self._turn(response, attempt)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if attempt >= self.retry.attempts or not self._transient(exc):
                    raise ModelError(_explain(self.model, exc)) from exc
                delay = self.retry.delay(attempt)
                if on_retry is not None:
                    on_retry(attempt, exc, delay)
                await asyncio.sleep(delay)

    def _turn(self, response: Any, attempts: int) -> ModelTurn:
        try:
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, IndexError):
            raise ModelError(f"{self.model} answered without a message.") from None
        calls = tuple(
            ToolCall(
                id=str(call.id or f"call_{index}"),
                name=str(call.function.name or ""),
                arguments=str(call.function.arguments or ""),
            )
            for index, call in enumerate(message.tool_calls or [])
        )
        raw_usage = getattr(response, "usage", None)
        usage = (
            Usage(
                prompt_tokens=getattr(raw_usage, "prompt_tokens", None),
                completion_tokens=getattr(raw_usage, "completion_tokens", None),
                total_tokens=getattr(raw_usage, "total_tokens", None),
            )
            if raw_usage is not None
            else None
        )
        return ModelTurn(
            content=str(message.content or ""),
            tool_calls=calls,
            usage=usage,
            cost=self._cost(response),
            model=str(getattr(response, "model", "") or self.model),
            finish_reason=getattr(choice, "finish_reason", None),
            attempts=attempts,
        )

    def _cost(self, response: Any) -> float | None:
        try:
            cost = self._lib().completion_cost(completion_response=response, model=self.model)
        except Exception:
            return None  # a model litellm has no price for: unknown, not free
        return float(cost) if cost is not None else None


def _explain(model: str, exc: Exception) -> str:
    name = type(exc).__name__
    detail = " ".join(str(exc).split())
    if len(detail) > 300:
        detail = detail[:299] + "…"
    if name == "AuthenticationError":
        return f"{model} refused the API key (authentication failed): {detail}"
    if name == "ContextWindowExceededError":
        return f"The conversation no longer fits in {model}'s context window: {detail}"
    return f"The call to {model} failed ({name}): {detail}"


# -- replay and scripted ---------------------------------------------------------------------


def turn_payload(turn: ModelTurn, model: str, latency: float) -> LlmResponsePayload:
    """The `llm.response` payload that records `turn`."""
    usage = turn.usage
    return LlmResponsePayload(
        model=model,
        content=turn.content,
        tool_calls=[ToolCallPayload(c.id, c.name, c.arguments) for c in turn.tool_calls],
        usage=UsagePayload(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
        if usage is not None
        else None,
        cost=turn.cost,
        latency=latency,
        finish_reason=turn.finish_reason,
        attempts=turn.attempts,
    )


def turn_from_payload(payload: LlmResponsePayload) -> ModelTurn:
    """The turn an `llm.response` event recorded."""
    usage = payload.usage
    return ModelTurn(
        content=payload.content or "",
        tool_calls=tuple(ToolCall(c.id or "", c.name, c.arguments) for c in payload.tool_calls),
        usage=Usage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
        if usage is not None
        else None,
        cost=payload.cost,
        model=payload.model or "",
        finish_reason=payload.finish_reason,
    )


class ScriptedClient:
    """Returns the given turns in order. An entry may be a callable (sync or async) that gets
    the conversation and returns a turn or raises, for errors and slow models in tests."""

    def __init__(
        self,
        turns: Sequence[
            ModelTurn | Callable[[Sequence[Message]], ModelTurn | Awaitable[ModelTurn]]
        ],
        *,
        model: str = "scripted",
        delay: float = 0.0,
        follows_script: bool = False,
    ) -> None:
        """`follows_script`: the turns are a fixed course (the demo, a replay) that cannot take
        what happens into account, so the loop stops the run when the person rejects an action;
        False for a script standing in for a model that would react."""
        self.model = model
        self.delay = delay
        self.follows_script = follows_script
        self._turns = list(turns)
        self._next = 0
        self.calls: list[list[Message]] = []

    @property
    def remaining(self) -> int:
        return len(self._turns) - self._next

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        *,
        on_retry: RetryHook | None = None,
    ) -> ModelTurn:
        self.calls.append(list(messages))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self._next >= len(self._turns):
            raise ModelError(f"The {self.model} script has no more turns.")
        entry = self._turns[self._next]
        self._next += 1
        if isinstance(entry, ModelTurn):
            return entry
        result = entry(messages)
        if isinstance(result, ModelTurn):
            return result
        return await result


class ReplayClient(ScriptedClient):
    """Returns, in order, the model turns recorded in a trajectory (its llm.response events).
    The tools are not replayed: the agent loop runs them again for real."""

    def __init__(self, path: Path | str, *, delay: float = 0.0) -> None:
        with open_trajectory(path) as trajectory:
            turns = [
                turn_from_payload(data)
                for e in trajectory.events()
                if isinstance(data := e.data, LlmResponsePayload)
            ]
            header = trajectory.header
        if not turns:
            raise ModelConfigError(f"{path} records no model turns to replay.")
        model = header.agent.model if header.agent is not None else None
        super().__init__(
            turns, model=f"replay:{model or Path(path).name}", delay=delay, follows_script=True
        )
        self.header = header


def timed() -> Callable[[], float]:
    """A stopwatch: call the result to get the seconds since `timed()`."""
    start = time.monotonic()
    return lambda: time.monotonic() - start


def parse_arguments(text: str) -> dict[str, Any]:
    """A tool call's arguments; raises ValueError with a readable reason when they are not a
    JSON object."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the arguments are not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value
