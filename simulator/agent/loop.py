"""The agent loop: ask the model, run the tools it calls through the session, repeat until it
calls finish, a budget runs out, or the person stops it.

Every model call, tool call, observation and decision is a trajectory event. A person controls the
run while it goes: the mode (human: paused, the person acts; confirm: each action waits for
approve / reject-with-reason; auto), interrupt (cancels a model call, stops a command) and stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from simulator.agent.models import (
    Message,
    ModelClient,
    ModelError,
    ModelTurn,
    parse_arguments,
    turn_payload,
)
from simulator.agent.tools import TOOL_SCHEMAS, ToolBox, ToolFormatError
from simulator.describe import describe_event
from simulator.events import (
    MUTATING_KINDS,
    TRANSIENT_KINDS,
    Actor,
    AgentFinishPayload,
    ErrorPayload,
    Event,
    InterruptPayload,
    Kind,
    LlmCallPayload,
    ToolCallPayload,
    ToolResultPayload,
)
from simulator.session import Decision, Session

SYSTEM_PROMPT = """\
You are a careful software engineer working in a repository through tools. Read before you edit:
look at failing tests and the code they exercise, find the cause, make the smallest correct
change, then run the tests again. Use one tool call at a time and say briefly what you think
before each. When the task is done (or cannot be done), call finish with a short summary.\
"""

# Consecutive answers without a usable tool call after which the run stops.
MAX_FORMAT_ERRORS_IN_A_ROW = 5


class Mode(StrEnum):
    HUMAN = "human"  # the agent waits; the person acts
    CONFIRM = "confirm"  # every action that changes something waits for approval
    AUTO = "auto"


@dataclass
class Budgets:
    """Limits for one run (one task); None means no limit."""

    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    max_time: float | None = None


@dataclass
class RunUsage:
    steps: int = 0
    tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True  # False once any call had no known price
    format_errors: int = 0
    started: float = field(default_factory=time.monotonic)
    paused: float = 0.0  # seconds the agent waited for the person; not charged to its budget

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started - self.paused

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "tokens": self.tokens,
            "cost": round(self.cost, 6) if self.cost_known else None,
            "format_errors": self.format_errors,
            "elapsed": round(self.elapsed, 3),
        }


@dataclass
class RunResult:
    reason: str  # finished | budget:<name> | stopped | model_error | format_errors | off_script
    summary: str
    usage: RunUsage


@dataclass
class ApprovalRequest:
    """An agent action waiting for the person in confirm mode."""

    kind: str
    payload: dict[str, Any]
    tool: str
    description: str


class Agent:
    """Runs tasks with a model client over a session; controllable while it runs."""

    def __init__(
        self,
        session: Session,
        client: ModelClient,
        *,
        mode: Mode = Mode.AUTO,
        budgets: Budgets | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        tools: ToolBox | None = None,
    ) -> None:
        self.session = session
        self.client = client
        self.budgets = budgets or Budgets()
        self.tools = tools or ToolBox(session)
        self.messages: list[Message] = [{"role": "system", "content": system_prompt}]
        self.usage = RunUsage()
        self.state = "idle"  # idle | model | tool | approval | paused
        self.pending: ApprovalRequest | None = None
        # Called (on the agent's event loop) whenever mode, state, usage or the pending
        # approval changes, so that a UI can redraw.
        self.listeners: list[Callable[[Agent], None]] = []
        self._mode = mode
        self._resumed = asyncio.Event()
        if mode is not Mode.HUMAN:
            self._resumed.set()
        self._decision: asyncio.Future[Decision] | None = None
        self._model_task: asyncio.Task[ModelTurn] | None = None
        self._interrupted = False
        self._stopped = False
        self._taken_over: list[str] = []
        self._told: list[str] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._response_seq: int | None = None

    # -- control, from the UI or the CLI -----------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode | str) -> None:
        """Switch mode mid-run. To human pauses before the next model call (a pending approval
        is rejected: the person takes over); to auto approves a pending action."""
        mode = Mode(mode)
        if mode == self._mode:
            return
        self._mode = mode
        self.session.note(f"agent mode: {mode}", actor=Actor.HUMAN, mark="agent.mode")
        if mode is Mode.HUMAN:
            self._resumed.clear()
            self._resolve(Decision(False, "The person took over; wait for them.", by="human"))
        else:
            self._resumed.set()
            if mode is Mode.AUTO:
                self._resolve(Decision(True, "switched to auto", by="human"))
        self._changed()

    def approve(self) -> None:
        self._resolve(Decision(True, by="human"))

    def reject(self, reason: str) -> None:
        self._resolve(Decision(False, reason.strip() or "no reason given", by="human"))

    async def interrupt(self) -> None:
        """Stop what the agent is doing now and pause it (mode human): a model call is
        cancelled, a running command is interrupted."""
        self._interrupted = True
        self.set_mode(Mode.HUMAN)
        if self._model_task is not None and not self._model_task.done():
            self._model_task.cancel()
        elif self.state == "tool":
            await self.session.interrupt(actor=Actor.HUMAN)

    def tell(self, text: str) -> None:
        """A message from the person, read by the model before its next step."""
        self._told.append(text)

    def stop(self) -> None:
        """End the run after the current step."""
        self._stopped = True
        self._resumed.set()
        self._resolve(Decision(False, "The person stopped the agent.", by="human"))
        if self._model_task is not None and not self._model_task.done():
            self._model_task.cancel()

    # -- running -----------------------------------------------------------------------------

    async def run(self, task: str) -> RunResult:
        """Work on a task until finish, a budget, a stop or a model error. Call again with a
        new task afterwards: the conversation carries on."""
        self.usage = RunUsage()
        self._stopped = False
        self._interrupted = False
        if self._mode is Mode.HUMAN:
            self._resumed.clear()  # a task given in mode human waits until the person lets go
        self.messages.append({"role": "user", "content": task})
        self.session.note(task, actor=Actor.HUMAN, mark="agent.task")
        self._unsubscribe = self.session.subscribe(self._watch_person)
        try:
            result = await self._loop()
        finally:
            if self._unsubscribe is not None:
                self._unsubscribe()
            self._set_state("idle")
        self.session.emit(
            Actor.AGENT,
            Kind.AGENT_FINISH,
            AgentFinishPayload(
                summary=result.summary, reason=result.reason, **result.usage.as_dict()
            ),
        )
        return result

    async def _loop(self) -> RunResult:
        errors_in_a_row = 0
        while True:
            if not self._resumed.is_set():
                self._set_state("paused")
                waited = time.monotonic()
                await self._resumed.wait()
                self.usage.paused += time.monotonic() - waited
                self._tell_what_the_person_did()
            if self._stopped:
                return self._result("stopped", "The person stopped the agent.")
            if exceeded := self._exceeded():
                return self._result(f"budget:{exceeded}", f"The {exceeded} budget ran out.")
            self._interrupted = False
            self._deliver_messages()
            try:
                turn = await self._call_model()
            except ModelError as exc:
                self.session.emit(Actor.SYSTEM, Kind.ERROR, ErrorPayload(str(exc)))
                return self._result("model_error", str(exc))
            if turn is None:  # interrupted or stopped during the call
                continue
            self.messages.append(turn.as_message())
            if not turn.tool_calls:
                errors_in_a_row += 1
                self.usage.format_errors += 1
                self.messages.append(
                    {
                        "role": "user",
                        "content": "Your answer called no tool. Call one of the tools; call "
                        "finish with a summary when the task is done.",
                    }
                )
            else:
                finished, format_errors, rejected = await self._run_tools(turn)
                errors_in_a_row = errors_in_a_row + 1 if format_errors else 0
                if finished is not None:
                    return self._result("finished", finished)
                if rejected and getattr(self.client, "follows_script", False):
                    # A script (the demo, a replay) cannot take a change of course into account:
                    # carrying on would act, and report, as if the rejected action had happened.
                    return self._result(
                        "off_script",
                        f"The person rejected {rejected}; this is a scripted run "
                        f"({self.client.model}), which cannot adapt, so it stops here.",
                    )
            if errors_in_a_row >= MAX_FORMAT_ERRORS_IN_A_ROW:
                return self._result(
                    "format_errors",
                    f"The model gave {errors_in_a_row} unusable answers in a row.",
                )

    def _result(self, reason: str, summary: str) -> RunResult:
        return RunResult(reason, summary, self.usage)

    def _exceeded(self) -> str | None:
        b, u = self.budgets, self.usage
        if b.max_steps is not None and u.steps >= b.max_steps:
            return "steps"
        if b.max_tokens is not None and u.tokens >= b.max_tokens:
            return "tokens"
        if b.max_cost is not None and u.cost >= b.max_cost:
            return "cost"
        if b.max_time is not None and u.elapsed >= b.max_time:
            return "time"
        return None

    async def _call_model(self) -> ModelTurn | None:
        call = self.session.emit(
            Actor.AGENT,
            Kind.LLM_CALL,
            LlmCallPayload(
                model=self.client.model,
                messages=len(self.messages),
                tools=len(TOOL_SCHEMAS),
                step=self.usage.steps + 1,
            ),
        )

        def on_retry(attempt: int, exc: Exception, delay: float) -> None:
            self.session.emit(
                Actor.SYSTEM,
                Kind.ERROR,
                ErrorPayload(
                    message=f"model call failed ({type(exc).__name__}); retrying",
                    attempt=attempt,
                    retry_in=round(delay, 3),
                ),
                cause=call.seq,
            )

        self._set_state("model")
        started = time.monotonic()
        self._model_task = asyncio.ensure_future(
            self.client.complete(list(self.messages), TOOL_SCHEMAS, on_retry=on_retry)
        )
        remaining = None
        if self.budgets.max_time is not None:
            remaining = max(0.0, self.budgets.max_time - self.usage.elapsed)
        try:
            turn = await asyncio.wait_for(asyncio.shield(self._model_task), remaining)
        except TimeoutError:
            self._model_task.cancel()
            self._note_unanswered(call, "the time budget ran out")
            self.usage.steps += 1
            return None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                self._model_task.cancel()
                raise  # the run itself is being cancelled
            self._note_unanswered(call, "stopped" if self._stopped else "interrupted")
            return None
        finally:
            self._model_task = None
        latency = time.monotonic() - started
        self.usage.steps += 1
        if turn.usage is not None and turn.usage.total_tokens is not None:
            self.usage.tokens += turn.usage.total_tokens
        if turn.cost is None:
            self.usage.cost_known = False
        else:
            self.usage.cost += turn.cost
        self._response_seq = self.session.emit(
            Actor.AGENT,
            Kind.LLM_RESPONSE,
            turn_payload(turn, turn.model or self.client.model, round(latency, 3)),
            cause=call.seq,
        ).seq
        self._changed()
        return turn

    def _note_unanswered(self, call: Event, why: str) -> None:
        self.session.emit(
            Actor.HUMAN if why != "the time budget ran out" else Actor.SYSTEM,
            Kind.INTERRUPT,
            InterruptPayload(during="model call", reason=why),
            cause=call.seq,
        )

    async def _run_tools(self, turn: ModelTurn) -> tuple[str | None, int, str]:
        """Run each tool call of a turn; every call gets an answer (the API requires it).
        Returns the finish summary if finish was called, the number of format errors and what
        the person rejected ("" when nothing)."""
        finished: str | None = None
        format_errors = 0
        rejected = ""
        response_seq = self._response_seq
        for call in turn.tool_calls:
            event = self.session.emit(
                Actor.AGENT,
                Kind.TOOL_CALL,
                ToolCallPayload(call.id, call.name, call.arguments),
                cause=response_seq,
            )
            flags: dict[str, Any] = {}
            if finished is not None or self._stopped or self._interrupted:
                output = "Not run: the person paused or stopped the agent."
                flags.update(ok=False, skipped=True)
            else:
                try:
                    arguments = parse_arguments(call.arguments)
                    self.tools.check(call.name, arguments)
                    self._set_state("tool")
                    with self._confirming(call.name):
                        observation = await self.tools.run(call.name, arguments)
                except (ToolFormatError, ValueError) as exc:
                    format_errors += 1
                    self.usage.format_errors += 1
                    output = (
                        f"Format error in your call to {call.name!r}: {exc}. "
                        "Call the tool again with JSON arguments that match its schema."
                    )
                    flags.update(ok=False, format_error=True)
                else:
                    output = observation.output
                    flags.update(
                        ok=observation.ok, elided=observation.elided, rejected=observation.rejected
                    )
                    if observation.finished:
                        finished = observation.output
                    if observation.rejected and not rejected:
                        rejected = f"the agent's {call.name} call"
            result = ToolResultPayload(id=call.id, name=call.name, output=output, **flags)
            self.session.emit(Actor.AGENT, Kind.TOOL_RESULT, result, cause=event.seq)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        return finished, format_errors, rejected

    # -- confirm mode ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _confirming(self, tool: str) -> Any:
        """While a tool runs, agent actions that change something go through the person."""
        previous = self.session.policy

        async def policy(actor: Actor, kind: str, payload: dict[str, Any]) -> Decision:
            if actor is Actor.AGENT and kind in MUTATING_KINDS and self._mode is not Mode.AUTO:
                return await self._ask(tool, kind, payload)
            if previous is not None:
                return await previous(actor, kind, payload)
            return Decision(True, by="policy")

        if self._mode is Mode.AUTO and previous is None:
            yield
            return
        self.session.policy = policy
        try:
            yield
        finally:
            if self.session.policy is policy:
                self.session.policy = previous

    async def _ask(self, tool: str, kind: str, payload: dict[str, Any]) -> Decision:
        if self._stopped:
            return Decision(False, "The person stopped the agent.", by="human")
        if self._mode is Mode.HUMAN:
            return Decision(False, "The person took over; wait for them.", by="human")
        preview = Event(seq=0, t=0.0, actor=Actor.AGENT, kind=Kind(kind), payload=payload)
        self.pending = ApprovalRequest(kind, payload, tool, describe_event(preview))
        self._decision = asyncio.get_running_loop().create_future()
        self._set_state("approval")
        try:
            return await self._decision
        finally:
            self.pending = None
            self._decision = None
            self._set_state("tool")

    def _resolve(self, decision: Decision) -> None:
        if self._decision is not None and not self._decision.done():
            self._decision.set_result(decision)

    # -- human mode --------------------------------------------------------------------------

    def _watch_person(self, event: Event) -> None:
        """Remember what the person does while the agent is paused, to tell the model."""
        if self.state != "paused" or event.actor is not Actor.HUMAN:
            return
        if event.kind in TRANSIENT_KINDS or event.kind in (Kind.TERMINAL_OUTPUT, Kind.NOTE):
            return
        if event.kind == Kind.TERMINAL_INPUT:
            return  # keystrokes; the commands they form are not parsed here
        self._taken_over.append(describe_event(event))

    def _tell_what_the_person_did(self) -> None:
        if not self._taken_over:
            return
        done = "\n".join(f"- {line}" for line in self._taken_over[-50:])
        self.messages.append(
            {
                "role": "user",
                "content": "While you were paused, the person did this in the repository:\n"
                f"{done}\nContinue from the current state.",
            }
        )
        self._taken_over.clear()

    def _deliver_messages(self) -> None:
        for text in self._told:
            self.session.note(text, actor=Actor.HUMAN, mark="agent.message")
            self.messages.append({"role": "user", "content": f"The person says: {text}"})
        self._told.clear()

    # -- notifications -----------------------------------------------------------------------

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self._changed()

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener(self)

    def status(self) -> dict[str, Any]:
        """Mode, state, usage and budgets, for a status line."""
        return {
            "mode": str(self._mode),
            "state": self.state,
            "model": self.client.model,
            **self.usage.as_dict(),
            "budgets": asdict(self.budgets),
        }
