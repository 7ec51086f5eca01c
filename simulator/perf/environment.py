"""One side of a comparison: a recorded Session whose workspace is checked out at a revision.

Each environment is its own Session (its own scratch workspace and trajectory), so everything
that ran at revision A is in A's trajectory and likewise for B. The programs that run inside
(the pyperf driver and the test tracer) come from a tools directory that holds copies of
`bench_worker.py`, `trace_plugin.py` and pyperf itself: pyperf is pure Python, so whatever
interpreter runs the harness can import it from there without installing anything.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyperf

from backends.base import ExecResult
from backends.shell import quote
from simulator.backend_factory import make_backend
from simulator.events import Actor
from simulator.session import Session, Subscriber
from simulator.workflow import WorkflowFailure

QUICKCHECK_MARK = "REPOSIM-QUICKCHECK "
TRACE_PLUGIN = "reposim_perf_trace"


def install_tools(dest: Path) -> Path:
    """Copy the in-environment programs and pyperf into `dest`; returns it."""
    dest.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).parent
    shutil.copy2(here / "bench_worker.py", dest / "bench_worker.py")
    shutil.copy2(here / "trace_plugin.py", dest / f"{TRACE_PLUGIN}.py")
    package = Path(pyperf.__file__).parent
    target = dest / "pyperf"
    if not target.exists():
        shutil.copytree(package, target, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    return dest


@dataclass(frozen=True)
class QuickcheckReport:
    ok: bool
    error: str | None
    traceback: str | None
    call_seconds: float | None
    output: str

    def detail(self) -> dict[str, Any]:
        return {"ok": self.ok, "error": self.error, "call_seconds": self.call_seconds}


class PerfEnvironment:
    """A Session at one revision, with the commands a comparison runs in it."""

    def __init__(self, label: str, rev: str, session: Session, tools: Path, python: str) -> None:
        self.label = label
        self.rev = rev
        self.session = session
        self.tools = tools
        self.python = python
        self.commit = ""

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
        python: str | None = None,
        subscriber: Subscriber | None = None,
    ) -> PerfEnvironment:
        if backend != "local":
            raise WorkflowFailure(
                "perf compare runs on the local backend only for now (the Docker backend has "
                "no way yet to give its container the perf tools and pin it to its own CPUs)."
            )
        session = await Session.open(
            repo,
            backend=make_backend(backend, repo),
            trajectory_path=trajectory_path,
            checkpoint_start=False,
        )
        if subscriber is not None:
            session.subscribe(subscriber)
        return cls(label, rev, session, tools, python or sys.executable)

    @property
    def root(self) -> str:
        return self.session.backend.workspace_path

    async def run(self, command: str, *, timeout: float | None = None) -> ExecResult:
        return await self.session.exec(command, actor=Actor.SYSTEM, timeout=timeout)

    async def checkout(self) -> str:
        """Check out the revision (detached, forced: the workspace is a scratch copy)."""
        result = await self.run(
            "git -c advice.detachedHead=false checkout -q --force --detach "
            f"{quote(self.rev)} -- 2>&1 && git clean -fdq && git rev-parse HEAD",
            timeout=300,
        )
        text = result.output.decode("utf-8", "replace").strip()
        if result.exit_code != 0:
            last = text.splitlines()[-1] if text else "git failed"
            raise WorkflowFailure(f"Cannot check out {self.rev!r} for side {self.label}: {last}")
        self.commit = text.splitlines()[-1]
        return self.commit

    def _worker(self) -> str:
        return f"{quote(self.python)} {quote(str(self.tools / 'bench_worker.py'))}"

    async def quickcheck(self, harness: Path, *, repeat: int = 1) -> QuickcheckReport:
        result = await self.run(
            f"{self._worker()} --root {quote(self.root)} --harness {quote(str(harness))} "
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
                )
        error = "the harness did not finish" if result.timed_out else "no quickcheck report"
        return QuickcheckReport(False, error, text[-4000:], None, text)

    async def pyperf(
        self,
        output: Path,
        *,
        name: str,
        harness: Path | None,
        command: str | None,
        options: list[str],
        timeout: float | None,
    ) -> ExecResult:
        """One pyperf invocation; its runs are appended to `output`."""
        target = (
            f"--harness {quote(str(harness))}"
            if harness is not None
            else f"--command {quote(command or '')}"
        )
        line = (
            f"{self._worker()} --root {quote(self.root)} {target} --name {quote(name)} "
            f"--python {quote(self.python)} --append {quote(str(output))} --quiet "
            + " ".join(quote(option) for option in options)
        )
        result = await self.run(line, timeout=timeout)
        if result.exit_code != 0:
            text = result.output.decode("utf-8", "replace").strip()
            tail = text.splitlines()[-1] if text else "no output"
            raise WorkflowFailure(f"pyperf failed at {self.label} ({self.rev}): {tail}")
        return result

    async def trace(self, api: str, output: Path, *, timeout: float = 900) -> dict[str, Any]:
        """Run the repository's tests with the tracer; which tests call `api`, and how often."""
        output.unlink(missing_ok=True)
        await self.run(
            f"PYTHONPATH={quote(str(self.tools))}${{PYTHONPATH:+:$PYTHONPATH}} "
            f"REPOSIM_PERF_API={quote(api)} REPOSIM_PERF_TRACE_OUT={quote(str(output))} "
            f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {quote(self.python)} -m pytest -q -p "
            f"{TRACE_PLUGIN} -p no:cacheprovider --rootdir {quote(self.root)}",
            timeout=timeout,
        )
        if not output.exists():
            raise WorkflowFailure(
                f"The tests did not run at {self.label} ({self.rev}); is pytest installed for "
                f"{self.python}?"
            )
        data: dict[str, Any] = json.loads(output.read_text())
        return data

    async def close(self, reason: str = "closed") -> None:
        await self.session.close(reason)
