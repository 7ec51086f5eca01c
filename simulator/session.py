"""The session gateway: the one way anything reaches a backend.

Human edits, terminal commands, agent tool calls and workflow steps all call these async methods;
each call records typed events in the trajectory and hands them to every subscriber.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import dataclasses
import difflib
import fnmatch
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from backends.base import (
    Backend,
    BackendDescription,
    BackendError,
    DirEntry,
    ExecResult,
    FileStat,
    PathEscapeError,
)
from backends.output import DEFAULT_BUDGET, DEFAULT_CAP, OutputBudget, OutputCapture
from backends.shell import quote
from simulator.backend_factory import BackendOptions, make_backend
from simulator.checkpoint_repo import (
    HELPER_DIR,
    checkpoint_git,
    checkpoint_init_script,
    prepared_start_tree,
)
from simulator.events import (
    TRANSIENT_KINDS,
    Actor,
    CheckpointPayload,
    DataPayload,
    Event,
    ExecPayload,
    ExecResultPayload,
    FileChangePayload,
    FileReadPayload,
    FileRenamePayload,
    InterruptPayload,
    Kind,
    NotePayload,
    Payload,
    PolicyDecisionPayload,
    SearchPayload,
    SearchResultPayload,
    SessionEndPayload,
    TerminalSizePayload,
    TestResultPayload,
    TestRunPayload,
)
from simulator.git import GitError, diff_texts, run_git
from simulator.paths import trajectories_dir
from simulator.session_errors import (
    ActionDenied,
    BinaryFileError,
    EditError,
    SessionError,
    opened,
)
from simulator.terminal_record import RecordedPty
from simulator.testrun import (
    DEFAULT_TEST_COMMAND,
    TestRunResult,
    is_pytest,
    is_unittest,
    parse_junit,
    parse_unittest,
    pytest_command,
    unittest_command,
)
from simulator.trajectory import (
    AgentInfo,
    BackendInfo,
    ParentInfo,
    RepoInfo,
    TrajectoryHeader,
    TrajectoryWriter,
    blob_dir,
    blob_path,
    sha256_text,
)
from simulator.user_config import session_output_budget
from simulator.workspace import SKIP_DIRS

Subscriber = Callable[[Event], None]
_NAME_MAX = 255
_PATH_MAX = 4096


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    by: str = "policy"


# A policy sees every mutating action before it runs: (actor, kind, payload) -> decision.
ActionPolicy = Callable[[Actor, str, dict[str, Any]], Awaitable[Decision]]
TestCommand = str | Callable[[], str | None] | None
"""What run_tests runs (None: pytest), or a way to choose it when it is first asked for."""


@dataclass(frozen=True)
class SearchMatch:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Checkpoint:
    name: str
    tree: str
    seq: int


@dataclass(frozen=True)
class FileChange:
    status: str  # A (added) | M (modified) | D (deleted) | R (renamed)
    path: str


DIFFLIB_WORK = 250_000
"""Above this many line pairs left to compare (after the common start and end), a change's diff
is made by git instead of difflib, whose matcher is quadratic there (87 s for a 21,000-line file
with every other line changed, against git's 45 ms; below it difflib takes at most ~30 ms)."""


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of two texts with a/PATH and b/PATH headers; empty when they are equal."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    same = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        same += 1
    end = 0
    for a, b in zip(reversed(old[same:]), reversed(new[same:]), strict=False):
        if a != b:
            break
        end += 1
    if (len(old) - same - end) * (len(new) - same - end) > DIFFLIB_WORK:
        hunks = diff_texts(before, after)
        if hunks is not None:
            return f"--- a/{path}\n+++ b/{path}\n{hunks}" if hunks else ""
    return "".join(difflib.unified_diff(old, new, fromfile=f"a/{path}", tofile=f"b/{path}"))


def repo_info(source: Path) -> dict[str, Any]:
    """Where a session's workspace came from: path, and for a git repo its commit and state.

    One `git status` answers all three (it was three git processes on every session start);
    GIT_OPTIONAL_LOCKS=0 keeps it from refreshing the source's index on disk, so it takes no
    index.lock that a copy of the repository made at the same time could pick up."""
    info: dict[str, Any] = {"source": str(source), "git": False}
    try:
        out = run_git(
            source,
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=normal",
            timeout=20,
            env={"GIT_OPTIONAL_LOCKS": "0"},
        )
    except GitError:
        return info
    headers = dict(
        line[2:].split(" ", 1) for line in out.splitlines() if line.startswith("# branch.")
    )
    commit = headers.get("branch.oid", "(initial)")
    if commit == "(initial)":  # no commit yet: as `git rev-parse HEAD`, which fails there
        return info
    branch = headers.get("branch.head", "(detached)")
    info.update(
        git=True,
        commit=commit,
        branch="HEAD" if branch == "(detached)" else branch,  # as `rev-parse --abbrev-ref HEAD`
        dirty=any(line and not line.startswith("#") for line in out.splitlines()),
    )
    return info


# The line the checkpoint repository's creation prints when it fails (in the same exec as the
# first git command: tells the two failures apart).
_GIT_INIT_FAILED = "reposim: no checkpoint repository"


class Session:
    """A running backend, the trajectory recorder and the action policy, behind one API."""

    def __init__(
        self,
        backend: Backend,
        *,
        source: Path,
        trajectory_path: Path | str | None = None,
        agent: dict[str, Any] | None = None,
        parent: dict[str, Any] | None = None,
        policy: ActionPolicy | None = None,
        test_command: TestCommand = None,
        repo: dict[str, Any] | None = None,
        output_cap: int | None = DEFAULT_CAP,
        output_budget: int | None = DEFAULT_BUDGET,
    ) -> None:
        """`repo`: what the header says the workspace starts from, when the caller knows better
        than `repo_info(source)` (a replay that checks out a recorded commit). `output_cap`:
        bytes of output a command may print before it is stopped (None: no cap).
        `output_budget`: bytes of command output the session keeps in all, before compression
        (None: no budget); past it each command keeps a short head and tail, and a note says
        so once."""
        self._backend = backend
        self.output_cap = output_cap
        self.output_budget = OutputBudget(output_budget)
        self._budget_noted = False
        self.source = source
        self.id = secrets.token_hex(6)
        self.policy = policy
        self._test_command = test_command
        self._agent = agent
        self._parent = parent
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.trajectory_path = (
            Path(trajectory_path)
            if trajectory_path is not None
            else trajectories_dir() / f"{stamp}-{source.name}-{self.id}.jsonl"
        )
        self._writer: TrajectoryWriter | None = None
        self._subscribers: list[Subscriber] = []
        self._seq = 0
        self._t0 = time.monotonic()
        self._checkpoints: dict[str, Checkpoint] = {}
        self._git_ready = False
        self._git_lock = asyncio.Lock()
        self._closed = False
        self._terminals: list[RecordedPty] = []
        self._start_repo = repo
        self.repo: dict[str, Any] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    async def open(cls, source: Path | str, **options: Any) -> Session:
        """`open_session(source, ...)`: kept as the Python API's spelling (README)."""
        return await open_session(source, **options)

    async def start(self, *, checkpoint_start: bool = True) -> None:
        # Where the workspace came from is asked of git beside the backend's start (a copy and a
        # shell, or a container): two waits on other processes at once, not one after the other.
        repo = (
            None
            if self._start_repo is not None
            else asyncio.ensure_future(asyncio.to_thread(repo_info, self.source))
        )
        try:
            await self._backend.start()
        except BaseException:
            if repo is not None:
                await asyncio.gather(repo, return_exceptions=True)
            raise
        try:
            if repo is not None:
                self.repo = await repo
            else:
                assert self._start_repo is not None
                self.repo = self._start_repo
            header = TrajectoryHeader.new(
                self.id,
                repo=RepoInfo.from_dict(self.repo, "repo"),
                backend=BackendInfo.from_dict(self._backend.describe().as_dict(), "backend"),
                agent=AgentInfo.from_dict(self._agent, "agent") if self._agent else None,
                parent=ParentInfo.from_dict(self._parent, "parent") if self._parent else None,
            )
            self._writer = TrajectoryWriter(self.trajectory_path, header)
            self._t0 = time.monotonic()
            tree = prepared_start_tree(self._backend.prepared)
            if checkpoint_start and tree is not None:  # a warm pool took it ahead
                self._git_ready = True
                self._record_checkpoint("start", tree, Actor.SYSTEM)
            elif checkpoint_start:
                await self.checkpoint("start", actor=Actor.SYSTEM)
            stale = self.description.extra.get("venv_stale")
            if stale:  # the venv setup left no longer fits: say why it is not used
                self.note(str(stale), actor=Actor.SYSTEM)
        except BaseException:
            await self._backend.stop()
            raise

    async def close(self, reason: str = "closed") -> None:
        if self._closed:
            return
        for terminal in self._terminals:
            terminal.flush()  # output read but not yet recorded goes in before the end
        self._closed = True
        try:
            self.emit(Actor.SYSTEM, Kind.SESSION_END, SessionEndPayload(reason))
        finally:
            if self._writer is not None:
                self._writer.close()
            await self._backend.stop()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        reason = "closed" if exc_type is None else f"error: {exc_type.__name__}"  # type: ignore[attr-defined]
        if exc_type is asyncio.CancelledError or exc_type is KeyboardInterrupt:
            reason = "interrupted"
        await self.close(reason)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def test_command(self) -> str | None:
        """The command run_tests runs (None: pytest). An opener may give a way to choose it
        instead: it is chosen when first asked for (`reposim open` detects it after its first
        frame, since detection walks the repository and loads the setup workflow's rules)."""
        if callable(self._test_command):
            self._test_command = self._test_command()
        return self._test_command

    @test_command.setter
    def test_command(self, command: str | None) -> None:
        self._test_command = command

    @property
    def description(self) -> BackendDescription:
        """Where the session runs: the backend's kind, image, limits and workspace (what the
        trajectory header records and the status bar shows)."""
        return self._backend.describe()

    @property
    def workspace_path(self) -> str:
        """The workspace's absolute path where commands run (in the container, for docker)."""
        return self._backend.workspace_path

    @property
    def private_dir(self) -> str:
        """A folder beside the workspace, outside it, for the session's own helper files."""
        return self._backend.private_dir

    async def write_helper(self, path: str, data: bytes) -> None:
        """Write one of RepoSim's own helper files, unrecorded: only under the workspace's
        `.reposim/` folder (e.g. a harness's mutant spec, one copy of a file per mutant: not the
        person's or the agent's work, and too big to record)."""
        self._check_open()
        path = self.normalize(path)
        if not path.startswith(HELPER_DIR + "/"):
            raise SessionError(f"{path} is not under {HELPER_DIR}/, where helper files go.")
        await self._backend.write_file(path, data)

    # -- events ------------------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Receive every event from now on; returns the function that unsubscribes."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(
        self,
        actor: Actor,
        kind: Kind,
        data: Payload,
        cause: int | None = None,
        *,
        blobs: dict[str, str] | None = None,
    ) -> Event:
        """Record an event and hand it to subscribers. Layers above the gateway (the agent,
        workflows, the UI's terminal) record what they do through this; `data` is the kind's
        payload type (see simulator.events.PAYLOAD_TYPES); `blobs` names fields whose whole
        text is already a blob beside the trajectory (see TrajectoryWriter)."""
        transient = kind in TRANSIENT_KINDS
        seq = 0 if transient else self._next_seq()
        event = Event.of(
            seq,
            time.monotonic() - self._t0,
            Actor(actor),
            data,
            kind=Kind(kind),
            cause=cause,
            blobs=blobs,
        )
        if not transient and self._writer is not None:
            self._writer.write(event)
        for subscriber in list(self._subscribers):
            subscriber(event)
        return event

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    async def _authorize(self, actor: Actor, kind: Kind, action: Payload) -> None:
        if self.policy is None:
            return
        payload = action.to_dict()
        decision = await self.policy(actor, kind, payload)
        self.emit(
            Actor.SYSTEM if decision.by == "policy" else Actor.HUMAN,
            Kind.POLICY_DECISION,
            PolicyDecisionPayload(
                action=str(kind),
                target=_target(payload),
                allowed=decision.allowed,
                reason=decision.reason,
                by=decision.by,
                for_=str(actor),
            ),
        )
        if not decision.allowed:
            raise ActionDenied(f"{kind} was rejected: {decision.reason or 'no reason given'}")

    def _check_open(self) -> None:
        if self._closed:
            raise SessionError("The session is closed.")

    # -- files -------------------------------------------------------------------------------

    @staticmethod
    def normalize(path: str) -> str:
        """A workspace-relative POSIX path; absolute and escaping paths are left for the backend
        to refuse."""
        text = str(path).strip()
        if not text:
            raise SessionError("An empty path was given.")
        if "\0" in text:
            raise SessionError(f"{text!r} contains a NUL byte, which no file name can hold.")
        raw = text.encode("utf-8", "surrogateescape")
        if len(raw) >= _PATH_MAX:
            raise SessionError(f"The path {text[:60]}... is longer than {_PATH_MAX} bytes.")
        if any(len(part) > _NAME_MAX for part in raw.split(b"/")):
            raise SessionError(
                f"A name in {text[:60]!r} is longer than {_NAME_MAX} bytes, the most a file "
                "system takes."
            )
        pure = PurePosixPath(text)
        if pure.is_absolute():
            return text
        parts: list[str] = []
        for part in pure.parts:
            if part == ".":
                continue
            parts.append(part)
        return "/".join(parts) or "."

    async def _read_text(self, path: str) -> str:
        data = await self._backend.read_file(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise BinaryFileError(
                f"{path} is not UTF-8 text (binary or another encoding)."
            ) from None

    async def read(self, path: str, *, actor: Actor = Actor.HUMAN) -> str:
        """The text of a file; recorded as a read."""
        self._check_open()
        path = self.normalize(path)
        text = await self._read_text(path)
        self.emit(actor, Kind.FILE_READ, FileReadPayload(path, sha256_text(text), len(text)))
        return text

    async def read_bytes(self, path: str) -> bytes:
        """Raw bytes of a file, unrecorded (for previews of binary files)."""
        self._check_open()
        return await self._backend.read_file(self.normalize(path))

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        self._check_open()
        return await self._backend.list_dir(self.normalize(path))

    async def stat(self, path: str) -> FileStat:
        self._check_open()
        return await self._backend.stat(self.normalize(path))

    async def exists(self, path: str) -> bool:
        self._check_open()
        return await self._backend.exists(self.normalize(path))

    async def write(self, path: str, content: str | bytes, *, actor: Actor = Actor.HUMAN) -> Event:
        """Write a whole file (creating it if needed); recorded with its diff. `content` may
        be bytes in any encoding: they are written and recorded exactly (see file_bytes)."""
        self._check_open()
        path = self.normalize(path)
        data, text = file_bytes(path, content)
        before: str | None = None
        if await self._backend.exists(path):
            before = (await self._backend.read_file(path)).decode("utf-8", "surrogateescape")
        payload = self._change_payload(path, before, text)
        await self._authorize(actor, Kind.FILE_WRITE, payload)
        await self._backend.write_file(path, data)
        return self.emit(actor, Kind.FILE_WRITE, payload)

    async def create(
        self, path: str, content: str | bytes = "", *, actor: Actor = Actor.HUMAN
    ) -> Event:
        """Create a new file; an existing one is an error (use write or edit)."""
        self._check_open()
        path = self.normalize(path)
        data, text = file_bytes(path, content)
        if await self._backend.exists(path):
            raise SessionError(f"{path} already exists; use write or edit to change it.")
        payload = self._change_payload(path, None, text)
        await self._authorize(actor, Kind.FILE_CREATE, payload)
        await self._backend.write_file(path, data)
        return self.emit(actor, Kind.FILE_CREATE, payload)

    async def edit(
        self,
        path: str,
        old: str,
        new: str,
        *,
        actor: Actor = Actor.HUMAN,
        replace_all: bool = False,
    ) -> Event:
        """Replace exactly one occurrence of `old` with `new` (all of them with replace_all)."""
        self._check_open()
        path = self.normalize(path)
        if not old:
            raise EditError("The text to replace is empty; give the exact text to find.")
        before = await self._read_text(path)
        count = before.count(old)
        if count == 0:
            raise EditError(f"The text to replace was not found in {path}.")
        if count > 1 and not replace_all:
            lines = _occurrence_lines(before, old)
            raise EditError(
                f"The text to replace occurs {count} times in {path} (lines "
                f"{', '.join(map(str, lines[:10]))}); include more context to make it unique."
            )
        after = before.replace(old, new) if replace_all else before.replace(old, new, 1)
        payload = dataclasses.replace(
            self._change_payload(path, before, after),
            old=old,
            new=new,
            replacements=count if replace_all else 1,
        )
        await self._authorize(actor, Kind.FILE_EDIT, payload)
        await self._backend.write_file(path, after.encode("utf-8"))
        return self.emit(actor, Kind.FILE_EDIT, payload)

    async def delete(self, path: str, *, actor: Actor = Actor.HUMAN) -> Event:
        self._check_open()
        path = self.normalize(path)
        info = await self._backend.stat(path)
        payload = FileChangePayload(path=path, kind=_entry_kind(info.kind))
        if info.kind == "file":
            with contextlib.suppress(BinaryFileError):
                before = await self._read_text(path)
                payload = dataclasses.replace(self._change_payload(path, before, None), kind="file")
        await self._authorize(actor, Kind.FILE_DELETE, payload)
        await self._backend.delete(path)
        return self.emit(actor, Kind.FILE_DELETE, payload)

    async def rename(self, src: str, dst: str, *, actor: Actor = Actor.HUMAN) -> Event:
        self._check_open()
        src, dst = self.normalize(src), self.normalize(dst)
        payload = FileRenamePayload(src, dst)
        await self._authorize(actor, Kind.FILE_RENAME, payload)
        await self._backend.rename(src, dst)
        return self.emit(actor, Kind.FILE_RENAME, payload)

    @staticmethod
    def _change_payload(path: str, before: str | None, after: str | None) -> FileChangePayload:
        return FileChangePayload(
            path=path,
            diff=unified_diff(path, before or "", after or ""),
            before_sha256=sha256_text(before) if before is not None else None,
            after_sha256=sha256_text(after) if after is not None else None,
            content=after,
        )

    # -- commands ----------------------------------------------------------------------------

    async def exec(
        self,
        command: str,
        *,
        actor: Actor = Actor.HUMAN,
        timeout: float | None = None,
        on_output: Callable[[bytes], None] | None = None,
    ) -> ExecResult:
        """Run a command in the persistent shell, streaming its output to subscribers."""
        self._check_open()
        payload = ExecPayload(command, timeout)
        await self._authorize(actor, Kind.EXEC, payload)
        action = self.emit(actor, Kind.EXEC, payload)

        stream = self._output_streamer(actor, action.seq, on_output)
        result = await self._backend.exec(
            command, timeout=timeout, on_output=stream, capture=self._capture()
        )
        data, blobs = self._exec_payload(result)
        self.emit(actor, Kind.EXEC_RESULT, data, cause=action.seq, blobs=blobs)
        self._note_budget()
        return result

    def _note_budget(self) -> None:
        """Say once, in the trajectory, that the output budget ran out."""
        if self.output_budget.exhausted and not self._budget_noted:
            self._budget_noted = True
            self.note(self.output_budget.notice(), actor=Actor.SYSTEM)

    def _capture(self) -> OutputCapture:
        """Output in bounded memory; what outgrows the window is spooled into the blob
        directory and becomes the output's blob when the command ends."""
        return OutputCapture(
            cap=self.output_cap,
            spool_dir=blob_dir(self.trajectory_path),
            budget=self.output_budget,
        )

    def _exec_payload(self, result: ExecResult) -> tuple[ExecResultPayload, dict[str, str]]:
        """The exec.result payload, and the blob already holding its whole output if any."""
        payload = dataclasses.replace(
            _exec_payload(result),
            output_bytes=result.output_size,
            output_lines=result.output_lines,
            output_capped=result.output_capped,
            output_cap=self.output_cap if result.output_capped else None,
        )
        blobs = {}
        if result.output_spool is not None:
            blobs["output"] = self._keep_spool(result)
        return payload, blobs

    def _keep_spool(self, result: ExecResult) -> str:
        """Make a command's spooled output (gzip) its blob, `<trajectory>.blobs/<sha256>.gz`."""
        assert result.output_spool is not None
        spool = Path(result.output_spool)
        target = blob_path(self.trajectory_path, result.output_sha256)
        if target.exists():
            spool.unlink(missing_ok=True)
        else:
            spool.replace(target)
        return result.output_sha256

    def _output_streamer(
        self, actor: Actor, cause: int, forward: Callable[[bytes], None] | None
    ) -> Callable[[bytes], None]:
        """Hands live output to `forward` and, as exec.output events, to subscribers."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")  # chunks split characters

        def stream(chunk: bytes) -> None:
            if forward is not None:
                forward(chunk)
            if self._subscribers:
                text = decoder.decode(chunk)
                if text:
                    self.emit(actor, Kind.EXEC_OUTPUT, DataPayload(text), cause=cause)

        return stream

    async def interrupt(self, *, actor: Actor = Actor.HUMAN) -> None:
        """Stop the running command (its process groups are killed; the shell survives)."""
        self.emit(actor, Kind.INTERRUPT, InterruptPayload())
        await self._backend.interrupt()

    async def run_tests(
        self,
        selector: str | None = None,
        *,
        command: str | None = None,
        actor: Actor = Actor.HUMAN,
        timeout: float | None = None,
    ) -> TestRunResult:
        """Run the tests; pytest runs give per-test outcomes, other commands pass or fail."""
        self._check_open()
        base = command or self.test_command or DEFAULT_TEST_COMMAND
        unittest = is_unittest(base)
        structured = is_pytest(base) or unittest
        payload = TestRunPayload(base, selector)
        await self._authorize(actor, Kind.TEST_RUN, payload)
        action = self.emit(actor, Kind.TEST_RUN, payload)
        report = f"{self._backend.private_dir}/junit-{action.seq}.xml"
        if unittest:
            full = unittest_command(base, selector)
        elif structured:
            full = pytest_command(base, selector, report)
        else:
            full = f"{base} {selector}" if selector else base
        # Tests run from the workspace root in a subshell, so the user's cwd is untouched.
        wrapped = f"(cd {quote(self._backend.workspace_path)} && {full})"

        stream = self._output_streamer(actor, action.seq, None)
        capture = self._capture()
        result = await self._backend.exec(
            wrapped, timeout=timeout, on_output=stream, capture=capture
        )
        if result.output_spool is not None:  # the test run's output is recorded as text
            Path(result.output_spool).unlink(missing_ok=True)
        tests = []
        if unittest:
            text = result.output.decode("utf-8", "replace")
            tests = parse_unittest(text, self._backend.workspace_path)
        elif structured:
            xml = await self._backend.exec(
                f"cat {quote(report)} 2>/dev/null; rm -f {quote(report)}"
            )
            tests = parse_junit(xml.output.decode("utf-8", "replace"))
        run = TestRunResult(
            command=full if not structured else (f"{base} {selector}" if selector else base),
            exit_code=result.exit_code,
            duration=result.duration,
            output=result.output.decode("utf-8", "replace"),
            structured=structured,
            tests=tests,
            timed_out=result.timed_out,
        )
        self.emit(actor, Kind.TEST_RESULT, TestResultPayload.of(run), cause=action.seq)
        return run

    async def search(
        self,
        pattern: str,
        path: str = ".",
        *,
        regex: bool = False,
        ignore_case: bool = False,
        glob: str | None = None,
        limit: int = 500,
        actor: Actor = Actor.HUMAN,
    ) -> list[SearchMatch]:
        """Find text in the workspace's files (binary files, .git and virtualenvs skipped)."""
        self._check_open()
        if not pattern:
            raise SessionError("An empty search pattern was given.")
        path = self.normalize(path)
        action = self.emit(
            actor, Kind.SEARCH, SearchPayload(pattern, path, regex, glob, ignore_case)
        )
        rel = self._inside(path)
        info = await self._backend.stat(rel)  # refuses what resolves outside, like any file op
        matches: list[SearchMatch] | None = None
        if info.kind in ("dir", "symlink"):
            matches = await self._grep_dir(rel, pattern, regex, ignore_case, glob, limit)
        if matches is None:  # a file, or a symlink to one
            matches = await self._search_file(rel, pattern, regex, ignore_case, glob, limit)
        # In path and line order: grep walks directories in the filesystem's order, which two
        # filesystems (a container's loop disk and its re-execution's) do not share.
        matches.sort(key=lambda m: (m.path, m.line))
        self.emit(
            actor,
            Kind.SEARCH_RESULT,
            SearchResultPayload(len(matches), [(m.path, m.line, m.text) for m in matches]),
            cause=action.seq,
        )
        return matches

    def _inside(self, path: str) -> str:
        """`path` relative to the workspace; an absolute path must lie in it."""
        if not path.startswith("/"):
            return path
        root = self._backend.workspace_path.rstrip("/")
        if path == root or path.startswith(root + "/"):
            return path[len(root) + 1 :] or "."
        raise SessionError(f"{path} is outside the workspace; refusing to search it.")

    async def _grep_dir(
        self, rel: str, pattern: str, regex: bool, ignore_case: bool, glob: str | None, limit: int
    ) -> list[SearchMatch] | None:
        """grep in a directory, from inside it: the shell enters it with symlinks resolved
        (`cd -P`), checks it is still in the workspace and greps `.` without following the
        symlinks it meets (-r, not -R). None when `rel` is not a directory."""
        flags = "-rnIZ" + ("E" if regex else "F") + ("i" if ignore_case else "")
        skipped = [*sorted(SKIP_DIRS), "*.egg-info"]
        args = [flags, *(f"--exclude-dir={d}" for d in skipped)]
        args += [f"--include={glob}"] if glob else []
        try:
            found = await self._backend.grep_dir(rel, [*args, "-e", pattern], limit)
        except NotImplementedError:
            pass
        except PathEscapeError:
            raise SessionError(f"{rel} is outside the workspace; refusing to search it.") from None
        except BackendError as exc:  # e.g. swapped for a symlink while it was being entered
            raise SessionError(f"Cannot search {rel}: {exc}") from None
        else:
            if found is None:
                return None
            prefix, output = found
            return _grep_matches(prefix, output.decode("utf-8", "replace").splitlines())
        excludes = " ".join(f"--exclude-dir={d}" for d in [*sorted(SKIP_DIRS), "'*.egg-info'"])
        include = f" --include={quote(glob)}" if glob else ""
        cmd = (
            f"( cd -P -- {quote(self._backend.workspace_path)} 2>/dev/null || exit 5; __r=$PWD; "
            f"cd -P -- {quote(rel)} 2>/dev/null || exit 4; "
            'case "$PWD/" in "$__r"/*) ;; *) exit 3 ;; esac; '
            'printf \'%s\\n\' "${PWD#"$__r"}"; '
            f"grep {flags} {excludes}{include} -e {quote(pattern)} -- . | head -n {limit} )"
        )
        result = await self._backend.exec(cmd)
        if result.exit_code == 4:
            return None
        if result.exit_code == 3:
            raise SessionError(f"{rel} is outside the workspace; refusing to search it.")
        lines = result.output.decode("utf-8", "replace").splitlines()
        if not lines:
            return []
        return _grep_matches(lines[0].lstrip("/"), lines[1:])

    async def _search_file(
        self, rel: str, pattern: str, regex: bool, ignore_case: bool, glob: str | None, limit: int
    ) -> list[SearchMatch]:
        """Search one file, read through the backend's confined file API."""
        if glob and not fnmatch.fnmatch(PurePosixPath(rel).name, glob):
            return []
        data = await self._backend.read_file(rel)
        if b"\0" in data[:8192]:
            return []  # binary, as grep -I skips it
        flags = re.IGNORECASE if ignore_case else 0
        try:
            compiled = re.compile(pattern if regex else re.escape(pattern), flags)
        except re.error as exc:
            raise SessionError(
                f"The search pattern is not a valid regular expression: {exc}."
            ) from None
        matches = []
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if compiled.search(line):
                matches.append(SearchMatch(rel, number, line))
                if len(matches) >= limit:
                    break
        return matches

    # -- checkpoints -------------------------------------------------------------------------

    def _git(self, args: str) -> str:
        return checkpoint_git(self._backend.workspace_path, self._backend.private_dir, args)

    def _git_init_script(self) -> str:
        """Create the private checkpoint repository.

        When the workspace is a git repository, its object store is borrowed (alternates) and
        its index copied, with stat checks cut to mtime and size (the copy has new inodes and
        ctimes). The first `git add -A` then hashes only files that differ from the user's
        index instead of every file: 50k files take well under a second instead of ~13 s.
        RepoSim's own folders go in its info/exclude, so that every listing built on it (the
        changes, a checkpoint's tree, a diff, the exit patch) leaves them out.
        """
        return checkpoint_init_script(self._backend.workspace_path, self._backend.private_dir)

    async def _git_run(self, *commands: str) -> str:
        """Run git commands, in one backend exec (each exec is a round trip through the
        session's shell, and a checkpoint or a changes listing runs at every start), stopping at
        the first that fails; their output together."""
        return await self._git_script(" && ".join(self._git(c) for c in commands), commands)

    async def _git_script(self, script: str, commands: Sequence[str]) -> str:
        """Run a shell script of git commands in one backend exec; the first one also creates
        the checkpoint repository, in the same exec (a round trip less at every start)."""
        async with self._git_lock:
            ready = self._git_ready
            if not ready:
                script = (
                    f"if {{ {self._git_init_script()}; }}; then {script}; "
                    f"else echo {_GIT_INIT_FAILED}; false; fi"
                )
            result = await self._backend.exec(script)
            if not ready and result.exit_code != 0:
                output = result.output.decode(errors="replace")
                if output.rstrip().endswith(_GIT_INIT_FAILED):
                    raise SessionError(
                        "Checkpoints need git in the backend: "
                        + output.rstrip().removesuffix(_GIT_INIT_FAILED).strip()
                    )
            self._git_ready = True
        if result.exit_code != 0:
            names = " / ".join(c.split()[0] for c in commands)
            raise SessionError(
                f"git {names} failed: {result.output.decode(errors='replace').strip()}"
            )
        return result.output.decode("utf-8", "replace")

    async def checkpoint(
        self, name: str | None = None, *, actor: Actor = Actor.HUMAN
    ) -> Checkpoint:
        """Snapshot the whole workspace (git objects in a private repository, any backend)."""
        self._check_open()
        name = name or f"cp{len(self._checkpoints) + 1}"
        # One exec: stage, write the tree, point the ref at it (a subshell keeps the tree's
        # variable out of the session's shell); the tree is the output's last line (`add`
        # may warn before it: an embedded repository, say).
        ref = quote(f"refs/reposim/{name}")
        script = (
            f"{self._git('add -A .')} && (__rst=$({self._git('write-tree')}) && "
            f'{self._git("update-ref")} {ref} "$__rst" && echo "$__rst")'
        )
        out = await self._git_script(script, ("add", "write-tree", "update-ref"))
        return self._record_checkpoint(name, out.strip().splitlines()[-1], actor)

    def _record_checkpoint(self, name: str, tree: str, actor: Actor) -> Checkpoint:
        event = self.emit(actor, Kind.CHECKPOINT, CheckpointPayload(name, tree))
        checkpoint = Checkpoint(name, tree, event.seq)
        self._checkpoints[name] = checkpoint
        return checkpoint

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return list(self._checkpoints.values())

    async def restore(self, name: str, *, actor: Actor = Actor.HUMAN) -> None:
        """Put the workspace back as it was at a checkpoint (ignored files are left alone)."""
        self._check_open()
        checkpoint = self._checkpoints.get(name)
        if checkpoint is None:
            known = ", ".join(self._checkpoints) or "none"
            raise SessionError(f"There is no checkpoint named {name!r} (known: {known}).")
        payload = CheckpointPayload(name, checkpoint.tree)
        await self._authorize(actor, Kind.RESTORE, payload)
        await self._git_run(f"read-tree --reset -u {checkpoint.tree}")
        await self._git_run("clean -fdq")
        self.emit(actor, Kind.RESTORE, payload)

    async def changes(self, since: str = "start") -> list[FileChange]:
        """Files added, modified or deleted since a checkpoint (the session's start by default)."""
        tree = self._tree_of(since)
        # `add` warnings, if any, have no tab: the loop below skips them.
        out = await self._git_run("add -A .", f"diff --cached --name-status -M {tree}")
        changes = []
        for line in out.splitlines():
            fields = line.split("\t")
            if len(fields) >= 2:
                changes.append(FileChange(fields[0][0], fields[-1]))
        return changes

    async def diff(self, since: str = "start", path: str | None = None) -> str:
        """The unified diff of the workspace against a checkpoint."""
        tree = self._tree_of(since)
        await self._git_run("add -A .")
        spec = f" -- {quote(self.normalize(path))}" if path else ""
        return await self._git_run(f"diff --cached --no-color -M {tree}{spec}")

    def _tree_of(self, name: str) -> str:
        checkpoint = self._checkpoints.get(name)
        if checkpoint is None:
            raise SessionError(f"There is no checkpoint named {name!r}.")
        return checkpoint.tree

    # -- the terminal pane and notes ---------------------------------------------------------

    async def open_terminal(self, cols: int = 80, rows: int = 24) -> RecordedPty:
        """An interactive shell in the backend whose input and output are recorded."""
        self._check_open()
        pty = await self._backend.open_pty(cols, rows)
        terminal = RecordedPty(self, pty)
        self._terminals.append(terminal)
        self.emit(Actor.HUMAN, Kind.TERMINAL_SIZE, TerminalSizePayload(cols, rows))
        return terminal

    def note(self, text: str, *, actor: Actor = Actor.HUMAN, mark: str | None = None) -> Event:
        return self.emit(actor, Kind.NOTE, NotePayload(text, mark or None))


def file_bytes(path: str, content: str | bytes) -> tuple[bytes, str]:
    """The bytes to write and the text to record for a file's new content. Bytes are taken as
    they are (recorded as text decoded with surrogateescape, which the trajectory keeps
    exactly, as base64, when it is not UTF-8); text must be encodable, and text that came
    from such bytes (surrogateescape) gives them back."""
    if isinstance(content, bytes):
        return content, content.decode("utf-8", "surrogateescape")
    try:
        return content.encode("utf-8", "surrogateescape"), content
    except UnicodeEncodeError:
        raise SessionError(
            f"The content for {path} holds a lone surrogate, which is no character any file can"
            " hold: pass the exact bytes instead."
        ) from None


def output_text(output: bytes) -> str:
    """A command's output as recorded: decoded with surrogateescape, so bytes that are not
    UTF-8 survive (the trajectory writes them as base64 in `raw.output`) and two outputs that
    differ in such bytes still differ."""
    return output.decode("utf-8", "surrogateescape")


def _exec_payload(result: ExecResult) -> ExecResultPayload:
    return ExecResultPayload(
        exit_code=result.exit_code,
        output=output_text(result.output),
        duration=round(result.duration, 6),
        timed_out=result.timed_out,
        interrupted=result.interrupted,
        shell_restarted=result.shell_restarted,
        oom_killed=result.oom_killed,
        cwd=result.cwd,
        cleared=result.cleared,
    )


def _entry_kind(kind: str) -> Literal["file", "dir", "symlink", "other"]:
    return kind if kind in ("file", "dir", "symlink") else "other"  # type: ignore[return-value]


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines = []
    start = 0
    while (index := text.find(needle, start)) != -1:
        lines.append(text.count("\n", 0, index) + 1)
        start = index + 1
    return lines


def _target(payload: dict[str, Any]) -> str:
    return str(payload.get("path") or payload.get("command") or payload.get("name") or "")


__all__ = [
    "ActionDenied",
    "ActionPolicy",
    "BackendError",
    "BinaryFileError",
    "Checkpoint",
    "Decision",
    "DirEntry",
    "EditError",
    "FileChange",
    "RecordedPty",
    "SearchMatch",
    "Session",
    "SessionError",
    "TestCommand",
    "opened",
]


async def open_session(
    source: Path | str,
    *,
    backend: str | Backend | None = "local",
    backend_options: BackendOptions | Mapping[str, Any] | None = None,
    in_place: bool = False,
    trajectory_path: Path | str | None = None,
    agent: dict[str, Any] | None = None,
    parent: dict[str, Any] | None = None,
    policy: ActionPolicy | None = None,
    test_command: TestCommand = None,
    checkpoint_start: bool = True,
    repo: dict[str, Any] | None = None,
    output_cap: int | None = DEFAULT_CAP,
    output_budget: int | None = None,
    subscribers: Sequence[Subscriber] = (),
) -> Session:
    """Open a recorded session on `source`: the one way every command, workflow and test starts
    one. `backend` is a kind ("local", the default, or "docker") built with `backend_options`
    (the container's image and limits: given explicitly, never inherited from an earlier
    command), or a backend the caller built. `subscribers` see every event, the start's
    included. The backend starts, the trajectory gets its header and, unless
    `checkpoint_start` is False, the start is checkpointed."""
    source = Path(source).expanduser().resolve()
    if backend is None or isinstance(backend, str):
        kind = backend or "local"
        options = BackendOptions.of(backend_options)
        backend = make_backend(kind, source, in_place=in_place, options=options)
    elif BackendOptions.of(backend_options).given() or in_place:
        raise SessionError("backend_options and in_place apply to a backend kind, not a backend.")
    session = Session(
        backend,
        source=source,
        trajectory_path=trajectory_path,
        agent=agent,
        parent=parent,
        policy=policy,
        test_command=test_command,
        repo=repo,
        output_cap=output_cap,
        output_budget=output_budget if output_budget is not None else session_output_budget(),
    )
    for subscriber in subscribers:
        session.subscribe(subscriber)
    await session.start(checkpoint_start=checkpoint_start)
    return session


def _grep_matches(prefix: str, lines: list[str]) -> list[SearchMatch]:
    """Matches from `grep -rnZ` lines run on `.` in the directory `prefix` of the workspace."""
    matches = []
    for raw in lines:
        name, sep, rest = raw.partition("\0")
        if not sep:
            continue
        number, _, text = rest.partition(":")
        if not number.isdigit():
            continue
        name = name.removeprefix("./")
        matches.append(SearchMatch(f"{prefix}/{name}" if prefix else name, int(number), text))
    return matches
