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
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from simulator.events import (
    Actor,
    Event,
    Kind,
    RunStatus,
    StepStatus,
    WorkflowEnd,
    WorkflowResult,
    WorkflowStart,
    WorkflowStep,
)

if TYPE_CHECKING:
    from simulator.session import Session


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

    def __enter__(self) -> Self:
        self._t0 = time.monotonic()
        event = self.session.emit(
            self.actor,
            Kind.WORKFLOW_START,
            WorkflowStart(self.workflow, self.id, self.params),
        )
        self._start_seq = event.seq
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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


__all__ = [
    "RunStatus",
    "StepStatus",
    "WorkflowEnd",
    "WorkflowFailure",
    "WorkflowResult",
    "WorkflowRun",
    "WorkflowStart",
    "WorkflowStep",
]
