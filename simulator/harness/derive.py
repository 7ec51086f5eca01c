"""Derived cases: coverage beyond what the repository's tests reach, with no model.

The reference implementation is the oracle. runtime/reposim_derive.py changes the recorded
arguments of a traced harness by type (EvalPlus's type-aware mutation: nearby ints, flipped
bools, shortened and extended strings and containers, other recorded values of a compatible
type), runs each candidate on the reference with its arcs traced, and keeps one only when it
runs arcs no recorded call ran, does exactly the same on a second run, raised (if it did) only
by a `raise` of the target itself, and has values a person can read. Each kept call becomes a
case whose expected values are the reference's, marked as derived in the harness.
"""

from __future__ import annotations

import json
from dataclasses import replace

from backends.shell import quote
from simulator.events import Actor
from simulator.harness.env import PythonEnv
from simulator.harness.format import HARNESS_DIR, RUNTIME_DIR, TracedCall
from simulator.harness.target import Target
from simulator.session import Session


async def derive_calls(
    session: Session,
    env: PythonEnv,
    target: Target,
    path: str,
    replayed: list[TracedCall],
    *,
    runs: int,
    seconds: float = 5.0,
    keep: int = 10,
    timeout: float = 300.0,
) -> tuple[list[TracedCall], dict[str, int]]:
    """(the derived calls, counts of what was tried) for the harness at `path`, whose `CASES`
    are `replayed` in order. Nothing when the run fails (the harness stands as it is)."""
    spec_path = f"{RUNTIME_DIR}/derive-{target.slug}.json"
    out_path = f"{RUNTIME_DIR}/derive-{target.slug}.out.json"
    spec = {"harness": path, "runs": runs, "seconds": seconds, "keep": keep}
    await session.write(spec_path, json.dumps(spec), actor=Actor.SYSTEM)
    result = await session.exec(
        f"{env.prefix(HARNESS_DIR)} {RUNTIME_DIR}/reposim_derive.py "
        f"{quote(spec_path)} {quote(out_path)}",
        actor=Actor.SYSTEM,
        timeout=timeout,
    )
    try:
        if result.exit_code != 0 or not await session.exists(out_path):
            return [], {}
        report = json.loads(await session.read_bytes(out_path))
    finally:
        await session.exec(f"rm -f {quote(spec_path)} {quote(out_path)}", actor=Actor.SYSTEM)
    derived = []
    for data in report.get("calls") or []:
        source = replayed[int(data["source"])]
        call = TracedCall.from_dict(data)
        derived.append(
            replace(call, test=source.test, classes=source.classes, derived=str(data["derived"]))
        )
    counts = {k: int(report.get(k) or 0) for k in ("tried", "nondeterministic", "unkept")}
    return derived, counts
