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
from simulator.harness.env import PythonEnv, import_root
from simulator.harness.format import RUNTIME_DIR, TracedCall, case_of, render_traced
from simulator.harness.target import Target
from simulator.session import Session

TRACE_SPEC = f"{RUNTIME_DIR}/trace-spec.json"
TRACE_OUT = f"{RUNTIME_DIR}/trace-out.json"


@dataclass
class Trace:
    """What the test suite did with one target."""

    module: str  # the module the tests imported it from ("" if never called)
    calls: list[TracedCall] = field(default_factory=list)
    dropped: int = 0  # calls with a value that could not be kept
    paths: list[str] = field(default_factory=list)  # workspace dirs the test run imported from


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
) -> tuple[dict[str, Trace], int | None]:
    """Run the test suite once with the tracer on every target: (traces by target id, the
    suite's exit code)."""
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
        f"-p no:cacheprovider -p no:cov -q {test_args}"
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
        traces[target.id] = Trace(
            module=str(raw["modules"].get(target.id) or ""),
            calls=calls,
            dropped=int(raw["dropped"].get(target.id, 0)),
            paths=[str(p) for p in raw.get("paths") or [] if p != "."],
        )
    return traces, result.exit_code


def module_env(env: PythonEnv, target: Target, module: str) -> PythonEnv:
    """The env with the directory the target's module is imported from on the path."""
    root = import_root(target.path, module)
    if root is None or root == "." or root in env.import_roots:
        return env
    return PythonEnv(env.python, (*env.import_roots, root))


def harness_text(target: Target, trace: Trace, keep: list[int] | None = None) -> str:
    calls = trace.calls if keep is None else [trace.calls[i] for i in keep]
    return render_traced(target, trace.module, calls, trace.paths)


def surviving_cases(total: int, failing: list[str], flaky: list[str]) -> list[int]:
    """The CASES indexes that neither failed nor flaked on the reference."""
    bad = {case_of(test) for test in [*failing, *flaky]}
    return [i for i in range(total) if i not in bad]
