"""Validation of a harness on the reference, in the session's backend.

1. Run it `repeats` times on the reference (the first run under coverage.py): a test that fails
   every time is broken on the reference, one that fails sometimes is flaky.
2. Branch coverage of the target only (see branches.py), from that run's arcs.
3. Mutation score: the share of small mutants of the target the harness kills (mutate.py;
   run in one process by runtime/reposim_mutants.py).

4. Suite parity: the repository's own tests that call the target (from the trace) run against
   the same mutants; of the mutants they kill, the share the harness kills too. Mutants that
   neither kills are listed as possibly equivalent.

The verdict is `valid` when every test passes in every run (the comparator's self-check
included), coverage >= min_cov, at least min_mutants mutants ran (or every mutant the operators
can make of a small function), the mutation score >= min_mutation and the suite parity >=
min_parity (when the suite kills any mutant); otherwise `invalid`, with the reasons.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.shell import quote
from simulator.dataset.schema import Validation
from simulator.events import Actor
from simulator.harness.branches import BranchCoverage, executed_arcs, function_branches
from simulator.harness.env import NATIVE_TRACEBACKS, PythonEnv, ensure_coverage
from simulator.harness.format import HARNESS_DIR, RUNTIME_DIR, SELF_CHECK
from simulator.harness.mutate import Mutant, MutationError, mutants, reach_lines
from simulator.harness.target import Target
from simulator.session import Session
from simulator.testrun import TestRunResult


@dataclass(frozen=True)
class Thresholds:
    min_cov: float = 0.8
    min_mutation: float = 0.6
    repeats: int = 3
    max_mutants: int | None = 40
    mutant_timeout: float = 10.0
    test_timeout: float = 300.0
    min_mutants: int = 10  # or every mutant the operators can make, when there are fewer
    min_parity: float = 0.75  # of the mutants the repository's tests kill, the harness's share
    max_suite_tests: int = 20  # of the tests that call the target, run against its mutants

    def settings(self) -> dict[str, Any]:
        """The thresholds a person sets (`reposim harness --min-cov` ... `--min-parity`)."""
        return {
            "min_cov": self.min_cov,
            "min_mutation": self.min_mutation,
            "repeats": self.repeats,
            "max_mutants": self.max_mutants,
            "min_mutants": self.min_mutants,
            "min_parity": self.min_parity,
        }


async def run_repeatedly(
    session: Session,
    env: PythonEnv,
    target: Target,
    harness_path: str,
    repeats: int,
    timeout: float,
) -> tuple[dict[str, list[str]], BranchCoverage | None, list[TestRunResult]]:
    """Outcomes per test id over `repeats` runs, and the target's branch coverage from the
    first run (None when coverage.py could not run)."""
    data_file = f"{RUNTIME_DIR}/coverage-{target.slug}"
    outcomes: dict[str, list[str]] = defaultdict(list)
    results: list[TestRunResult] = []
    coverage: BranchCoverage | None = None
    measure = await ensure_coverage(session, env)
    for number in range(max(1, repeats)):
        if number == 0 and measure:
            command = (
                f"{env.prefix(HARNESS_DIR)} -m coverage run --branch "
                f"--rcfile={RUNTIME_DIR}/empty.coveragerc --data-file={quote(data_file)} "
                f"--include={quote(target.path)} -m pytest -p no:cacheprovider -p no:cov "
                f"-o addopts= -q {NATIVE_TRACEBACKS}"
            )
        else:
            command = f"{env.pytest(HARNESS_DIR)} {NATIVE_TRACEBACKS}"
        result = await session.run_tests(
            harness_path, command=command, actor=Actor.SYSTEM, timeout=timeout
        )
        results.append(result)
        for test in result.tests:
            outcomes[test.id].append(test.outcome)
        if not result.tests:
            outcomes["<collection>"].append("passed" if result.passed else "error")
        if number == 0 and await session.exists(data_file):
            coverage = await _coverage(session, target, data_file)
    return outcomes, coverage, results


async def _coverage(session: Session, target: Target, data_file: str) -> BranchCoverage:
    data = await session.read_bytes(data_file)
    source = (await session.read_bytes(target.path)).decode("utf-8")
    with tempfile.TemporaryDirectory(prefix="reposim-cov-") as scratch:
        local = Path(scratch) / "coverage"
        local.write_bytes(data)
        arcs = executed_arcs(local, target.path)
    await session.exec(f"rm -f {quote(data_file)}", actor=Actor.SYSTEM)
    return function_branches(source, target.def_line, target.end_line, arcs)


async def _run_mutants(
    session: Session,
    env: PythonEnv,
    spec: dict[str, Any],
    slug: str,
    count: int,
    timeout: float,
    *,
    plugins: bool = False,
) -> tuple[dict[str, Any] | None, str]:
    """The mutant runner's report, or (None, why it failed)."""
    kind = "suite" if spec.get("tests") else "harness"
    spec_path = f"{RUNTIME_DIR}/mutants-{slug}-{kind}.json"
    out_path = f"{RUNTIME_DIR}/mutants-{slug}-{kind}.out.json"
    # Written through the backend unrecorded: it holds one copy of the file per mutant.
    await session.write_helper(spec_path, json.dumps(spec).encode())
    budget = (
        timeout * (count + 3)
        + 60
        + float(spec.get("run_timeout") or 0) * int(spec.get("repeats") or 0)
    )
    extra = (RUNTIME_DIR,) if plugins else (HARNESS_DIR,)
    result = await session.exec(
        f"{env.prefix(*extra, plugins=plugins)} {RUNTIME_DIR}/reposim_mutants.py "
        f"{quote(spec_path)} {quote(out_path)}",
        actor=Actor.SYSTEM,
        timeout=budget,
    )
    if result.exit_code != 0 or not await session.exists(out_path):
        tail = result.output.decode("utf-8", "replace").strip().splitlines()[-1:]
        return None, "the mutant runner failed" + (f": {tail[0]}" if tail else "")
    report = json.loads(await session.read_bytes(out_path))
    await session.exec(f"rm -f {quote(spec_path)} {quote(out_path)}", actor=Actor.SYSTEM)
    return report, ""


async def _mutants_of(
    session: Session, target: Target, thresholds: Thresholds
) -> tuple[list[Mutant], list[Mutant], str, str]:
    """(every mutant the operators make of the target, those that run, why none can be made,
    the target's file)."""
    source = (await session.read_bytes(target.path)).decode("utf-8")
    try:
        everything = mutants(source, target.def_line, target.name, limit=None, path=target.path)
    except MutationError as exc:
        return [], [], str(exc), source
    return everything, _spread(everything, thresholds.max_mutants), "", source


def _mutant_spec(
    target: Target,
    module: str,
    harness_path: str,
    thresholds: Thresholds,
    found: list[Mutant],
    source: str = "",
) -> dict[str, Any]:
    """The mutant runner's spec; each mutant with the lines of the statement it changes (the
    runner runs a mutant only against the tests that reach them)."""
    return {
        "harness": harness_path,
        "module": module,
        "qualname": target.qualname,
        "filename": target.path,
        "timeout": thresholds.mutant_timeout,
        "mutants": [
            {"id": m.id, "source": m.source, "lines": reach_lines(source, m.line) if source else []}
            for m in found
        ],
    }


async def mutation_score(
    session: Session,
    env: PythonEnv,
    target: Target,
    module: str,
    harness_path: str,
    thresholds: Thresholds,
    suite_tests: list[str] | None = None,
) -> dict[str, Any]:
    """{"total", "killed", "score", "survivors": [...], "timeouts", "possible", "suite"} for
    the harness; each survivor keeps its id, operator, line, description and diff (a few
    lines), not the file. "possible" is how many mutants the operators make of the target
    (before --max-mutants); "suite" is what the repository's tests that call the target do
    with the same mutants: {"tests", "killed", "parity", "missed": mutants they kill and the
    harness does not}, and "equivalent" lists the mutants nothing kills."""
    everything, found, error, source = await _mutants_of(session, target, thresholds)
    if error:
        return {"total": 0, "killed": 0, "score": None, "survivors": [], "error": error}
    if not found:
        return _no_mutants(everything)
    spec = _mutant_spec(target, module, harness_path, thresholds, found, source)
    report, error = await _run_mutants(
        session, env, spec, target.slug, len(found), thresholds.mutant_timeout
    )
    return await _mutation_figures(
        session, env, target, spec, report, error, found, everything, thresholds, suite_tests
    )


def _no_mutants(everything: list[Mutant]) -> dict[str, Any]:
    return {"total": 0, "killed": 0, "score": None, "survivors": [], "possible": len(everything)}


async def _mutation_figures(
    session: Session,
    env: PythonEnv,
    target: Target,
    spec: dict[str, Any],
    report: dict[str, Any] | None,
    error: str,
    found: list[Mutant],
    everything: list[Mutant],
    thresholds: Thresholds,
    suite_tests: list[str] | None,
) -> dict[str, Any]:
    """The mutation figures from the mutant runner's report (and the suite's run against the
    same mutants, made here)."""
    base: dict[str, Any] = {"total": len(found), "killed": 0, "score": None, "survivors": []}
    if report is None:
        return {**base, "possible": len(everything), "error": error}
    baseline = report.get("baseline") or {}
    if not baseline.get("passed"):
        return {
            **base,
            "possible": len(everything),
            "error": "the harness does not pass on the unmutated target in the mutant runner"
            + (f" ({baseline['how']})" if baseline.get("how") not in (None, "failed") else ""),
        }
    by_id = {m.id: m for m in found}
    outcomes = [r for r in report["mutants"] if r["status"] in ("killed", "survived")]
    killed = sum(r["status"] == "killed" for r in outcomes)
    survivors = [by_id[r["id"]].summary() for r in outcomes if r["status"] == "survived"]
    figures: dict[str, Any] = {
        "total": len(outcomes),
        "killed": killed,
        "score": round(killed / len(outcomes), 4) if outcomes else None,
        "survivors": survivors,
        "timeouts": sum(r.get("how") == "timeout" for r in outcomes),
        "possible": len(everything),
    }
    harness_killed = {r["id"] for r in outcomes if r["status"] == "killed"}
    ran = {r["id"] for r in outcomes}
    if suite_tests and ran and harness_killed >= ran:
        # the harness kills every mutant: whatever the tests kill, it kills too (parity 1.0,
        # or vacuous when they kill none); their run is saved
        figures["suite"] = {"parity": 1.0, "skipped": "the harness kills every mutant"}
    elif suite_tests:
        tests = suite_tests[: thresholds.max_suite_tests]
        suite_spec = {
            k: v for k, v in spec.items() if k not in ("repeats", "coverage", "run_timeout")
        }
        suite_spec.update(harness="", tests=tests)
        suite, why = await _run_mutants(
            session,
            env,
            suite_spec,
            target.slug,
            len(found),
            thresholds.mutant_timeout,
            plugins=True,
        )
        figures["suite"] = _suite_figures(suite, why, harness_killed, ran, by_id)
    suite_figures = figures.get("suite") or {}
    if suite_figures.get("killed_ids") is not None:
        nothing = ran - harness_killed - set(suite_figures["killed_ids"])
        figures["equivalent"] = [by_id[i].description for i in sorted(nothing)]
    return figures


def _spread(found: list[Mutant], limit: int | None) -> list[Mutant]:
    """At most `limit` mutants spread evenly over the function (ids kept)."""
    if limit is None or len(found) <= limit:
        return found
    if limit <= 0:
        return []
    step = len(found) / limit
    return [found[int(i * step)] for i in range(limit)]


def _suite_figures(
    report: dict[str, Any] | None,
    why: str,
    harness_killed: set[str],
    ran: set[str],
    by_id: dict[str, Mutant],
) -> dict[str, Any]:
    if report is None:
        return {"parity": None, "error": why}
    baseline = report.get("baseline") or {}
    if not baseline.get("passed"):
        return {"parity": None, "error": str(baseline.get("how") or "the tests do not pass")}
    killed = {r["id"] for r in report["mutants"] if r["status"] == "killed" and r["id"] in ran}
    both = killed & harness_killed
    return {
        "tests": len(baseline.get("tests") or []),
        "failing": list(baseline.get("failing") or []),
        "killed": len(killed),
        "killed_ids": sorted(killed),
        "both": len(both),
        "parity": round(len(both) / len(killed), 4) if killed else None,
        "missed": [by_id[i].summary() for i in sorted(killed - harness_killed)],
    }


async def validate(
    session: Session,
    env: PythonEnv,
    target: Target,
    module: str,
    harness_path: str,
    thresholds: Thresholds,
    *,
    mutation: bool = True,
    suite_tests: list[str] | None = None,
) -> Validation:
    """Run, measure and judge one harness already written at `harness_path`: its runs on the
    reference and its mutants in one process of the runner (one interpreter start and one
    import of the project for the whole validation); a fresh process per run when the runner
    cannot run at all."""
    t0 = time.monotonic()
    found: list[Mutant] = []
    everything: list[Mutant] = []
    why_none = source = ""
    if mutation:
        everything, found, why_none, source = await _mutants_of(session, target, thresholds)
    spec = _mutant_spec(target, module, harness_path, thresholds, found, source)
    measure = await ensure_coverage(session, env)
    data_file = f"{RUNTIME_DIR}/coverage-{target.slug}"
    spec.update(
        repeats=max(1, thresholds.repeats),
        run_timeout=thresholds.test_timeout,
        coverage={"data_file": data_file, "rcfile": f"{RUNTIME_DIR}/empty.coveragerc"}
        if measure
        else None,
    )
    report, error = await _run_mutants(
        session, env, spec, target.slug, len(found), thresholds.mutant_timeout
    )
    if report is None or "runs" not in report:
        # the runner itself failed (not the harness): each run in a fresh process instead
        validation = await _validate_apart(session, env, target, harness_path, thresholds)
        if validation.passed and mutation:
            validation.mutation = await mutation_score(
                session, env, target, module, harness_path, thresholds, suite_tests
            )
    else:
        outcomes: dict[str, list[str]] = defaultdict(list)
        for run in report["runs"]:
            for test, outcome in run.items():
                outcomes[test].append(outcome)
        coverage = None
        if measure and await session.exists(data_file):
            coverage = await _coverage(session, target, data_file)
        validation = _judged_runs(outcomes, coverage, thresholds)
        validation.log = str(report.get("log") or "")
        if validation.passed and mutation:
            if why_none:
                validation.mutation = {
                    "total": 0,
                    "killed": 0,
                    "score": None,
                    "survivors": [],
                    "error": why_none,
                }
            elif not found:
                validation.mutation = _no_mutants(everything)
            else:
                validation.mutation = await _mutation_figures(
                    session,
                    env,
                    target,
                    spec,
                    report,
                    error,
                    found,
                    everything,
                    thresholds,
                    suite_tests,
                )
    judge(validation, thresholds)
    validation.seconds = round(time.monotonic() - t0, 3)
    return validation


def _judged_runs(
    outcomes: dict[str, list[str]], coverage: BranchCoverage | None, thresholds: Thresholds
) -> Validation:
    failing = sorted(t for t, seen in outcomes.items() if "passed" not in seen)
    flaky = sorted(t for t, seen in outcomes.items() if "passed" in seen and len(set(seen)) > 1)
    tests = sum(1 for t in outcomes if not t.startswith("<"))
    return Validation(
        runs=max(1, thresholds.repeats),
        tests=tests,
        passed=bool(tests) and not failing and not flaky,
        failing=failing,
        flaky=flaky,
        coverage=coverage.as_dict() if coverage else None,
    )


async def _validate_apart(
    session: Session, env: PythonEnv, target: Target, harness_path: str, thresholds: Thresholds
) -> Validation:
    """The harness's runs on the reference, each in a fresh process (the runner's fallback)."""
    outcomes, coverage, results = await run_repeatedly(
        session, env, target, harness_path, thresholds.repeats, thresholds.test_timeout
    )
    validation = _judged_runs(outcomes, coverage, thresholds)
    failed_run = next((r for r in results if not r.passed), None)
    if failed_run is not None:
        validation.log = failed_run.output[-4000:]
    return validation


def judge(validation: Validation, thresholds: Thresholds) -> None:
    """Set the verdict and its reasons from the figures and the thresholds."""
    reasons = []
    if not validation.tests:
        reasons.append("the harness has no tests that ran")
    blind = [t for t in validation.failing if t.endswith(SELF_CHECK)]
    if blind:
        reasons.append(
            "the comparator is blind for this target (results that differ compare equal)"
        )
    cases = [t for t in validation.failing if not t.endswith(SELF_CHECK)]
    if cases:
        reasons.append(f"{len(cases)} test(s) fail on the reference")
    if validation.flaky:
        reasons.append(f"{len(validation.flaky)} test(s) are flaky on the reference")
    rate = validation.coverage_rate
    if rate is None:
        reasons.append("no coverage was measured")
    elif rate < thresholds.min_cov:
        reasons.append(f"branch coverage {rate:.0%} is below {thresholds.min_cov:.0%}")
    score = validation.mutation_score
    if validation.passed:
        if score is None:
            error = (validation.mutation or {}).get("error")
            if error or (validation.mutation or {}).get("total"):
                reasons.append(f"no mutation score: {error or 'no mutant ran'}")
        elif score < thresholds.min_mutation:
            reasons.append(f"mutation score {score:.0%} is below {thresholds.min_mutation:.0%}")
        figures = validation.mutation or {}
        possible = figures.get("possible")
        if possible == 0 and not figures.get("error"):
            reasons.append("no mutant can be made of it (nothing shows the harness catches bugs)")
        elif possible is not None:
            needed = min(thresholds.min_mutants, int(possible))
            if thresholds.max_mutants is not None:  # --max-mutants 0: no mutation asked for
                needed = min(needed, thresholds.max_mutants)
            if int(figures.get("total") or 0) < needed:
                reasons.append(
                    f"only {figures.get('total') or 0} mutant(s) ran, {needed} needed "
                    f"(of {possible} possible)"
                )
        parity = (figures.get("suite") or {}).get("parity")
        if parity is not None and parity < thresholds.min_parity:
            reasons.append(
                f"suite parity {parity:.0%} is below {thresholds.min_parity:.0%} (the "
                "repository's tests kill mutants the harness does not)"
            )
    validation.reasons = reasons
    validation.verdict = "invalid" if reasons else "valid"
