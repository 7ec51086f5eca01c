"""The traced generator: harnesses from the repository's own tests, with no model.

The repository's test suite runs once with runtime/reposim_tracer.py loaded as a pytest plugin
watching every target; each target's recorded calls (arguments on entry, return value or raised
exception, arguments afterwards) become a harness that replays them against `candidate`. Calls
that the harness cannot reproduce on the reference (nondeterminism, hidden state, values that
do not survive a pickle) are found by running it there and dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from backends.shell import quote
from simulator.events import Actor
from simulator.harness.env import PythonEnv, ensure_module, import_root
from simulator.harness.format import (
    REPOSIM_DIR,
    RUNTIME_DIR,
    TracedCall,
    case_of,
)
from simulator.harness.target import Target
from simulator.session import Session

TRACE_SPEC = f"{RUNTIME_DIR}/trace-spec.json"
TRACE_OUT = f"{RUNTIME_DIR}/trace-out.json"
# RepoSim's own files in the workspace are never the project's tests, whatever its pytest
# configuration collects (boolean.py's `python_files = *.py` with `norecursedirs` lacking `.*`
# collected both copies of reposim_harness_support.py: 2 collection errors per traced run)
NOT_THE_PROJECTS = f"--ignore={REPOSIM_DIR}"


@dataclass
class Trace:
    """What the test suite did with one target."""

    module: str  # the module the tests imported it from ("" if never called)
    calls: list[TracedCall] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # calls not kept, by reason
    paths: list[str] = field(default_factory=list)  # workspace dirs the test run imported from
    kind: str = "function"  # function | generator | coroutine (not traced)
    tests: list[str] = field(default_factory=list)  # the tests that called it
    candidates: int = 0  # distinct calls recorded before the choice by coverage

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


@dataclass
class SuiteRun:
    """How the traced test run went, beside the traces."""

    exit_code: int | None
    failed: list[str] = field(default_factory=list)  # failed under the tracer and without it
    tracer_only: list[str] = field(default_factory=list)  # failed only under the tracer
    collection_errors: int = 0


class TraceError(Exception):
    """The traced test run produced nothing to read; the message is one clear sentence."""


async def trace(
    session: Session,
    env: PythonEnv,
    targets: list[Target],
    *,
    test_args: str = "",
    max_calls: int = 40,
    timeout: float = 1800.0,
) -> tuple[dict[str, Trace], SuiteRun]:
    """Run the test suite once with the tracer on every target: (traces by target id, how the
    run went). Collection errors do not stop the run (`--continue-on-collection-errors`, as
    setup's oracle runs it); the tests that fail under the tracer are run again without it,
    and those that then pass are named as failing only under the tracer."""
    await ensure_module(session, env, "cloudpickle")
    spec = {
        "root": session.workspace_path,
        "max_calls": max_calls,
        "targets": [{"id": t.id, "path": t.path, "qualname": t.qualname} for t in targets],
    }
    await session.write(TRACE_SPEC, json.dumps(spec, indent=1), actor=Actor.SYSTEM)
    await session.exec(f"rm -f {TRACE_OUT}", actor=Actor.SYSTEM)
    command = (
        f"REPOSIM_TRACE_SPEC={TRACE_SPEC} REPOSIM_TRACE_OUT={TRACE_OUT} "
        f"{env.prefix(RUNTIME_DIR, plugins=True)} -m pytest -p reposim_tracer "
        f"-p no:cacheprovider -p no:cov --continue-on-collection-errors {NOT_THE_PROJECTS} "
        f"-q {test_args}"
    )
    result = await session.exec(command, actor=Actor.SYSTEM, timeout=timeout)
    if not await session.exists(TRACE_OUT):
        tail = result.output.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise TraceError(
            "The traced test run wrote no record (exit code "
            f"{result.exit_code}): {' / '.join(tail) or 'no output'}"
        )
    raw: dict[str, Any] = json.loads(await session.read_bytes(TRACE_OUT))
    await session.exec(f"rm -f {quote(TRACE_OUT)}", actor=Actor.SYSTEM)
    traces = {}
    for target in targets:
        calls = [TracedCall.from_dict(c) for c in raw["calls"].get(target.id, [])]
        # the replayed calls first, then those checked in situ: the order the harness lists them
        calls.sort(key=lambda c: c.in_situ is not None)
        traces[target.id] = Trace(
            module=str(raw["modules"].get(target.id) or ""),
            calls=calls,
            dropped={str(k): int(v) for k, v in (raw["dropped"].get(target.id) or {}).items()},
            paths=[str(p) for p in raw.get("paths") or [] if p != "."],
            kind=str((raw.get("kinds") or {}).get(target.id) or "function"),
            tests=[str(t) for t in (raw.get("tests") or {}).get(target.id) or []],
            candidates=int((raw.get("candidates") or {}).get(target.id) or 0),
        )
    output = result.output.decode("utf-8", "replace")
    suite = SuiteRun(result.exit_code, collection_errors=_collection_errors(output))
    failed = [str(t) for t in raw.get("failed") or []]
    if failed:
        suite.failed, suite.tracer_only = await _without_tracer(session, env, failed, test_args)
    return traces, suite


def _collection_errors(output: str) -> int:
    """The `N errors` of pytest's summary line that were collection errors."""
    return sum(1 for line in output.splitlines() if line.startswith("ERROR ") and "::" not in line)


async def _without_tracer(
    session: Session, env: PythonEnv, failed: list[str], test_args: str, limit: int = 50
) -> tuple[list[str], list[str]]:
    """(still failing, failing only under the tracer) of the tests that failed traced."""
    chosen = failed[:limit]
    command = (
        f"{env.prefix(plugins=True)} -m pytest -p no:cacheprovider -p no:cov "
        f"--continue-on-collection-errors {NOT_THE_PROJECTS} -q {test_args}"
    )
    selector = " ".join(quote(t) for t in chosen)
    result = await session.run_tests(selector, command=command, actor=Actor.SYSTEM)
    passed = {t.id for t in result.tests if t.outcome == "passed"}
    passed |= {
        t for t in chosen if any(r.id.endswith(t) and r.outcome == "passed" for r in result.tests)
    }
    tracer_only = [t for t in chosen if t in passed]
    return [t for t in failed if t not in tracer_only], tracer_only


def module_env(env: PythonEnv, target: Target, module: str) -> PythonEnv:
    """The env with the directory the target's module is imported from on the path."""
    root = import_root(target.path, module)
    if root is None or root == "." or root in env.import_roots:
        return env
    return PythonEnv(env.python, (*env.import_roots, root))


def surviving_cases(calls: list[TracedCall], failing: list[str], flaky: list[str]) -> list[int]:
    """The indexes of `calls` (replayed ones first, as the harness lists them) whose cases
    neither failed nor flaked on the reference."""
    replayed = sum(c.in_situ is None for c in calls)
    bad = set()
    for test in [*failing, *flaky]:
        case = case_of(test)
        if case is not None:
            bad.add(case[1] if case[0] == "c" else replayed + case[1])
    return [i for i in range(len(calls)) if i not in bad]
