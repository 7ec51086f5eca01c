"""The typed events every session action produces, and that trajectories store.

An action (something an actor asked for) and the observation that answers it are separate events
when the action takes time (a command, a test run, a model call); the observation's `cause` is the
action's `seq`. Quick file operations are one event carrying their outcome. See
docs/trajectory.md for every kind's payload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Actor(StrEnum):
    HUMAN = "human"
    AGENT = "agent"
    SYSTEM = "system"


class Kind(StrEnum):
    # commands in the persistent shell
    EXEC = "exec"
    EXEC_OUTPUT = "exec.output"  # live chunks for subscribers; never written (exec.result has all)
    EXEC_RESULT = "exec.result"
    INTERRUPT = "interrupt"
    # files
    FILE_READ = "file.read"
    FILE_WRITE = "file.write"
    FILE_EDIT = "file.edit"
    FILE_CREATE = "file.create"
    FILE_DELETE = "file.delete"
    FILE_RENAME = "file.rename"
    SEARCH = "search"
    SEARCH_RESULT = "search.result"
    # tests
    TEST_RUN = "test.run"
    TEST_RESULT = "test.result"
    # the terminal pane
    TERMINAL_INPUT = "terminal.input"
    TERMINAL_OUTPUT = "terminal.output"
    # the agent
    LLM_CALL = "llm.call"
    LLM_RESPONSE = "llm.response"
    TOOL_CALL = "tool.call"
    TOOL_RESULT = "tool.result"
    AGENT_FINISH = "agent.finish"
    # control
    POLICY_DECISION = "policy.decision"
    WORKFLOW_START = "workflow.start"
    WORKFLOW_STEP = "workflow.step"
    WORKFLOW_RESULT = "workflow.result"
    WORKFLOW_END = "workflow.end"
    CHECKPOINT = "checkpoint"
    RESTORE = "restore"
    NOTE = "note"
    ERROR = "error"
    SESSION_END = "session.end"


# Kinds streamed to subscribers but not written to the trajectory (their content is recorded
# whole by a later event).
TRANSIENT_KINDS = frozenset({Kind.EXEC_OUTPUT})

# Kinds that change the workspace: the ones a confirm policy asks about and replay re-executes.
MUTATING_KINDS = frozenset(
    {
        Kind.EXEC,
        Kind.FILE_WRITE,
        Kind.FILE_EDIT,
        Kind.FILE_CREATE,
        Kind.FILE_DELETE,
        Kind.FILE_RENAME,
        Kind.TEST_RUN,
        Kind.RESTORE,
    }
)


@dataclass(frozen=True)
class Event:
    seq: int
    t: float
    actor: Actor
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    cause: int | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "seq": self.seq,
            "t": round(self.t, 6),
            "actor": str(self.actor),
            "kind": str(self.kind),
        }
        if self.cause is not None:
            data["cause"] = self.cause
        data["payload"] = self.payload
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        return cls(
            seq=int(data["seq"]),
            t=float(data["t"]),
            actor=Actor(data["actor"]),
            kind=str(data["kind"]),
            payload=dict(data.get("payload") or {}),
            cause=data.get("cause"),
        )
