"""The typed events every session action produces, and that trajectories store.

An action (something an actor asked for) and the observation that answers it are separate events
when the action takes time (a command, a test run, a model call); the observation's `cause` is the
action's `seq`. Quick file operations are one event carrying their outcome.

Each kind has one payload type (a `Record`: to_dict / from_dict / JSON Schema), listed in
`PAYLOAD_TYPES`; writers build those and readers get them back from `Event.data` / `Event.typed`.
docs/trajectory.md describes every kind; docs/trajectory.schema.json is generated from these types
(`python -m simulator.schema`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Literal, TypeVar

from simulator.event_kinds import Actor as Actor
from simulator.event_kinds import Kind as Kind
from simulator.testrun import TestOutcome, TestRunResult
from simulator.wire import Record, WireError, optional, record

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


# -- payloads ------------------------------------------------------------------------------------


ENVELOPE_KEYS = ("blobs", "raw")
"""Keys the trajectory writer may add to any payload: `blobs` (field -> sha256 of its whole
text, kept beside the file) and `raw` (field -> base64 of its exact bytes, for text that is not
UTF-8, e.g. a file name)."""


class Payload(Record):
    """The payload of one or more event kinds."""

    STRICT = True
    KINDS: ClassVar[tuple[Kind, ...]] = ()

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = super().json_schema()
        for key in ENVELOPE_KEYS:
            schema["properties"][key] = {
                "type": "object",
                "additionalProperties": {"type": "string"},
            }
        return schema


@record
class ExecPayload(Payload):
    KINDS = (Kind.EXEC,)
    command: str
    timeout: float | None = None


@record
class ExecResultPayload(Payload):
    KINDS = (Kind.EXEC_RESULT,)
    exit_code: int | None
    output: str
    duration: float
    timed_out: bool = False
    interrupted: bool = False
    shell_restarted: bool = False
    oom_killed: bool = False
    cwd: str | None = None
    cleared: bool = optional(False)
    """Runaway processes of the session were cleared while the command ran (ExecResult.cleared)."""
    output_bytes: int | None = optional()
    """How many bytes the command printed (its output may be shortened, or cut at the cap)."""
    output_lines: int | None = optional()
    output_capped: bool = optional(False)
    """The command was stopped when its output reached `output_cap` bytes."""
    output_cap: int | None = optional()
    extra: dict[str, Any] | None = optional()
    """Another tool's per-step fields (imports)."""
    message: dict[str, Any] | None = optional()
    """The observation message as another tool wrote it (imports)."""


@record
class DataPayload(Payload):
    """Text that went through a terminal: printed, or a command's live output."""

    KINDS = (Kind.TERMINAL_OUTPUT, Kind.EXEC_OUTPUT)
    data: str


@record
class TerminalInputPayload(Payload):
    """Keys typed into the terminal pane: one entered line (up to and including its Enter,
    Ctrl+C, Ctrl+D or Ctrl+Z), or what was typed before a pause (simulator/terminal_record.py).
    Recordings before lines were kept have one event per key."""

    KINDS = (Kind.TERMINAL_INPUT,)
    data: str
    """The exact keys sent, joined (re-execution types them again byte for byte)."""
    line: str | None = optional()
    """The command line the Enter ran, as it reads (Backspace applied, control keys shown as
    ^X, arrows as arrows; lines typed across a pause whole); absent when the keys did not end
    with Enter or left an empty line."""


@record
class TerminalSizePayload(Payload):
    """The terminal pane's size: when it opened, and after each resize (asciicast export
    takes its width and height from here)."""

    KINDS = (Kind.TERMINAL_SIZE,)
    cols: int
    rows: int


@record
class InterruptPayload(Payload):
    KINDS = (Kind.INTERRUPT,)
    during: str | None = optional()
    reason: str | None = optional()


@record
class FileReadPayload(Payload):
    KINDS = (Kind.FILE_READ,)
    path: str
    sha256: str
    size: int


@record
class FileChangePayload(Payload):
    """file.write, file.create, file.edit and file.delete (the change fields; an edit adds what
    it replaced, a delete what it deleted)."""

    KINDS = (Kind.FILE_WRITE, Kind.FILE_CREATE, Kind.FILE_EDIT, Kind.FILE_DELETE)
    path: str
    diff: str | None = None
    before_sha256: str | None = None
    after_sha256: str | None = None
    content: str | None = None
    old: str | None = optional()
    new: str | None = optional()
    replacements: int | None = optional()
    kind: Literal["file", "dir", "symlink", "other"] | None = optional()


@record
class FileRenamePayload(Payload):
    KINDS = (Kind.FILE_RENAME,)
    path: str
    to: str


@record
class SearchPayload(Payload):
    KINDS = (Kind.SEARCH,)
    pattern: str
    path: str
    regex: bool = False
    glob: str | None = None
    ignore_case: bool = False


@record
class SearchResultPayload(Payload):
    KINDS = (Kind.SEARCH_RESULT,)
    count: int
    matches: list[tuple[str, int, str]] = field(default_factory=list)


@record
class TestRunPayload(Payload):
    __test__ = False
    KINDS = (Kind.TEST_RUN,)
    command: str
    selector: str | None = None


@record
class TestResultPayload(Payload):
    __test__ = False
    KINDS = (Kind.TEST_RESULT,)
    command: str
    exit_code: int | None
    duration: float
    structured: bool
    timed_out: bool
    counts: dict[str, int] | None
    tests: list[TestOutcome]
    output: str

    @classmethod
    def of(cls, run: TestRunResult) -> TestResultPayload:
        return cls(
            command=run.command,
            exit_code=run.exit_code,
            duration=round(run.duration, 6),
            structured=run.structured,
            timed_out=run.timed_out,
            counts=run.counts() if run.structured else None,
            tests=list(run.tests),
            output=run.output,
        )

    def result(self) -> TestRunResult:
        return TestRunResult(
            command=self.command,
            exit_code=self.exit_code,
            duration=self.duration,
            output=self.output,
            structured=self.structured,
            tests=list(self.tests),
            timed_out=self.timed_out,
        )


@record
class LlmCallPayload(Payload):
    KINDS = (Kind.LLM_CALL,)
    model: str | None
    messages: int | list[dict[str, Any]]
    """RepoSim's agent records how many messages it sent; imports keep the messages themselves."""
    tools: int | None = optional()
    step: int | None = optional()


@record
class ToolCallPayload(Payload):
    KINDS = (Kind.TOOL_CALL,)
    id: str | None
    name: str
    arguments: str


@record
class UsagePayload(Record):
    STRICT = True
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


@record
class LlmResponsePayload(Payload):
    KINDS = (Kind.LLM_RESPONSE,)
    content: str | None
    model: str | None = None
    tool_calls: list[ToolCallPayload] = field(default_factory=list)
    usage: UsagePayload | None = None
    cost: float | None = None
    latency: float | None = None
    finish_reason: str | None = None
    attempts: int | None = None
    thought: str | None = optional()
    """The reasoning part of an imported answer."""
    message: dict[str, Any] | None = optional()
    """The answer as another tool wrote it."""


@record
class ToolResultPayload(Payload):
    KINDS = (Kind.TOOL_RESULT,)
    id: str | None
    name: str
    output: str
    ok: bool
    elided: int = 0
    """How many characters of the output were cut for the model."""
    rejected: bool = optional(False)
    format_error: bool = optional(False)
    skipped: bool = optional(False)


@record
class AgentFinishPayload(Payload):
    KINDS = (Kind.AGENT_FINISH,)
    summary: str
    reason: str | None = None
    steps: int | None = None
    tokens: int | None = None
    cost: float | None = None
    format_errors: int | None = None
    elapsed: float | None = None
    exit_status: Any = optional()
    info: dict[str, Any] | None = optional()
    """Another tool's run info (imports)."""


@record
class PolicyDecisionPayload(Payload):
    KINDS = (Kind.POLICY_DECISION,)
    action: str
    target: str
    allowed: bool
    reason: str
    by: str
    for_: str

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["for"] = data.pop("for_")
        return data

    @classmethod
    def from_dict(cls, data: Any, where: str = "") -> PolicyDecisionPayload:
        if isinstance(data, dict) and "for" in data:
            data = {**data, "for_": data["for"]}
            del data["for"]
        return super().from_dict(data, where)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = super().json_schema()
        schema["properties"]["for"] = schema["properties"].pop("for_")
        schema["required"] = ["for" if r == "for_" else r for r in schema["required"]]
        return schema


class StepStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


class RunStatus(StrEnum):
    OK = "ok"  # the workflow ran to its end (its result says whether it reached its goal)
    FAILED = "failed"  # it stopped early on an error it understood (the error says which)
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM, a cancelled task
    ERROR = "error"  # an unexpected exception


@record
class WorkflowPayload(Payload):
    """What every workflow event names: the workflow and its run (see simulator/workflow.py)."""

    workflow: str
    run: str


@record
class WorkflowStart(WorkflowPayload):
    """A workflow run begins."""

    KINDS = (Kind.WORKFLOW_START,)
    params: dict[str, Any] = field(default_factory=dict)


@record
class WorkflowStep(WorkflowPayload):
    """A stage of a run starts (status running) or ends (with its status and duration)."""

    KINDS = (Kind.WORKFLOW_STEP,)
    step: str
    status: StepStatus
    seconds: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@record
class WorkflowResult(WorkflowPayload):
    """What a run found or made (its verdict, its figures)."""

    KINDS = (Kind.WORKFLOW_RESULT,)
    result: dict[str, Any] = field(default_factory=dict)


@record
class WorkflowEnd(WorkflowPayload):
    """A run ends: how, after how long, and the error if it failed."""

    KINDS = (Kind.WORKFLOW_END,)
    status: RunStatus
    seconds: float
    error: str | None = None


@record
class CheckpointPayload(Payload):
    KINDS = (Kind.CHECKPOINT, Kind.RESTORE)
    name: str
    tree: str


@record
class NotePayload(Payload):
    KINDS = (Kind.NOTE,)
    text: str
    mark: str | None = optional()


@record
class ErrorPayload(Payload):
    KINDS = (Kind.ERROR,)
    message: str
    attempt: int | None = optional()
    retry_in: float | None = optional()


@record
class SessionEndPayload(Payload):
    KINDS = (Kind.SESSION_END,)
    reason: str


PAYLOAD_TYPES: dict[Kind, type[Payload]] = {
    kind: cls
    for cls in (
        ExecPayload,
        ExecResultPayload,
        DataPayload,
        TerminalInputPayload,
        TerminalSizePayload,
        InterruptPayload,
        FileReadPayload,
        FileChangePayload,
        FileRenamePayload,
        SearchPayload,
        SearchResultPayload,
        TestRunPayload,
        TestResultPayload,
        LlmCallPayload,
        LlmResponsePayload,
        ToolCallPayload,
        ToolResultPayload,
        AgentFinishPayload,
        PolicyDecisionPayload,
        WorkflowStart,
        WorkflowStep,
        WorkflowResult,
        WorkflowEnd,
        CheckpointPayload,
        NotePayload,
        ErrorPayload,
        SessionEndPayload,
    )
    for kind in cls.KINDS
}
assert set(PAYLOAD_TYPES) == set(Kind), "every kind has one payload type"

P = TypeVar("P", bound=Payload)


def file_paths(event: Event) -> list[str]:
    """The workspace paths a file event names, from its typed payload: its path, and a
    rename's new path too; none for an event of another kind."""
    data = event.data
    if isinstance(data, FileRenamePayload):
        return [data.path, data.to]
    if isinstance(data, FileChangePayload | FileReadPayload):
        return [data.path]
    return []


def parse_payload(kind: Kind, data: Any) -> Payload:
    """The typed payload of a `kind` event; WireError (one sentence) if it has another shape."""
    if type(data) is dict and ("blobs" in data or "raw" in data):
        data = {k: v for k, v in data.items() if k not in ENVELOPE_KEYS}
    return PAYLOAD_TYPES[kind].from_dict(data, f"the {kind} payload")


# -- events --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One line of a trajectory. `payload` is the JSON form subscribers and viewers read;
    `data` is the same payload typed (see PAYLOAD_TYPES)."""

    seq: int
    t: float
    actor: Actor
    kind: Kind
    payload: dict[str, Any] = field(default_factory=dict)
    cause: int | None = None
    _data: Payload | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        seq: int,
        t: float,
        actor: Actor,
        data: Payload,
        kind: Kind | None = None,
        cause: int | None = None,
        blobs: dict[str, str] | None = None,
    ) -> Event:
        """An event built from its typed payload (`kind` needed when the type serves several)."""
        if kind is None:
            if len(data.KINDS) != 1:
                raise ValueError(f"{type(data).__name__} serves several kinds; name one")
            kind = data.KINDS[0]
        elif kind not in data.KINDS:
            raise ValueError(f"{type(data).__name__} is not the payload of {kind}")
        payload = data.to_dict()
        if blobs:
            payload["blobs"] = blobs
        return cls(seq, t, actor, kind, payload, cause, data)

    @property
    def data(self) -> Payload:
        """The typed payload (parsed on first use); WireError if the payload has another shape."""
        if self._data is None:
            object.__setattr__(self, "_data", parse_payload(self.kind, self.payload))
        assert self._data is not None
        return self._data

    def typed(self, cls: type[P]) -> P:
        """The payload as `cls`; WireError if this event's kind has another payload type."""
        data = self.data
        if not isinstance(data, cls):
            raise WireError(f"a {self.kind} event has no {cls.__name__}")
        return data

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
    def from_dict(cls, data: Any) -> Event:
        """An event from its JSON form, payload checked; WireError (one sentence) if malformed."""
        if not isinstance(data, dict):
            raise WireError("an event must be a JSON object")
        seq, t, cause = data.get("seq"), data.get("t"), data.get("cause")
        kind = _KINDS.get(data.get("kind"))  # type: ignore[arg-type]
        actor = _ACTORS.get(data.get("actor"))  # type: ignore[arg-type]
        payload = data.get("payload")
        if (
            type(seq) is not int
            or type(t) not in (float, int)
            or (cause is not None and type(cause) is not int)
            or kind is None
            or actor is None
            or type(payload) is not dict
        ):
            record = EventRecord.from_dict(data, "the event")  # raises, saying what is wrong
            raise WireError(f"unknown event kind {_clip(repr(record.kind))}")
        payload = _exact_text(dict(payload)) if "raw" in payload else payload
        typed = parse_payload(kind, payload)
        return cls(seq, float(t), actor, kind, payload, cause, typed)  # type: ignore[arg-type]


_KINDS = {str(kind): kind for kind in Kind}
_ACTORS = {str(actor): actor for actor in Actor}


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _exact_text(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with its `raw` fields (text that is not UTF-8, written as base64 of its
    bytes beside a readable form) put back as the exact text, decoded with surrogateescape as
    os.fsdecode does."""
    raw = payload.pop("raw", None)
    if raw is None:
        return payload
    if not isinstance(raw, dict):
        raise WireError("`raw` must be an object of base64 texts")
    for key, encoded in raw.items():
        try:
            exact = base64.b64decode(encoded, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise WireError(f"`raw.{key}` is not base64") from None
        payload[key] = exact.decode("utf-8", "surrogateescape")
    return payload


@record
class EventRecord(Record):
    """The fields every event line has (the payload is typed by kind, see PAYLOAD_TYPES)."""

    STRICT = True
    seq: int
    t: float
    actor: Literal["human", "agent", "system"]
    kind: str
    payload: dict[str, Any]
    cause: int | None = optional()
