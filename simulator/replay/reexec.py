"""Re-execution: run a trajectory's recorded actions again against a fresh environment.

The start is rebuilt from the header (repository source, commit, backend image): a scratch copy of
the repository, checked out clean at the recorded commit. Each recorded action (commands, file
changes, reads, searches, test runs, checkpoints and restores) goes through a new `Session`, so the
re-execution is itself recorded, and its observation is compared with the recorded one after
normalisation (see `normalise.py`). The same machinery rebuilds the workspace for fork and resume.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from backends.base import BackendError
from backends.shell import quote
from simulator.events import (
    Actor,
    CheckpointPayload,
    Event,
    ExecPayload,
    ExecResultPayload,
    FileChangePayload,
    FileReadPayload,
    FileRenamePayload,
    Kind,
    SearchPayload,
    SearchResultPayload,
    TerminalInputPayload,
    TestResultPayload,
    TestRunPayload,
)
from simulator.git import git_output
from simulator.paths import trajectories_dir
from simulator.provenance import ChainCheck
from simulator.replay.normalise import Normaliser
from simulator.session import Session, SessionError, open_session, output_text
from simulator.trajectory import (
    EventSource,
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryIndex,
    open_trajectory,
    sha256_text,
)

R = TypeVar("R", ExecResultPayload, TestResultPayload, SearchResultPayload)
Ran = TypeVar("Ran", ExecResultPayload, TestResultPayload)  # the results of what runs again

# Actions whose observation is a separate event (found by its `cause`).
_WITH_RESULT = {
    Kind.EXEC: Kind.EXEC_RESULT,
    Kind.TEST_RUN: Kind.TEST_RESULT,
    Kind.SEARCH: Kind.SEARCH_RESULT,
}
REPLAYED_KINDS = frozenset(
    {
        Kind.EXEC,
        Kind.TEST_RUN,
        Kind.SEARCH,
        Kind.FILE_READ,
        Kind.FILE_WRITE,
        Kind.FILE_CREATE,
        Kind.FILE_EDIT,
        Kind.FILE_DELETE,
        Kind.FILE_RENAME,
        Kind.CHECKPOINT,
        Kind.RESTORE,
        Kind.TERMINAL_INPUT,
        Kind.INTERRUPT,
    }
)
_RESULT_LOOKAHEAD = 10_000
_TERMINAL_WAIT_MIN = 0.05
_TERMINAL_WAIT_MAX = 5.0


class StartError(TrajectoryError):
    """The recorded start cannot be rebuilt (repository, commit or image missing)."""


@dataclass
class StepResult:
    seq: int
    kind: str
    actor: str
    action: str
    status: str  # match | differ | skipped
    differences: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    """Wall time of re-executing the action and comparing its observation."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "actor": self.actor,
            "action": self.action,
            "status": self.status,
            "differences": self.differences,
        }


@dataclass
class ReplayReport:
    file: Path
    trajectory: Path | None = None
    notes: list[str] = field(default_factory=list)
    steps: list[StepResult] = field(default_factory=list)
    wall: float = 0.0
    command_time: float = 0.0
    """The re-executed commands' and test runs' own time, as their results report it."""
    problem: str | None = None

    def count(self, status: str) -> int:
        return sum(1 for s in self.steps if s.status == status)

    @property
    def first_difference(self) -> StepResult | None:
        return next((s for s in self.steps if s.status == "differ"), None)

    @property
    def exit_code(self) -> int:
        """0: every action re-executed and matched; 1: a difference, or the recording stops
        early (the actions after the unreadable line were not checked)."""
        return 1 if self.first_difference is not None or self.problem else 0

    def summary(self) -> str:
        text = (
            f"{len(self.steps)} actions re-executed: {self.count('match')} match, "
            f"{self.count('differ')} differ, {self.count('skipped')} skipped"
        )
        first = self.first_difference
        if first is not None:
            text += f"; first difference at step {first.seq} ({first.action})"
        if self.problem:
            text += "; the recording stops early, so the actions after that were not checked"
        return text + "."

    def as_dict(self) -> dict[str, Any]:
        first = self.first_difference
        return {
            "file": str(self.file),
            "trajectory": str(self.trajectory) if self.trajectory else None,
            "notes": self.notes,
            "matched": self.count("match"),
            "differed": self.count("differ"),
            "skipped": self.count("skipped"),
            "first_difference": first.seq if first else None,
            "wall_seconds": round(self.wall, 3),
            "command_seconds": round(self.command_time, 3),
            "problem": self.problem,
        }


# -- the start ---------------------------------------------------------------------------------


@dataclass
class StartPlan:
    source: Path
    commit: str | None
    checkout: bool
    image: str | None
    notes: list[str]

    def header_repo(self) -> dict[str, Any] | None:
        """What the new trajectory's header names as its start: the recorded commit when the
        workspace is checked out clean at it (the source's HEAD may be elsewhere); None when the
        source is used as it is, which the session then describes itself."""
        if not (self.checkout and self.commit):
            return None
        return {
            "source": str(self.source),
            "git": True,
            "commit": self.commit,
            "branch": "HEAD",  # detached, as `git rev-parse --abbrev-ref HEAD` would say
            "dirty": False,
        }


def untrusted_line(source: EventSource, until: int | None = None) -> int | None:
    """The first line of `source` that re-executing it (up to step `until`) would read and that
    is not provably this user's recording on this machine; None when every such line is.

    Trust is line by line (simulator.provenance): the header's seal, then each event line's
    tag in the chain its writer kept, so a cut-off file or a copy is trusted up to its last
    whole line and an edited, inserted, removed or reordered line breaks trust from there on.
    Another tool's file is untrusted from line 1. Mirrors the re-execution loop: it stops at
    an unreadable line and at the first step after `until`, so lines past those do not count."""
    if not isinstance(source, TrajectoryIndex):
        return 1
    if not source.scanned:
        source.scan()
    check = ChainCheck(source.header.to_dict())
    if not check.header_trusted:
        return 1
    for index in range(len(source)):
        try:
            event, trusted = source.checked_event(index, check.check)
        except TrajectoryError:
            return None
        if until is not None and event.seq > until:
            return None
        if not trusted:
            return source.line_number(index)
    return None


def untrusted_reason(line: int, name: str = "this trajectory") -> str:
    """Why a trajectory's commands are not this user's from `line` on: the start of a sentence,
    naming the line."""
    if line <= 1:
        return (
            f"{'This trajectory' if name == 'this trajectory' else name} was not recorded by"
            " you on this machine"
            " (untrusted from line 1)"
        )
    return (
        f"Line {line} of {name} is not the line your RepoSim wrote there (it was changed, added"
        " or moved after it was recorded)"
    )


def foreign_on_host(line: int) -> str:
    return (
        f"{untrusted_reason(line)}, so its commands run here only with --backend local and your"
        " confirmation at a terminal; without --backend local they run in a container."
    )


def choose_backend(source: EventSource, requested: str | None, *, until: int | None = None) -> str:
    """Where to re-execute a trajectory's commands (up to step `until`) when the user did not say.

    A trajectory this user recorded here, every line re-execution reads checking out (see
    untrusted_line), runs here (local). Any other (someone else's, an imported file, an older
    one, one edited after it was written) holds commands that could do anything, so they run
    in a container; the local backend for those needs the caller's `host_consent` too (the
    CLI asks at a terminal), see plan_start."""
    if requested is not None:
        return requested
    return "local" if untrusted_line(source, until) is None else "docker"


def plan_start(
    header: TrajectoryHeader,
    *,
    repo: Path | None = None,
    current: bool = False,
    backend_kind: str = "local",
    image: str | None = None,
    host_consent: bool = False,
    untrusted: int | None = 1,
) -> StartPlan:
    """Check that the recorded start can be rebuilt, before anything runs; StartError if not.

    `untrusted` is the first line re-execution would read that is not provably this user's
    recording here (untrusted_line; None: none is). Such a trajectory runs on the local backend
    only with `host_consent` (the user's explicit flag and answer to a prompt): its commands
    would run on this machine with the user's rights."""
    recorded = header.repo
    imported = header.imported
    notes: list[str] = []
    if repo is None:
        source_text = recorded.source
        if not source_text:
            origin = f" (imported from {imported.format})" if imported is not None else ""
            raise StartError(
                f"The trajectory{origin} records no repository to start from; pass --repo PATH."
            )
        source = Path(source_text)
    else:
        source = repo.expanduser().resolve()
        notes.append(
            f"Using {source} instead of the recorded {recorded.source}."
            if recorded.source
            else f"Using {source} (the trajectory records no repository)."
        )
    if not source.is_dir():
        raise StartError(
            f"The recorded repository {source} does not exist on this machine;"
            " pass --repo PATH to use another copy."
        )
    commit = recorded.commit if recorded.git else None
    checkout = False
    if commit and not current:
        if git_output(source, "cat-file", "-e", f"{commit}^{{commit}}") is None:
            raise StartError(
                f"Commit {commit[:12]} is not in {source}; fetch it, or pass"
                " --current to replay against the repository as it is now."
            )
        head = (git_output(source, "rev-parse", "HEAD") or "").strip()
        status = (
            git_output(source, "status", "--porcelain", "--untracked-files=normal") or ""
        ).strip()
        checkout = head != commit or bool(status.strip())
        if checkout:
            notes.append(
                f"The workspace is checked out clean at the recorded commit {commit[:12]}."
            )
        if recorded.dirty:
            notes.append(
                "The recording started with uncommitted changes, which are not in the"
                " repository: the start may differ."
            )
    elif commit and current:
        notes.append(
            f"Replaying against {source} as it is now, not the recorded commit {commit[:12]}."
        )
    elif not recorded.git:
        notes.append(f"{source} is not a git repository: its current contents are the start.")
    backend = header.backend
    recorded_image = backend.image if backend_kind == "docker" else None
    if image is not None and backend_kind == "docker":
        if recorded_image and recorded_image != image:
            notes.append(f"Using the image {image} instead of the recorded {recorded_image}.")
        recorded_image = image
    image = recorded_image
    if backend_kind == "docker" and backend.kind != "docker":
        notes.append("The recording ran on the local backend; the container's tools may differ.")
    if backend_kind == "local" and backend.kind == "docker":
        notes.append("The recording ran in a container; this machine's tools may differ.")
    if untrusted is not None:
        if backend_kind == "local" and not host_consent:
            raise StartError(foreign_on_host(untrusted))
        notes.append(
            f"{untrusted_reason(untrusted)}: its commands run"
            + (
                " here, with your rights, as you confirmed (--backend local)."
                if backend_kind == "local"
                else " in a container (--backend local would ask to run them here)."
            )
        )
    return StartPlan(source, commit, checkout, image, notes)


async def open_at_start(
    plan: StartPlan,
    *,
    backend_kind: str,
    trajectory_path: Path | None,
    parent: dict[str, Any] | None,
    agent: dict[str, Any] | None = None,
) -> Session:
    """A live session at the recorded start (before its first action)."""
    options: dict[str, Any] = {}
    if plan.image:
        options["image"] = plan.image
    try:
        session = await open_session(
            plan.source,
            backend=backend_kind,
            backend_options=options,
            trajectory_path=trajectory_path,
            parent=parent,
            agent=agent,
            repo=plan.header_repo(),
            checkpoint_start=False,
        )
    except BackendError as exc:
        raise StartError(f"The {backend_kind} backend could not start: {exc}") from None
    if plan.checkout and plan.commit:
        workspace = quote(session.workspace_path)
        result = await session.exec(
            f"(cd {workspace} && git -c advice.detachedHead=false checkout -q --force --detach"
            f" {plan.commit} && git clean -fdq)",
            actor=Actor.SYSTEM,
        )
        if result.exit_code != 0:
            await session.close("error: checkout failed")
            raise StartError(
                f"Could not check out {plan.commit[:12]} in the workspace: "
                f"{result.output.decode(errors='replace').strip()}"
            )
    return session


# -- re-executing actions ----------------------------------------------------------------------


class Replayer:
    """Re-executes recorded actions one by one in a session and compares the observations."""

    def __init__(self, session: Session, source: EventSource, normaliser: Normaliser) -> None:
        self.session = session
        self.source = source
        self.normalise = normaliser.with_paths(
            [source.header.backend.workspace, session.workspace_path]
        )
        self.command_time = 0.0
        self._pty: Any = None
        self._drain: asyncio.Task[None] | None = None
        self._started = False

    def _result_of(self, index: int, action: Event, cls: type[R]) -> tuple[Event, R] | None:
        """The observation that answers the action at `index`, and its payload."""
        kind = _WITH_RESULT[action.kind]
        for later in range(index + 1, min(len(self.source), index + _RESULT_LOOKAHEAD)):
            try:
                event = self.source.event(later)
            except TrajectoryError:
                return None
            if event.cause == action.seq and event.kind == kind:
                return event, event.typed(cls)
        return None

    def _ran(
        self,
        step: StepResult,
        what: str,
        duration: float,
        exit_code: int | None,
        recorded: tuple[Event, Ran] | None,
    ) -> tuple[Event, Ran] | None:
        """A command or a test run done again: its time counts, and its exit code is compared
        with the recorded result's; None, the step skipped, when the recording has no result."""
        self.command_time += duration
        if recorded is None:
            step.status = "skipped"
            step.differences.append(f"the recording has no result for this {what}")
            return None
        then = recorded[1].exit_code
        if then != exit_code:
            step.differences.append(f"exit code {then} recorded, now {exit_code}")
        return recorded

    async def replay(self, index: int, event: Event) -> StepResult | None:
        """Re-execute the event at `index` if it is an action; None for anything else."""
        if event.kind not in REPLAYED_KINDS:
            return None
        step = StepResult(event.seq, event.kind, str(event.actor), _action_text(event), "match")
        started = time.perf_counter()
        try:
            await self._run(index, event, step)
        except SessionError as exc:
            step.status = "differ"
            step.differences.append(f"the action failed now: {exc}")
        except BackendError as exc:
            step.status = "differ"
            step.differences.append(f"the backend failed: {exc}")
        except TrajectoryError as exc:
            step.status = "differ"
            step.differences.append(f"the recording cannot be used: {exc}")
        if step.differences and step.status == "match":
            step.status = "differ"
        step.elapsed = time.perf_counter() - started
        return step

    async def _run(self, index: int, event: Event, step: StepResult) -> None:
        s, actor, kind, data = self.session, event.actor, event.kind, event.data
        if isinstance(data, ExecPayload):
            recorded = self._result_of(index, event, ExecResultPayload)
            result = await s.exec(data.command, actor=actor, timeout=data.timeout)
            answered = self._ran(step, "command", result.duration, result.exit_code, recorded)
            if answered is None:
                return
            result_event, r = answered
            if r.timed_out != result.timed_out:
                step.differences.append(
                    "timed out " + ("then, not now" if r.timed_out else "now, not then")
                )
            if result.output_elided:
                # A large output is a window now (backends/output.py); its whole is compared
                # by digest, without loading either into memory.
                if (result_event.payload.get("blobs") or {}).get("output") != result.output_sha256:
                    step.differences.append(
                        f"output: {r.output_bytes if r.output_bytes is not None else '?'} bytes "
                        f"recorded, now {result.output_size} bytes, not the same"
                    )
            else:
                self._compare_text(
                    step,
                    "output",
                    self._whole(result_event, "output"),
                    output_text(result.output),
                )
        elif isinstance(data, TestRunPayload):
            recorded_run = self._result_of(index, event, TestResultPayload)
            run = await s.run_tests(
                data.selector or None, command=data.command or None, actor=actor
            )
            answered_run = self._ran(step, "test run", run.duration, run.exit_code, recorded_run)
            if answered_run is None:
                return
            result_event, t = answered_run
            before = {test.id: test.outcome for test in t.tests}
            after = {test.id: test.outcome for test in run.tests}
            for test_id in sorted(set(before) | set(after)):
                if before.get(test_id) != after.get(test_id):
                    step.differences.append(
                        f"{test_id}: {before.get(test_id) or 'absent'}"
                        f" recorded, now {after.get(test_id) or 'absent'}"
                    )
            if not t.structured:
                self._compare_text(step, "output", self._whole(result_event, "output"), run.output)
        elif isinstance(data, SearchPayload):
            recorded_search = self._result_of(index, event, SearchResultPayload)
            matches = await s.search(
                data.pattern,
                data.path or ".",
                regex=data.regex,
                ignore_case=data.ignore_case,
                glob=data.glob or None,
                actor=actor,
            )
            if recorded_search is not None:
                then = recorded_search[1].matches
                now = [(m.path, m.line, m.text) for m in matches]
                if then != now:
                    step.differences.append(
                        f"{len(then)} matches recorded, now {len(now)}"
                        + ("" if len(then) != len(now) else " (different lines)")
                    )
        elif isinstance(data, FileReadPayload):
            text = await s.read(data.path, actor=actor)
            if data.sha256 != sha256_text(text):
                step.differences.append(f"{data.path} has different content than when it was read")
        elif isinstance(data, FileChangePayload):
            if kind == Kind.FILE_EDIT:
                new = await s.edit(
                    data.path,
                    self._whole(event, "old"),
                    self._whole(event, "new"),
                    actor=actor,
                    replace_all=(data.replacements or 1) > 1,
                )
            elif kind == Kind.FILE_DELETE:
                new = await s.delete(data.path, actor=actor)
            else:
                method = s.write if kind == Kind.FILE_WRITE else s.create
                new = await method(data.path, self._whole(event, "content"), actor=actor)
            self._compare_change(step, data, new.typed(FileChangePayload))
        elif isinstance(data, FileRenamePayload):
            await s.rename(data.path, data.to, actor=actor)
        elif isinstance(data, CheckpointPayload) and kind == Kind.CHECKPOINT:
            checkpoint = await s.checkpoint(data.name or None, actor=actor)
            if data.tree and data.tree != checkpoint.tree:
                where = "at the start" if checkpoint.name == "start" else "here"
                step.differences.append(
                    f"the workspace {where} differs from the recorded one"
                    f" (tree {data.tree[:12]} recorded, now {checkpoint.tree[:12]})"
                )
        elif isinstance(data, CheckpointPayload):
            await s.restore(data.name, actor=actor)
        elif isinstance(data, TerminalInputPayload):
            await self._terminal_input(data.data, self._gap_after(index, event))
            step.status = "skipped"
            step.differences.append("typed into the terminal again; its output is not compared")
        elif kind == Kind.INTERRUPT:
            step.status = "skipped"
            step.differences.append("interrupts are not re-executed (the command already ended)")

    def _gap_after(self, index: int, event: Event) -> float:
        """How long the person waited after typing this before their next action (capped):
        the terminal's output in between is what they waited for."""
        last = event.t
        for later_index in range(index + 1, min(len(self.source), index + _RESULT_LOOKAHEAD)):
            try:
                later = self.source.event(later_index)
            except TrajectoryError:
                break
            last = later.t
            if later.kind in REPLAYED_KINDS:
                break
        else:
            if index + 1 >= len(self.source):
                return _TERMINAL_WAIT_MAX  # nothing after it: its output was not recorded
        return max(0.0, min(last - event.t, _TERMINAL_WAIT_MAX))

    async def _terminal_input(self, data: str, wait: float) -> None:
        if self._pty is None:
            self._pty = await self.session.open_terminal()

            async def drain() -> None:
                while not self._pty.closed:
                    if not await self._pty.read():
                        return

            self._drain = asyncio.create_task(drain())
        # The exact bytes typed (those that are not UTF-8 come back as surrogates).
        await self._pty.write(data.encode("utf-8", "surrogateescape"))
        # What the person typed runs asynchronously in the terminal; give it the time they
        # gave it before their next step, so that it has done its work when that step runs.
        await asyncio.sleep(max(wait, _TERMINAL_WAIT_MIN))

    async def close(self) -> None:
        if self._pty is not None:
            await self._pty.close()
        if self._drain is not None:
            self._drain.cancel()
            await asyncio.gather(self._drain, return_exceptions=True)

    def _whole(self, event: Event, key: str) -> str:
        """The whole text of a payload field (from its blob if the line holds a shortened one);
        a missing, changed or misplaced blob is a TrajectoryError the report names."""
        return self.source.load_blob(event, key)

    def _compare_text(self, step: StepResult, what: str, recorded: str, now: str) -> None:
        if recorded == now:
            return  # most outputs repeat exactly; the regexes are for the ones that do not
        a, b = self.normalise(recorded), self.normalise(now)
        if a == b:
            return
        old_lines, new_lines = a.splitlines(), b.splitlines()
        for number, (x, y) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
            if x != y:
                step.differences.append(
                    f"{what} line {number}: {_clip(x)!r} recorded, now {_clip(y)!r}"
                )
                return
        step.differences.append(f"{what}: {len(old_lines)} lines recorded, now {len(new_lines)}")

    def _compare_change(
        self, step: StepResult, recorded: FileChangePayload, new: FileChangePayload
    ) -> None:
        if recorded.before_sha256 != new.before_sha256:
            step.differences.append(
                f"{recorded.path} was different before the change than when recorded"
            )
        if recorded.after_sha256 != new.after_sha256:
            step.differences.append(
                f"{recorded.path} is different after the change than when recorded"
            )


def _clip(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _action_text(event: Event) -> str:
    from simulator.describe import describe_event

    return describe_event(event)


# -- the public entry points -------------------------------------------------------------------


def _new_path(source: Path, what: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return trajectories_dir() / f"{stamp}-{what}-{source.stem}.jsonl"


async def reexecute(
    file: Path | str,
    *,
    backend_kind: str = "local",
    normaliser: Normaliser | None = None,
    repo: Path | None = None,
    current: bool = False,
    image: str | None = None,
    trajectory_path: Path | None = None,
    until: int | None = None,
    on_step: Callable[[StepResult], None] | None = None,
    on_notes: Callable[[list[str]], None] | None = None,
    keep_open: bool = False,
    parent: dict[str, Any] | None = None,
    host_consent: bool = False,
) -> tuple[ReplayReport, Session | None]:
    """Re-execute the actions of `file` (up to step `until`) and compare what they observe.

    Returns the report and, with keep_open, the live session left at the end (for fork and
    resume); otherwise the session is closed and None is returned."""
    path = Path(file)
    source = open_trajectory(path)
    try:
        return await _reexecute(
            path,
            source,
            backend_kind=backend_kind,
            normaliser=normaliser or Normaliser(),
            repo=repo,
            current=current,
            image=image,
            trajectory_path=trajectory_path,
            until=until,
            on_step=on_step,
            on_notes=on_notes,
            keep_open=keep_open,
            parent=parent,
            host_consent=host_consent,
        )
    finally:
        source.close()


async def _reexecute(
    path: Path,
    source: EventSource,
    *,
    backend_kind: str,
    normaliser: Normaliser,
    repo: Path | None,
    current: bool,
    image: str | None,
    trajectory_path: Path | None,
    until: int | None,
    on_step: Callable[[StepResult], None] | None,
    on_notes: Callable[[list[str]], None] | None,
    keep_open: bool,
    parent: dict[str, Any] | None,
    host_consent: bool,
) -> tuple[ReplayReport, Session | None]:
    report = ReplayReport(file=path, problem=source.problem)
    untrusted = untrusted_line(source, until)
    plan = plan_start(
        source.header,
        repo=repo,
        current=current,
        backend_kind=backend_kind,
        image=image,
        host_consent=host_consent,
        untrusted=untrusted,
    )
    parent = dict(parent or {"file": str(path.resolve()), "step": None, "replay": "verify"})
    # Each line is checked again from the very bytes that are run: a file changed in place
    # since the check above stops at the changed line instead of running it.
    guard = ChainCheck(source.header.to_dict()) if untrusted is None else None
    if untrusted is not None:
        parent["foreign"] = True  # the new file re-runs a stranger's commands: not sealed
    report.notes.extend(plan.notes)
    if on_notes is not None:
        on_notes(plan.notes)
    session = await open_at_start(
        plan,
        backend_kind=backend_kind,
        trajectory_path=trajectory_path or _new_path(path, "replay"),
        parent=parent,
        agent=source.header.agent.to_dict() if source.header.agent is not None else None,
    )
    report.trajectory = session.trajectory_path
    replayer = Replayer(session, source, normaliser)
    started = time.perf_counter()
    try:
        for index in range(len(source)):
            try:
                if guard is not None and isinstance(source, TrajectoryIndex):
                    event, trusted = source.checked_event(index, guard.check)
                else:
                    event, trusted = source.event(index), True
            except TrajectoryError as exc:
                report.problem = str(exc)
                break
            if until is not None and event.seq > until:
                break
            if not trusted:
                assert isinstance(source, TrajectoryIndex)  # the only source with a guard
                report.problem = (
                    f"{untrusted_reason(source.line_number(index))} while it was re-executed:"
                    " stopped before it."
                )
                break
            if index == 0 and not (
                event.kind == Kind.CHECKPOINT and event.payload.get("name") == "start"
            ):
                # Recorded without a start checkpoint: still take one, so restore works alike.
                await session.checkpoint("start", actor=Actor.SYSTEM)
            step = await replayer.replay(index, event)
            if step is None:
                continue
            report.steps.append(step)
            if on_step is not None:
                on_step(step)
        if not len(source):
            await session.checkpoint("start", actor=Actor.SYSTEM)
    except BaseException:
        await replayer.close()
        await session.close("error: re-execution failed")
        raise
    await replayer.close()
    report.command_time = replayer.command_time
    report.wall = time.perf_counter() - started
    if keep_open:
        return report, session
    await session.close("replayed")
    return report, None
