"""Runs as sequences of steps: one step per action, with the observation that answered it.

Every trajectory RepoSim reads (its own, SWE-agent's, mini-swe-agent's) becomes the same
session-level actions — commands, file changes, test runs, searches, reads, the agent's finish —
so runs from different tools compare step by step. A step's `key` is its action with the
volatile parts normalised (temporary paths, whitespace); two runs that did the same thing at a
point share the key there, whatever happened to the output.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from simulator.describe import describe_event
from simulator.events import (
    AgentFinishPayload,
    Event,
    ExecPayload,
    ExecResultPayload,
    FileChangePayload,
    FileReadPayload,
    FileRenamePayload,
    Kind,
    SearchPayload,
    SearchResultPayload,
    TestResultPayload,
    TestRunPayload,
)
from simulator.replay.normalise import Normaliser
from simulator.trajectory import EventSource, TrajectoryHeader, open_trajectory
from simulator.wire import WireError

ACTION_KINDS = frozenset(
    {
        Kind.EXEC,
        Kind.FILE_READ,
        Kind.FILE_WRITE,
        Kind.FILE_EDIT,
        Kind.FILE_CREATE,
        Kind.FILE_DELETE,
        Kind.FILE_RENAME,
        Kind.SEARCH,
        Kind.TEST_RUN,
        Kind.AGENT_FINISH,
    }
)
_READ_KINDS = frozenset(
    str(kind) for kind in (*ACTION_KINDS, Kind.EXEC_RESULT, Kind.TEST_RESULT, Kind.SEARCH_RESULT)
)


@dataclass
class Step:
    """One action of a run and what answered it."""

    index: int
    """Position among the run's steps (0-based)."""
    seq: int
    """The action event's seq in its trajectory."""
    kind: Kind
    key: str
    """The normalised action: what alignment compares."""
    text: str
    """The action as a person reads it."""
    observation: str = ""
    """What answered it, one line (exit code and output size, test counts, matches)."""
    digest: str = ""
    """A digest of the observation (or of a file change's result), as recorded."""
    output: str | None = None
    """A command's recorded output: normalised only where two runs' digests differ (most
    outputs of aligned steps are equal byte for byte, and normalising every one costs)."""
    _normal: str | None = field(default=None, repr=False)
    files: dict[str, str | None] = field(default_factory=dict)
    """For file changes: path -> sha256 after the step (None: deleted)."""
    tests: dict[str, str] = field(default_factory=dict)
    """For test runs: test id -> outcome."""

    def outcome(self, normalise: Normaliser) -> str:
        """The digest to compare across runs: of the normalised output for a command."""
        if self.output is None:
            return self.digest
        if self._normal is None:
            self._normal = _digest(f"{self.observation}\0{normalise(self.output)}")
        return self._normal


@dataclass
class Run:
    """A trajectory read as steps."""

    path: Path
    header: TrajectoryHeader
    steps: list[Step]
    problem: str | None = None
    """Why reading stopped early, if it did."""
    normalise: Normaliser = field(default_factory=Normaliser)
    """What makes its outputs comparable with other runs' (its workspace path included)."""

    @property
    def label(self) -> str:
        return self.path.name

    def files_after(self, index: int) -> dict[str, str | None]:
        """Every file the run changed up to and including step `index`, with its last sha256."""
        state: dict[str, str | None] = {}
        for step in self.steps[: index + 1]:
            state.update(step.files)
        return state

    def last_tests(self) -> dict[str, str]:
        """Test id -> outcome of the run's last structured test run ({} when it ran none)."""
        for step in reversed(self.steps):
            if step.tests:
                return step.tests
        return {}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


_COMMAND_RULES = ("temp-paths", "hex-addresses")
"""What can differ between two runs' spelling of one command: their scratch paths. (The other
rules are for outputs; running all of them on every command doubled the cost of reading a run.)"""


def _key(event: Event, normalise: Normaliser) -> str:
    data = event.data
    kind = event.kind
    if isinstance(data, ExecPayload):
        return f"exec {normalise(' '.join(data.command.split()))}"
    if isinstance(data, FileChangePayload):
        return f"{kind} {data.path}"
    if isinstance(data, FileRenamePayload):
        return f"rename {data.path} {data.to}"
    if isinstance(data, FileReadPayload):
        return f"read {data.path}"
    if isinstance(data, SearchPayload):
        return f"search {data.pattern!r} {data.path} {data.glob or ''}"
    if isinstance(data, TestRunPayload):
        return f"tests {data.selector or ''}"
    if isinstance(data, AgentFinishPayload):
        return "finish"
    return str(kind)


def _observe(step: Step, event: Event) -> None:
    """Fill `step` from the observation `event` that answered it."""
    data = event.data
    if isinstance(data, ExecResultPayload):
        lines = data.output_lines if data.output_lines is not None else data.output.count("\n")
        # Imports may not know the exit code: only what is known is shown.
        state = (
            "timed out"
            if data.timed_out
            else (f"exit {data.exit_code}" if data.exit_code is not None else "")
        )
        step.observation = ", ".join(part for part in (state, f"{lines} lines") if part)
        step.digest = _digest(f"{data.exit_code}\0{data.output}")
        step.output = data.output
    elif isinstance(data, TestResultPayload):
        step.tests = {test.id: test.outcome for test in data.tests}
        counts = data.counts or {}
        parts = [f"{n} {name}" for name, n in counts.items() if n]
        step.observation = ", ".join(parts) or f"exit {data.exit_code}"
        step.digest = _digest(repr(sorted(step.tests.items())) + f"\0{data.exit_code}")
    elif isinstance(data, SearchResultPayload):
        step.observation = f"{data.count} matches"
        step.digest = _digest(repr(sorted(map(tuple, data.matches))))


def steps_of(source: EventSource, normalise: Normaliser | None = None) -> list[Step]:
    """The steps of an open trajectory, in order; `normalise` makes actions and outputs
    comparable across runs (default: replay's rules plus the recorded workspace path)."""
    if normalise is None:
        normalise = Normaliser().with_paths([source.header.backend.workspace])
    for_commands = Normaliser(
        tuple(rule for rule in normalise.rules if rule.name in _COMMAND_RULES), normalise.paths
    )
    steps: list[Step] = []
    by_seq: dict[int, Step] = {}
    for index in range(len(source)):
        # The kind is read off the raw line: the model's turns, often most of a file, are
        # never parsed.
        if source.meta(index)[1] not in _READ_KINDS:
            continue
        try:
            event = source.event(index)
            if event.kind in ACTION_KINDS:
                step = Step(
                    len(steps),
                    event.seq,
                    event.kind,
                    _key(event, for_commands),
                    describe_event(event),
                )
                data = event.data
                if isinstance(data, FileChangePayload):
                    after = None if event.kind == Kind.FILE_DELETE else data.after_sha256
                    step.files = {data.path: after}
                    step.digest = after or "deleted"
                elif isinstance(data, FileRenamePayload):
                    step.files = {data.path: None}
                elif isinstance(data, AgentFinishPayload):
                    step.digest = _digest(data.reason or "")
                steps.append(step)
                by_seq[event.seq] = step
            elif event.cause is not None and event.cause in by_seq:
                _observe(by_seq[event.cause], event)
        except WireError:
            # A payload of a shape this version does not know is shown by its kind alone.
            continue
    return steps


def read_run(path: Path | str) -> Run:
    """A trajectory file (RepoSim's or another tool's) read as a run; TrajectoryError if it
    cannot be opened."""
    with open_trajectory(path) as source:
        normalise = Normaliser().with_paths([source.header.backend.workspace])
        steps = steps_of(source, normalise)
        return Run(Path(path), source.header, steps, source.problem, normalise)
