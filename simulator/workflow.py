"""What every workflow shares: a run recorded inside a Session, with typed events.

A workflow (setup, harness, codegen, debug, perf) is an engine sub-package that does its work
through a Session, so every command it runs and every file it writes is recorded like a person's
or an agent's. Around that work it records its own structure with a `WorkflowRun`:

    with WorkflowRun(session, "setup", params={"repo": "..."}) as run:
        with run.stage("install"):
            await session.exec("pip install -e .")
        run.result(verdict="ready", tests=42)

which writes `workflow.start`, `workflow.step` (one when a stage starts, one when it ends, the
second with its status and duration), `workflow.result` and `workflow.end`. A UI pane, a
`--json` printer or a batch worker follow a run by subscribing to the session and reading these
payloads, never by parsing text.

Confirm mode reaches workflows through an approval gate: inside `with approval_gate(gate):`
every run a workflow opens (in any session, so perf's two sides too) asks `gate` before each
action that changes something (a write of the bytes already there does not), as the agent's
confirm mode does; a rejection stops the
workflow with `ActionRejected`, recorded as the run's failure with the person's reason.
Headless and batch runs set no gate and nothing waits.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from simulator.describe import describe_event
from simulator.events import (
    MUTATING_KINDS,
    Actor,
    Event,
    Kind,
    PolicyDecisionPayload,
    RunStatus,
    StepStatus,
    WorkflowEnd,
    WorkflowResult,
    WorkflowStart,
    WorkflowStep,
)
from simulator.session import Decision

if TYPE_CHECKING:
    from simulator.session import ActionPolicy, Session


@dataclass(frozen=True)
class ActionRequest:
    """An action a workflow is about to take, waiting for the person in confirm mode."""

    workflow: str
    run: str  # the run's id
    actor: Actor
    kind: Kind
    payload: dict[str, Any]
    description: str  # one line, as the trajectory viewer would show the action

    @property
    def diff(self) -> str | None:
        diff = self.payload.get("diff")
        return str(diff) if diff else None


ApprovalGate = Callable[[ActionRequest], Awaitable[Decision]]
"""Asked before each action of a workflow run; allowed or not, with the person's reason."""

_gate: ContextVar[ApprovalGate | None] = ContextVar("reposim_workflow_gate", default=None)


@contextmanager
def approval_gate(gate: ApprovalGate | None) -> Iterator[None]:
    """Workflows run inside this block ask `gate` before each action (None: nothing asks).

    A context variable rather than a parameter: it reaches every run the call opens (nested
    workflows, perf's second session) without threading it through each workflow's signature,
    and actions from outside the block (the person typing meanwhile) never meet it.
    """
    token = _gate.set(gate)
    try:
        yield
    finally:
        _gate.reset(token)


class WorkflowRun:
    """One run of a workflow in a session: records its start, steps, result and end.

    Use it as a context manager: leaving the block records `workflow.end` with a status taken
    from how the block ended (an exception is recorded, then re-raised).
    """

    def __init__(
        self,
        session: Session,
        workflow: str,
        params: dict[str, Any] | None = None,
        *,
        actor: Actor = Actor.SYSTEM,
    ) -> None:
        self.session = session
        self.workflow = workflow
        self.params = dict(params or {})
        self.actor = actor
        self.id = secrets.token_hex(4)
        self.outcome: dict[str, Any] | None = None
        self._t0 = time.monotonic()
        self._start_seq: int | None = None
        self._gated: _GatedPolicy | None = None

    def __enter__(self) -> Self:
        self._t0 = time.monotonic()
        event = self.session.emit(
            self.actor,
            Kind.WORKFLOW_START,
            WorkflowStart(self.workflow, self.id, self.params),
        )
        self._start_seq = event.seq
        if _gate.get() is not None and not isinstance(self.session.policy, _GatedPolicy):
            self._gated = _GatedPolicy(self, self.session.policy)
            self.session.policy = self._gated
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._gated is not None:
            if self.session.policy is self._gated:
                self.session.policy = self._gated.previous
            self._gated = None
        if exc_type is None:
            status, error = RunStatus.OK, None
        elif issubclass(exc_type, KeyboardInterrupt | asyncio.CancelledError):
            status, error = RunStatus.INTERRUPTED, "interrupted"
        elif isinstance(exc, WorkflowFailure):
            status, error = RunStatus.FAILED, str(exc)
        else:
            status, error = RunStatus.ERROR, f"{exc_type.__name__}: {exc}"
        if not self.session.closed:
            self.session.emit(
                self.actor,
                Kind.WORKFLOW_END,
                WorkflowEnd(
                    self.workflow, self.id, status, round(time.monotonic() - self._t0, 6), error
                ),
                cause=self._start_seq,
            )

    def step(
        self,
        name: str,
        status: StepStatus = StepStatus.OK,
        *,
        seconds: float | None = None,
        **detail: Any,
    ) -> Event:
        """Record one step of the run (a stage's start or end, or a point event)."""
        return self.session.emit(
            self.actor,
            Kind.WORKFLOW_STEP,
            WorkflowStep(self.workflow, self.id, name, status, seconds, detail),
            cause=self._start_seq,
        )

    @contextmanager
    def stage(self, name: str, **detail: Any) -> Iterator[dict[str, Any]]:
        """A step with a duration: `running` when it starts, `ok`/`failed` when it ends.

        The yielded dict is the end step's detail: fill it in inside the block.
        """
        self.step(name, StepStatus.RUNNING, **detail)
        t0 = time.monotonic()
        end_detail: dict[str, Any] = {}
        try:
            yield end_detail
        except BaseException as exc:
            end_detail.setdefault("error", f"{type(exc).__name__}: {exc}")
            self.step(
                name,
                StepStatus.FAILED,
                seconds=round(time.monotonic() - t0, 6),
                **end_detail,
            )
            raise
        status = StepStatus.FAILED if end_detail.get("failed") else StepStatus.OK
        end_detail.pop("failed", None)
        self.step(name, status, seconds=round(time.monotonic() - t0, 6), **end_detail)

    def result(self, **result: Any) -> Event:
        """Record what the run produced (a verdict, a table, pass@k...)."""
        self.outcome = result
        return self.session.emit(
            self.actor,
            Kind.WORKFLOW_RESULT,
            WorkflowResult(self.workflow, self.id, result),
            cause=self._start_seq,
        )


class WorkflowFailure(Exception):
    """A workflow stopped on an error it understands; the message is one clear sentence."""


class ActionRejected(WorkflowFailure):
    """The person rejected an action of the workflow (confirm mode): the workflow stops.

    Not a SessionError on purpose: code that carries on after a refused action (the agent's
    tools tell the model and go on) must not swallow it; the whole workflow ends here."""

    def __init__(self, request: ActionRequest, reason: str) -> None:
        self.request = request
        self.reason = reason
        super().__init__(
            f"The person rejected {request.description!r} of the {request.workflow} workflow: "
            f"{reason or 'no reason given'}."
        )


def _unchanged(kind: str, payload: dict[str, Any]) -> bool:
    before = payload.get("before_sha256")
    return kind == Kind.FILE_WRITE and before is not None and before == payload.get("after_sha256")


class _GatedPolicy:
    """The session's action policy while a gated run is open: actions taken inside the
    `approval_gate` block ask the gate; anything else goes to the policy that was there."""

    def __init__(self, run: WorkflowRun, previous: ActionPolicy | None) -> None:
        self.run = run
        self.previous = previous

    async def __call__(self, actor: Actor, kind: str, payload: dict[str, Any]) -> Decision:
        gate = _gate.get()
        if gate is None or kind not in MUTATING_KINDS:
            if self.previous is not None:
                return await self.previous(actor, kind, payload)
            return Decision(True, by="policy")
        if _unchanged(kind, payload):
            # Workflows rewrite their helper files as they go (a reference snapshot already in
            # place, say): a write that changes no byte is nothing to approve.
            return Decision(True, "changes nothing", by="policy")
        preview = Event(seq=0, t=0.0, actor=actor, kind=Kind(kind), payload=payload)
        request = ActionRequest(
            self.run.workflow, self.run.id, actor, Kind(kind), payload, describe_event(preview)
        )
        decision = await gate(request)
        if decision.allowed:
            return decision  # the session records it as a policy decision
        # Recorded as the session records any refusal; then the workflow stops as a whole.
        self.run.session.emit(
            Actor.HUMAN if decision.by != "policy" else Actor.SYSTEM,
            Kind.POLICY_DECISION,
            PolicyDecisionPayload(
                action=str(kind),
                target=str(payload.get("path") or payload.get("command") or ""),
                allowed=False,
                reason=decision.reason,
                by=decision.by,
                for_=str(actor),
            ),
            cause=self.run._start_seq,
        )
        raise ActionRejected(request, decision.reason)


__all__ = [
    "ActionRejected",
    "ActionRequest",
    "ApprovalGate",
    "RunStatus",
    "StepStatus",
    "WorkflowEnd",
    "WorkflowFailure",
    "WorkflowResult",
    "WorkflowRun",
    "WorkflowStart",
    "WorkflowStep",
    "approval_gate",
]
