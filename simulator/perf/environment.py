"""One side of a comparison: a recorded Session whose workspace is checked out at a revision.

Each environment is its own Session (its own scratch workspace and trajectory), so everything
that ran at revision A is in A's trajectory and likewise for B. The programs that run inside
(the pyperf driver and the test tracer) come from a tools directory that holds copies of
`bench_worker.py`, `trace_plugin.py` and a link to the pyperf RepoSim imports: pyperf is pure
Python, so whatever interpreter runs the harness can import it from there without installing
anything.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import secrets
import shutil
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyperf

from backends.base import BackendError, ExecResult
from backends.shell import quote
from simulator.events import Actor
from simulator.perf.envcache import CachedEnv, EnvKey, cache_root
from simulator.session import Session, SessionError, Subscriber, open_session
from simulator.workflow import WorkflowFailure

QUICKCHECK_MARK = "REPOSIM-QUICKCHECK "
TRACE_PLUGIN = "reposim_perf_trace"
IN_WORKSPACE = ".reposim-perf"  # a container's perf files, inside its workspace


CALLS_MODULE = "reposim_perf_calls"  # simulator/perf/capture.py, as the harness imports it
# what a timed process inherits besides PATH (pyperf's create_environ keeps the same)
WORKER_ENVIRONMENT = ("HOME", "TEMP", "PYTHONPATH", "PYTHON_CPU_COUNT", "PYTHON_GIL")


# One timed run of "$1": its output goes where it would (the exec's output), then a line
# "$2 STATUS REAL USER SYS" (bash's `time`, children's CPU from getrusage, in seconds); "$3",
# when given, the CPU list it is pinned to (taskset, as pyperf's --affinity pins a worker).
TIME_SCRIPT = (
    'exec 3>&2 4>&1; TIMEFORMAT="%3R %3U %3S"; pin=(); '
    'if [ -n "$3" ] && command -v taskset >/dev/null; then pin=(taskset -c "$3"); fi; '
    't=$( { time "${pin[@]}" bash -c "$1" 2>&3 1>&4; } 2>&1 ); s=$?; '
    'printf \'\\n%s %s %s\\n\' "$2" "$s" "$t"'
)


def _tool_files() -> dict[str, Path]:
    here = Path(__file__).parent
    return {
        "bench_worker.py": here / "bench_worker.py",
        f"{TRACE_PLUGIN}.py": here / "trace_plugin.py",
        f"{CALLS_MODULE}.py": here / "capture.py",
    }


def current_tools() -> Path:
    """Where `shared_tools` keeps the tools of this version (made or not)."""
    files = _tool_files()
    # where pyperf is, too: the tools link to it (a copy before, under the same versions)
    digest = hashlib.sha256(f"{pyperf.__version__}\0{Path(pyperf.__file__).parent}".encode())
    for name, path in sorted(files.items()):
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return cache_root() / f"tools-{digest.hexdigest()[:12]}"


def shared_tools() -> Path:
    """The tools directory every comparison uses, made once per version of these files and of
    pyperf (under the perf cache), not copied into each output directory.

    The worker runs under the environment's interpreter, which need not have pyperf; pyperf is
    pure Python, so the link to RepoSim's own beside the worker (its script directory is on
    sys.path) serves every interpreter, and every container (a container gets the directory,
    the link followed, as a tar)."""
    dest = current_tools()
    if (dest / ".complete").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{secrets.token_hex(4)}"
    try:
        install_tools(tmp)
        (tmp / ".complete").write_text(pyperf.__version__ + "\n")
        with contextlib.suppress(OSError):  # another process made it first: theirs is the same
            tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def install_tools(dest: Path) -> Path:
    """Copy the in-environment programs into `dest` and link pyperf there; returns it.

    `dest/pyperf` is a symbolic link to the pyperf RepoSim imports (its installed package):
    an environment's interpreter imports that one, nothing is copied on this machine. A
    container gets the files the link points to, in the tar (`tools_archive`)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, path in _tool_files().items():
        shutil.copy2(path, dest / name)
    target = dest / "pyperf"
    if not target.exists() and not target.is_symlink():
        target.symlink_to(Path(pyperf.__file__).resolve().parent, target_is_directory=True)
    return dest


@dataclass(frozen=True)
class CommandCheck:
    """One run of a `--command` before any timing."""

    ok: bool
    exit_code: int
    timed_out: bool
    output: str
    seconds: float
    cwd: str

    def detail(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "command_seconds": round(self.seconds, 3),
            "cwd": self.cwd,
            "output_tail": self.output[-2000:],
        }

    def tail(self, lines: int = 20) -> str:
        text = self.output.strip()
        return "\n".join(text.splitlines()[-lines:]) if text else "(no output)"


@dataclass(frozen=True)
class QuickcheckReport:
    ok: bool
    error: str | None
    traceback: str | None
    call_seconds: float | None
    output: str
    timed: str | None = None  # what the worker will time (the harness's TIMED)

    def detail(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "error": self.error,
            "call_seconds": self.call_seconds,
            "timed": self.timed,
        }


def tools_archive(tools: Path) -> bytes:
    """The tools directory as a gzipped tar (to unpack inside a container)."""
    buffer = io.BytesIO()
    # dereference: pyperf is a link to the installed package here; the container needs files
    with tarfile.open(fileobj=buffer, mode="w:gz", dereference=True) as tar:
        tar.add(tools, arcname="tools", filter=_no_bytecode)
    return buffer.getvalue()


def _no_bytecode(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    parts = info.name.split("/")
    return None if "__pycache__" in parts or "tests" in parts[2:3] else info


class PerfEnvironment:
    """A Session at one revision, with the commands a comparison runs in it.

    On the local backend the tools, the harness and the results stay in the output directory on
    this machine. In a container they live in the workspace's `.reposim-perf/` (the tools are
    unpacked there by a recorded command, the harness written through the session) and results
    are read back through the session.
    """

    def __init__(
        self,
        label: str,
        rev: str,
        session: Session,
        tools: Path,
        python: str,
        *,
        local: bool,
        commit: str = "",
        tree: Path | None = None,
    ) -> None:
        self.label = label
        self.rev = rev
        self.session = session
        self.host_tools = tools
        self.python = python
        self.local = local
        self.commit = commit  # resolved in the user's repository before the session opens
        self.tree = tree  # the revision's own tree the session was opened on
        self.cache_key: EnvKey | None = None  # where --setup keeps this side's environment
        self.cached: CachedEnv | None = None  # the environment found there, reused
        # the cached tree was held by another comparison: this side runs on its own clone, and
        # a setup there makes its venv here, outside the cache (see envcache.TreeLease)
        self.private_venv: Path | None = None

    @property
    def tools(self) -> PurePosixPath:
        if self.local:
            return PurePosixPath(self.host_tools)
        return PurePosixPath(self.root) / IN_WORKSPACE / "tools"

    def path_for(self, host: Path) -> str:
        """Where a file of the output directory is, seen from inside the environment."""
        if self.local:
            return str(host)
        return str(PurePosixPath(self.root) / IN_WORKSPACE / host.name)

    async def install(self) -> None:
        """Put the tools into a container (after the checkout, which cleans the workspace)."""
        if self.local:
            return
        payload = base64.b64encode(tools_archive(self.host_tools)).decode()
        target = PurePosixPath(self.root) / IN_WORKSPACE
        result = await self.run(
            f"mkdir -p {quote(str(target))} && echo {payload} | base64 -d | "
            f"tar -xz -C {quote(str(target))}",
            timeout=120,
        )
        if result.exit_code != 0:
            raise WorkflowFailure(
                f"Could not put the perf tools into the container of {self.label}."
            )

    async def put(self, host: Path) -> str:
        """A file of the output directory (the harness, captured calls) made available
        inside; its path there."""
        if self.local:
            return str(host)
        relative = f"{IN_WORKSPACE}/{host.name}"
        await self.session.write(relative, host.read_bytes(), actor=Actor.SYSTEM)
        return self.path_for(host)

    async def fetch(self, host: Path) -> None:
        """Copy a result written inside the environment to the output directory."""
        if self.local:
            return
        host.write_bytes(await self.session.read_bytes(f"{IN_WORKSPACE}/{host.name}"))

    async def discard(self, host: Path) -> None:
        """Remove a result file of the output directory, and its copy inside the environment
        (pyperf appends to it: a file left in a container would bring back the runs set aside)."""
        host.unlink(missing_ok=True)
        if not self.local:
            await self.run(f"rm -f {quote(self.path_for(host))}", timeout=60)

    @classmethod
    async def open(
        cls,
        label: str,
        repo: Path,
        rev: str,
        *,
        tools: Path,
        trajectory_path: Path,
        backend: str = "local",
        backend_options: dict[str, Any] | None = None,
        python: str | None = None,
        subscriber: Subscriber | None = None,
        commit: str = "",
    ) -> PerfEnvironment:
        """A session on `repo`, which is the revision's own tree (envcache.revision_tree): on
        the local backend in place (the tree is a private clone, and a venv set up there keeps
        pointing at it), in a container as a copy."""
        local = backend == "local"
        session = await open_session(
            repo,
            backend=backend,
            backend_options=backend_options,
            in_place=local,
            trajectory_path=trajectory_path,
            checkpoint_start=False,
            subscribers=[subscriber] if subscriber is not None else [],
        )
        interpreter = python or (sys.executable if local else "python3")
        return cls(label, rev, session, tools, interpreter, local=local, commit=commit, tree=repo)

    @property
    def root(self) -> str:
        return self.session.workspace_path

    async def run(self, command: str, *, timeout: float | None = None) -> ExecResult:
        return await self.session.exec(command, actor=Actor.SYSTEM, timeout=timeout)

    async def checkout(self) -> str:
        """Check out the revision (detached, forced: the workspace is our clone or a copy of it).

        In a container untracked files go too; the local tree keeps them (an editable install's
        metadata, built extensions), since the venv cached for this revision relies on them."""
        target = self.commit or self.rev
        clean = "" if self.local else " && git clean -fdq"
        result = await self.run(
            "git -c advice.detachedHead=false checkout -q --force --detach "
            f"{quote(target)} -- 2>&1{clean} && git rev-parse HEAD",
            timeout=300,
        )
        text = result.output.decode("utf-8", "replace").strip()
        if result.exit_code != 0:
            last = text.splitlines()[-1] if text else "git failed"
            raise WorkflowFailure(f"Cannot check out {self.rev!r} for side {self.label}: {last}")
        self.commit = text.splitlines()[-1]
        return self.commit

    async def visible_cpus(self) -> str:
        """The CPUs a process in this environment may run on (a container's cpuset)."""
        result = await self.run(
            f"{quote(self.python)} -c 'import os; print(sorted(os.sched_getaffinity(0)))'",
            timeout=60,
        )
        text = result.output.decode("utf-8", "replace").strip()
        return text.splitlines()[-1] if result.exit_code == 0 and text else "unknown"

    def _worker(self, *, site: bool = True) -> str:
        """The worker under this side's interpreter; `site=False` (`-S`) for a command's
        worker, which needs only pyperf (beside it) and the standard library: skipping the
        environment's site-packages (.pth files, psutil, pyperf's scan of every installed
        distribution's entry points) is a third of the worker's start-up, paid per worker."""
        flag = "" if site else " -S"
        return f"{quote(self.python)}{flag} {quote(str(self.tools / 'bench_worker.py'))}"

    async def quickcheck(self, harness: str, *, repeat: int = 1) -> QuickcheckReport:
        result = await self.run(
            f"{self._worker()} --root {quote(self.root)} --harness {quote(harness)} "
            f"--quickcheck --repeat {repeat}",
            timeout=600,
        )
        text = result.output.decode("utf-8", "replace")
        for line in text.splitlines():
            if line.startswith(QUICKCHECK_MARK):
                data = json.loads(line[len(QUICKCHECK_MARK) :])
                return QuickcheckReport(
                    ok=bool(data.get("ok")),
                    error=data.get("error"),
                    traceback=data.get("traceback"),
                    call_seconds=data.get("call_seconds"),
                    output=text,
                    timed=data.get("timed"),
                )
        error = "the harness did not finish" if result.timed_out else "no quickcheck report"
        return QuickcheckReport(False, error, text[-4000:], None, text)

    def command_dir(self, cwd: str | None) -> str:
        """Where a command runs: the checkout's root by default; a relative --cwd is inside it."""
        if not cwd:
            return self.root
        return str(PurePosixPath(self.root) / cwd)

    async def command_check(self, command: str, cwd: str | None, timeout: float) -> CommandCheck:
        """Run the command once, as the timing will (same directory, same interpreter first on
        PATH when it is a venv's), and keep its output."""
        where = self.command_dir(cwd)
        t0 = time.monotonic()
        result = await self.run(
            f"cd {quote(where)} && {self._path_prefix()}bash -c {quote(command)} 2>&1",
            timeout=timeout,
        )
        seconds = time.monotonic() - t0
        text = result.output.decode("utf-8", "replace")
        return CommandCheck(
            result.exit_code == 0 and not result.timed_out,
            result.exit_code if result.exit_code is not None else -1,
            result.timed_out,
            text,
            seconds,
            where,
        )

    async def time_command(
        self, command: str, cwd: str | None, *, timeout: float | None, affinity: str | None = None
    ) -> tuple[float, float]:
        """One run of the command, timed as a by-hand run is: a `bash -c` of it in the clean
        environment a worker has, its elapsed time and its process tree's CPU time (user +
        system, from bash's `time`, to the millisecond). No Python starts per run, so the
        two sides' runs can alternate one by one (A B B A) at the cost of the command alone."""
        mark = f"REPOSIM-TIME-{secrets.token_hex(6)}"
        line = (
            f"cd {quote(self.command_dir(cwd))} && {self._clean_environment()}bash -c "
            f"{quote(TIME_SCRIPT)} reposim-time {quote(command)} {mark} {quote(affinity or '')}"
        )
        result = await self.run(line, timeout=timeout)
        text = result.output.decode("utf-8", "replace")
        found = [row.split() for row in text.splitlines() if row.startswith(mark + " ")]
        if result.exit_code != 0 or not found or found[-1][1] != "0" or len(found[-1]) != 5:
            shown = "\n".join(
                row for row in text.strip().splitlines()[-20:] if not row.startswith(mark)
            )
            status = found[-1][1] if found else "unknown"
            what = "did not finish" if result.timed_out else f"exited with status {status}"
            raise WorkflowFailure(
                f"The command {what} while timed at {self.label} ({self.rev}); its last "
                f"output:\n{shown or '(no output)'}"
            )
        _mark, _status, real, user, system = found[-1]
        # bash prints milliseconds: a command that only waits has no measurable CPU time, and
        # pyperf's values must be above 0, so half a millisecond stands for "under 1 ms"
        return float(real), max(float(user) + float(system), 0.0005)

    def _path_prefix(self) -> str:
        """`PATH=venv/bin:$PATH ` when the interpreter is a venv's, so `python` and the
        project's console scripts in a command are that environment's."""
        venv = self._venv_bin()
        return f"PATH={quote(venv)}:$PATH " if venv else ""

    def _venv_bin(self) -> str | None:
        """The interpreter's bin directory when it is a venv's (not RepoSim's own default)."""
        folder = PurePosixPath(self.python).parent
        if folder.name != "bin" or "/" not in self.python:
            return None
        if self.local and self.python == sys.executable:
            return None  # RepoSim's own interpreter (the default): commands keep the user's PATH
        return str(folder)

    def _clean_environment(self) -> str:
        """`env -i` keeping only what pyperf's own workers keep (PATH, HOME, PYTHONPATH...):
        the variables of the shell (PWD, whose length differs between the two trees, among
        them) do not reach the timed process, as with pyperf's worker spawner."""
        venv = self._venv_bin()
        path = f'PATH={quote(venv)}:"$PATH"' if venv else '${PATH+PATH="$PATH"}'
        kept = " ".join(f'${{{name}+{name}="${name}"}}' for name in WORKER_ENVIRONMENT)
        return f"env -i {path} {kept} "

    async def pyperf(
        self,
        output: Path,
        *,
        name: str,
        harness: str | None,
        command: str | None,
        options: list[str],
        timeout: float | None,
        cwd: str | None = None,
    ) -> ExecResult:
        """One pyperf worker process (`--worker`), run directly: its run is appended to
        `output`. pyperf's own spawner would start a second Python (and import pyperf again)
        only to start this one; per round that doubled the start-up cost."""
        target = (
            f"--harness {quote(harness)}"
            if harness is not None
            else f"--command {quote(command or '')} --cwd {quote(self.command_dir(cwd))}"
        )
        line = (
            f"{self._clean_environment()}{self._worker(site=harness is not None)} --worker "
            f"--root {quote(self.root)} "
            f"{target} --name {quote(name)} --append {quote(self.path_for(output))} --quiet "
            + " ".join(quote(option) for option in options)
        )
        result = await self.run(line, timeout=timeout)
        if result.exit_code != 0:
            text = result.output.decode("utf-8", "replace").strip()
            tail = "\n".join(text.splitlines()[-20:]) if text else "no output"
            raise WorkflowFailure(
                f"pyperf failed at {self.label} ({self.rev}); its last output:\n{tail}"
            )
        return result

    async def trace(
        self, api: str, output: Path, *, lines: Path | None = None, timeout: float = 900
    ) -> dict[str, Any]:
        """Run the repository's tests with the tracer; which tests call `api`, and how often
        (and, given `lines`, how many of those changed lines each executes)."""
        output.unlink(missing_ok=True)
        changed = ""
        if lines is not None:
            changed = f"REPOSIM_PERF_LINES={quote(await self.put(lines))} "
        await self.run(
            f"{changed}PYTHONPATH={quote(str(self.tools))}${{PYTHONPATH:+:$PYTHONPATH}} "
            f"REPOSIM_PERF_API={quote(api)} REPOSIM_PERF_TRACE_OUT={quote(self.path_for(output))} "
            f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {quote(self.python)} -m pytest -q -p "
            f"{TRACE_PLUGIN} -p no:cacheprovider --rootdir {quote(self.root)}",
            timeout=timeout,
        )
        with contextlib.suppress(SessionError, BackendError):
            await self.fetch(output)
        if not output.exists():
            raise WorkflowFailure(
                f"The tests did not run at {self.label} ({self.rev}); is pytest installed for "
                f"{self.python}?"
            )
        data: dict[str, Any] = json.loads(output.read_text())
        return data

    async def close(self, reason: str = "closed") -> None:
        await self.session.close(reason)
