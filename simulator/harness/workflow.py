"""The harness workflow: targets -> harnesses -> validation -> problems, recorded in a session.

Headless entry points, for the CLI, the batch layer and a curation UI alike:

- `make_problems(session, targets, options)`: generate (traced or by a model) and validate a
  harness for each target; one `harness` workflow run with a step per target and stage.
- `revalidate(session, problem, options)`: validate a problem's harness again (after a person
  edited it, or with other thresholds).
- `regenerate(session, problem, options)`: make its harness again (another generator, more
  rounds) and validate it.
- `remutate(session, problem, options)`: only the mutation score, e.g. with more mutants.
- `accept` / `reject` / `edit` / `note` / `mark_equivalent`: curation, recorded as workflow
  steps.

Every function emits `workflow.start/step/result/end` events through `WorkflowRun`; a UI
follows them by subscribing to the session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from backends.shell import quote
from simulator.dataset.schema import CurationEntry, CurationState, Harness, Problem, Validation
from simulator.events import Actor
from simulator.harness import traced
from simulator.harness.derive import derive_calls
from simulator.harness.env import NATIVE_TRACEBACKS, PythonEnv, install_runtime
from simulator.harness.format import (
    HARNESS_DIR,
    TracedCall,
    case_of,
    check_harness,
    derived_count,
    harness_path,
    readable_share,
    render_traced,
)
from simulator.harness.generation import HarnessOptions as HarnessOptions
from simulator.harness.generation import settle, snapshot_reference
from simulator.harness.target import Target
from simulator.harness.validate import judge, mutation_score, validate
from simulator.session import Session
from simulator.workflow import StepStatus, WorkflowFailure, WorkflowRun

WORKFLOW = "harness"
GENERATORS = ("traced", "model")


ProblemHook = Callable[[Problem], None]


def new_problem(session: Session, target: Target) -> Problem:
    repo = session.repo or {}
    commit = str(repo.get("commit") or "")
    name = session.source.name
    return Problem(
        id=f"{name}@{commit[:12] or 'worktree'}:{target.id}",
        repo={"name": name, "source": str(session.source), "commit": commit or None},
        target=target.as_dict(),
        module=target.module,
    )


async def make_problems(
    session: Session,
    targets: list[Target],
    options: HarnessOptions,
    *,
    on_problem: ProblemHook | None = None,
) -> list[Problem]:
    """A validated harness (or the reasons there is none) for every target."""
    if options.generator not in GENERATORS:
        raise WorkflowFailure(
            f"unknown generator {options.generator!r} (choose {', '.join(GENERATORS)})."
        )
    if options.generator == "model" and options.client is None:
        raise WorkflowFailure("the model generator needs a model (--model).")
    problems: list[Problem] = []
    with WorkflowRun(
        session, WORKFLOW, {**options.params(), "targets": [t.id for t in targets]}
    ) as run:
        await install_runtime(session)
        traces: dict[str, traced.Trace] = {}
        if options.generator == "traced" and targets:
            with run.stage("trace", targets=len(targets)) as detail:
                try:
                    traces, suite = await traced.trace(
                        session,
                        options.env,
                        targets,
                        test_args=options.test_args,
                        max_calls=options.max_calls,
                    )
                except traced.TraceError as exc:
                    raise WorkflowFailure(str(exc)) from None
                detail.update(
                    suite_exit_code=suite.exit_code,
                    collection_errors=suite.collection_errors,
                    failed=suite.failed,
                    failed_only_under_tracer=suite.tracer_only,
                    called=sum(bool(t.calls) for t in traces.values()),
                    calls=sum(len(t.calls) for t in traces.values()),
                )
        for target in targets:
            problem = new_problem(session, target)
            with run.stage("target", target=target.id) as detail:
                if options.generator == "traced":
                    await _traced_problem(session, run, problem, target, traces[target.id], options)
                else:
                    from simulator.harness.model import model_problem

                    await model_problem(session, run, problem, target, options)
                detail.update(target=target.id, **_summary(problem))
            problems.append(problem)
            if on_problem is not None:
                on_problem(problem)
        run.result(**summarize(problems))
    return problems


def _dropped_text(dropped: dict[str, int]) -> str:
    parts = [f"{reason} x{count}" for reason, count in sorted(dropped.items(), key=lambda x: -x[1])]
    return "; ".join(parts[:4]) + ("; ..." if len(parts) > 4 else "")


async def _why_uncalled(
    session: Session, env: PythonEnv, target: Target, trace: traced.Trace
) -> str:
    """The honest reason a target has no recorded call."""
    if trace.kind == "coroutine":
        return "a coroutine (async): not traced"
    if trace.tests:
        return (
            f"no call could be kept: {trace.dropped_total} dropped ({_dropped_text(trace.dropped)})"
        )
    probe = await session.exec(
        f"{env.prefix()} -c {quote('import ' + target.module)}", actor=Actor.SYSTEM
    )
    if probe.exit_code != 0 and target.module:
        tail = probe.output.decode("utf-8", "replace").strip().splitlines()[-1:]
        return f"module not importable: {tail[0] if tail else 'no output'}"
    kind = "a generator that " if trace.kind == "generator" else ""
    return f"{kind}never called by the repository's tests"


@dataclass
class _Checked:
    """A traced harness validated on the reference, its failing and flaky cases pruned once."""

    calls: list[TracedCall]  # the calls the harness at the path holds now
    text: str  # its text
    first: Validation  # the validation of every call, before any was pruned
    validation: Validation | None  # of `calls` (None when every call was pruned)
    failures: int = 0  # cases pruned because they failed on the reference
    flaky: list[str] = field(default_factory=list)  # cases pruned because they flaked
    stateless: int = 0  # cases whose pickled class state was left out (_needless_class_state)

    @property
    def pruned(self) -> bool:
        return bool(self.failures or self.flaky)

    @property
    def clean(self) -> bool:
        """No case of the harness as it stands fails or flakes on the reference."""
        v = self.validation
        return v is not None and not (_case_failures(v) or v.flaky)


def _case_failures(validation: Validation) -> list[str]:
    return [t for t in validation.failing if case_of(t) is not None]


async def _check(
    session: Session,
    env: PythonEnv,
    target: Target,
    trace: traced.Trace,
    path: str,
    calls: list[TracedCall],
    options: HarnessOptions,
    suite_tests: list[str],
) -> _Checked:
    """Write the harness of `calls` at `path` and validate it (its mutants run in the same
    process when every case passes on the reference); when cases fail or flake there, drop
    them, write it again and validate once more (the second validation is not pruned)."""

    async def write_and_validate(chosen: list[TracedCall]) -> tuple[str, Validation]:
        text = render_traced(target, trace.module, chosen, trace.paths)
        await session.write(path, text, actor=Actor.SYSTEM)
        validation = await validate(
            session, env, target, trace.module, path, options.thresholds, suite_tests=suite_tests
        )
        return text, validation

    calls, stateless = await _needless_class_state(session, env, target, trace, path, calls)
    text, first = await write_and_validate(calls)
    checked = _Checked(calls, text, first, first, stateless=stateless)
    failures = _case_failures(first)
    if not (failures or first.flaky):
        return checked
    checked.failures, checked.flaky = len(failures), list(first.flaky)
    checked.calls = [calls[i] for i in traced.surviving_cases(calls, failures, first.flaky)]
    checked.validation = None
    if checked.calls:
        checked.text, checked.validation = await write_and_validate(checked.calls)
    return checked


async def _needless_class_state(
    session: Session,
    env: PythonEnv,
    target: Target,
    trace: traced.Trace,
    path: str,
    calls: list[TracedCall],
) -> tuple[list[TracedCall], int]:
    """The calls, those made in a class state only a pickle keeps tried once on the reference
    without it; a case that still passes leaves it out (the state changed nothing the case
    sees), one that fails keeps it. The class state is what the test run had set since import,
    and a lazily built singleton counts: sqlparse's default lexer (`Lexer._default_intance`,
    its compiled patterns and keyword tables), a 13 KB pickle in 508 of sqlparse's 561 cases,
    which a harness process builds the same way on first use. (The number left out too.)"""
    replayed = [c for c in calls if c.in_situ is None]
    pickled = [n for n, c in enumerate(replayed) if c.classes is not None and "p" in c.classes]
    if not pickled:
        return calls, 0
    trial = [replace(c, classes=None) if n in pickled else c for n, c in enumerate(replayed)]
    in_situ = [c for c in calls if c.in_situ is not None]
    await session.write(
        path, render_traced(target, trace.module, trial + in_situ, trace.paths), actor=Actor.SYSTEM
    )
    run = await session.run_tests(
        path, command=f"{env.pytest(HARNESS_DIR)} {NATIVE_TRACEBACKS}", actor=Actor.SYSTEM
    )
    passed = {case_of(t.id) for t in run.tests if t.outcome == "passed"}
    kept = [trial[n] if n in pickled and ("c", n) in passed else c for n, c in enumerate(replayed)]
    return kept + in_situ, sum(n in pickled and ("c", n) in passed for n in range(len(replayed)))


async def _traced_problem(
    session: Session,
    run: WorkflowRun,
    problem: Problem,
    target: Target,
    trace: traced.Trace,
    options: HarnessOptions,
) -> None:
    if not trace.calls:
        problem.curation.mark(
            CurationState.NONE, reason=await _why_uncalled(session, options.env, target, trace)
        )
        return
    problem.module = trace.module
    env = traced.module_env(options.env, target, trace.module)
    path = harness_path(target)
    await snapshot_reference(session, target)
    in_situ = sum(c.in_situ is not None for c in trace.calls)
    notes = [
        f"{len(trace.calls)} calls chosen by coverage of {trace.candidates or len(trace.calls)} "
        f"distinct recorded, from {len(trace.tests)} test(s)"
        + (f" ({in_situ} checked in situ: their values cannot be kept)" if in_situ else "")
        + f"; {trace.dropped_total} dropped"
        + (f" ({_dropped_text(trace.dropped)})" if trace.dropped else "")
    ]
    suite_tests = _suite_tests(trace)
    checked = await _check(session, env, target, trace, path, trace.calls, options, suite_tests)
    first = checked.first
    if checked.stateless:
        notes.append(
            f"{checked.stateless} call(s) replayed without the class state their test had set "
            "(only a pickle kept it; the reference gives the same result without it)"
        )
    if checked.pruned:
        notes.append(
            f"{checked.failures} call(s) not reproducible and {len(checked.flaky)} flaky on "
            "the reference: dropped"
        )
        run.step(
            "prune",
            target=target.id,
            kept=len(checked.calls),
            dropped=len(trace.calls) - len(checked.calls),
        )
    problem.harness = Harness(
        "traced",
        checked.text,
        path=path,
        cases=len(checked.calls),
        notes=notes,
        suite_tests=suite_tests,
    )
    problem.curation.mark(CurationState.GENERATED)
    if checked.validation is None:
        problem.validation = first
        cause = _first_failure(first)
        problem.curation.mark(
            CurationState.REJECTED,
            reason=f"no reproducible call: all {len(trace.calls)} differ on the reference"
            + (f" ({cause})" if cause else ""),
        )
        return
    validation = checked.validation
    if checked.pruned:  # the dropped flaky cases stay marked (the notes say they were dropped)
        validation.flaky = sorted(set(validation.flaky) | set(first.flaky))
    coverage = validation.coverage_rate
    if options.derive_runs > 0 and coverage is not None and coverage < options.thresholds.min_cov:
        validation = await _derived(
            session,
            run,
            problem,
            env,
            target,
            trace,
            checked.calls,
            validation,
            options,
            suite_tests,
        )
    settle(problem, validation)


async def _derived(
    session: Session,
    run: WorkflowRun,
    problem: Problem,
    env: PythonEnv,
    target: Target,
    trace: traced.Trace,
    calls: list[TracedCall],
    validation: Validation,
    options: HarnessOptions,
    suite_tests: list[str],
) -> Validation:
    """The harness with cases derived from its recorded ones added (those that reach arcs the
    recorded ones do not), validated again; as it was when none is found or none holds."""
    harness = problem.harness
    assert harness is not None and harness.path is not None
    replayed = [c for c in calls if c.in_situ is None]
    if not replayed:
        return validation
    derived, counts = await derive_calls(
        session, env, target, harness.path, replayed, runs=options.derive_runs
    )
    run.step("derive", target=target.id, derived=len(derived), tried=counts.get("tried", 0))
    if not derived:
        return validation
    more = [*replayed, *derived, *[c for c in calls if c.in_situ is not None]]
    # (a derived case that fails or flakes on the reference is dropped)
    checked = await _check(session, env, target, trace, harness.path, more, options, suite_tests)
    kept = sum(c.derived is not None for c in checked.calls)
    if not checked.clean or not kept or checked.validation is None:
        await session.write(harness.path, harness.text, actor=Actor.SYSTEM)
        return validation
    again = checked.validation
    if again.failing:
        await session.write(harness.path, harness.text, actor=Actor.SYSTEM)
        return validation
    harness.text, harness.cases = checked.text, len(checked.calls)
    harness.notes.append(
        f"{kept} case(s) derived from recorded calls (their arguments changed by type, the "
        f"expected values the reference's; {counts.get('tried', 0)} tried): coverage "
        f"{_rate(validation.coverage_rate)} -> {_rate(again.coverage_rate)}"
    )
    return again


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _suite_tests(trace: traced.Trace) -> list[str]:
    """The tests that called the target, those the chosen calls came from first."""
    chosen = [c.test for c in trace.calls if c.test]
    return list(dict.fromkeys([*chosen, *trace.tests]))


def _first_failure(validation: Validation) -> str:
    """The first assertion message of a failed run, shortened: pytest's `E` lines, or the
    exception that ends the first traceback as Python prints it (the mutant runner's
    `--tb=native`; a chained exception's last), or the short summary's first message."""
    lines = validation.log.splitlines()
    for line in lines:
        line = line.strip()
        if line.startswith("E ") and len(line) > 2:
            return line[2:].strip()[:200]
    found, inside = "", False
    for line in lines:
        if line.startswith("Traceback (most recent call last):"):
            inside = True
        elif inside and line and not line[0].isspace():
            found, inside = line.strip(), False
        elif found and line.startswith(("___", "===")):
            return found[:200]
    if found:
        return found[:200]
    for line in lines:
        if line.startswith("FAILED ") and " - " in line:
            return line.split(" - ", 1)[1].strip()[:200]
    return ""


def _summary(problem: Problem) -> dict[str, Any]:
    v = problem.validation
    return {
        "state": str(problem.curation.state),
        "verdict": v.verdict if v else None,
        "coverage": v.coverage_rate if v else None,
        "mutation": v.mutation_score if v else None,
        "cases": problem.harness.cases if problem.harness else 0,
    }


def reason_of(problem: Problem) -> str:
    """The kind of outcome of a problem, for counting: valid, or the first reason it is not."""
    v = problem.validation
    if v is None:
        text = problem.curation.reasons[0] if problem.curation.reasons else "no harness"
        for kind in (
            "module not importable",
            "coroutine",
            "generator that never called",
            "never called",
            "no call could be kept",
        ):
            if kind in text:
                return kind.replace("generator that never called", "never called (generator)")
        return "no harness"
    if v.verdict == "valid":
        return "valid"
    if str(problem.curation.state) == "rejected":
        return "no reproducible call"
    order = (
        ("comparator is blind", "comparator blind"),
        ("fail on the reference", "fails on the reference"),
        ("flaky", "flaky"),
        ("coverage", "coverage below threshold"),
        ("no mutant can be made", "no mutant"),
        ("mutant(s) ran", "too few mutants"),
        ("mutation", "mutation below threshold"),
        ("suite parity", "suite parity below threshold"),
    )
    for reason in v.reasons:
        for needle, kind in order:
            if needle in reason:
                return kind
    return "invalid (other)"


def summarize(problems: list[Problem]) -> dict[str, Any]:
    """Counts and distributions for a set of problems (a run's or a batch's result): the
    figures are over harnesses with at least one case (a harness whose calls were all
    dropped says nothing about coverage), with the outcome per reason."""
    cased = [p for p in problems if p.harness is not None and p.harness.cases > 0]
    validations = [p.validation for p in cased if p.validation]
    coverage = sorted(v.coverage_rate for v in validations if v.coverage_rate is not None)
    mutation = sorted(v.mutation_score for v in validations if v.mutation_score is not None)
    parity = sorted(
        float(((v.mutation or {}).get("suite") or {})["parity"])
        for v in validations
        if ((v.mutation or {}).get("suite") or {}).get("parity") is not None
    )
    readable = total = derived = 0
    for p in cased:
        if p.harness is not None and p.harness.generator == "traced":
            r, n = readable_share(p.harness.text)
            readable, total = readable + r, total + n
            derived += derived_count(p.harness.text)
    reasons: dict[str, int] = {}
    for p in problems:
        kind = reason_of(p)
        reasons[kind] = reasons.get(kind, 0) + 1
    return {
        "targets": len(problems),
        "harnesses": sum(p.harness is not None for p in problems),
        "with_cases": len(cased),
        "valid": sum(v.verdict == "valid" for v in (p.validation for p in problems) if v),
        "coverage": quartiles(coverage),
        "mutation": quartiles(mutation),
        "parity": quartiles(parity),
        "readable_cases": readable,
        "cases": total,
        "derived_cases": derived,
        "reasons": dict(sorted(reasons.items(), key=lambda x: -x[1])),
    }


def quartiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 4)

    return {
        "n": len(ordered),
        "min": ordered[0],
        "q1": at(0.25),
        "median": at(0.5),
        "q3": at(0.75),
        "max": ordered[-1],
        "mean": round(sum(ordered) / len(ordered), 4),
    }


# -- one problem at a time (the curation UI's verbs) ------------------------------------------


def _target(problem: Problem) -> Target:
    return Target.from_dict(problem.target)


async def revalidate(session: Session, problem: Problem, options: HarnessOptions) -> Validation:
    """Write the problem's harness into the workspace and validate it again."""
    if problem.harness is None:
        raise WorkflowFailure(f"{problem.id} has no harness to validate.")
    target = _target(problem)
    with WorkflowRun(session, WORKFLOW, {"action": "revalidate", "problem": problem.id}) as run:
        await install_runtime(session)
        await snapshot_reference(session, target)
        why = check_harness(problem.harness.text)
        if why is not None:
            run.step("format", StepStatus.FAILED, problem=problem.id, reason=why)
            raise WorkflowFailure(f"The harness of {problem.id} is not usable: {why}.")
        path = problem.harness.path or harness_path(target)
        await session.write(path, problem.harness.text, actor=Actor.SYSTEM)
        env = traced.module_env(options.env, target, problem.module)
        with run.stage("validate", problem=problem.id) as detail:
            validation = await validate(
                session,
                env,
                target,
                problem.module,
                path,
                options.thresholds,
                suite_tests=problem.harness.suite_tests,
            )
            if problem.curation.equivalent and validation.mutation:
                validation.mutation = leave_out_equivalent(
                    validation.mutation, problem.curation.equivalent
                )
                judge(validation, options.thresholds)
            detail.update(verdict=validation.verdict, reasons=validation.reasons)
        settle(problem, validation)
        run.result(**_summary(problem))
    return validation


async def regenerate(session: Session, problem: Problem, options: HarnessOptions) -> Problem:
    """Make the problem's harness again with `options.generator`; keeps its curation notes."""
    target = _target(problem)
    [fresh] = await make_problems(session, [target], options)
    carry_curation(problem, fresh, options)
    return fresh


def carry_curation(old: Problem, fresh: Problem, options: HarnessOptions) -> None:
    """A regenerated problem keeps the person's notes, history and equivalence marks (the
    mutants are of the same target, so a mark still applies and the new score leaves them
    out too)."""
    fresh.curation.notes = [*old.curation.notes, *fresh.curation.notes]
    fresh.curation.history = [*old.curation.history, *fresh.curation.history]
    fresh.curation.equivalent = [dict(m) for m in old.curation.equivalent]
    if fresh.curation.equivalent and fresh.validation and fresh.validation.mutation:
        fresh.validation.mutation = leave_out_equivalent(
            fresh.validation.mutation, fresh.curation.equivalent
        )
        judge(fresh.validation, options.thresholds)
        if fresh.curation.state in (CurationState.GENERATED, CurationState.VALID):
            settle(fresh, fresh.validation)


async def remutate(session: Session, problem: Problem, options: HarnessOptions) -> dict[str, Any]:
    """Only the mutation score of the problem's harness (e.g. with another mutant limit)."""
    if problem.harness is None or problem.validation is None:
        raise WorkflowFailure(f"{problem.id} has no validated harness to mutate against.")
    target = _target(problem)
    with WorkflowRun(session, WORKFLOW, {"action": "mutate", "problem": problem.id}) as run:
        await install_runtime(session)
        path = problem.harness.path or harness_path(target)
        await session.write(path, problem.harness.text, actor=Actor.SYSTEM)
        env = traced.module_env(options.env, target, problem.module)
        with run.stage("mutate", problem=problem.id) as detail:
            figures = await mutation_score(
                session,
                env,
                target,
                problem.module,
                path,
                options.thresholds,
                problem.harness.suite_tests,
            )
            detail.update(score=figures.get("score"), total=figures.get("total"))
        figures = leave_out_equivalent(figures, problem.curation.equivalent)
        problem.validation = replace(problem.validation, mutation=figures)
        judge(problem.validation, options.thresholds)
        run.result(**_summary(problem))
    return figures


def _mutant_key(mutant: dict[str, Any]) -> tuple[object, ...]:
    """What names a mutant across runs: its ids number the mutants a run made (another
    mutant limit renumbers them), its operator, line and description do not change."""
    return (mutant.get("operator"), mutant.get("line"), mutant.get("description"))


def _mutant_order(mutant: dict[str, Any]) -> tuple[int, int]:
    number = str(mutant.get("id") or "").lstrip("m")
    return int(mutant.get("line") or 0), int(number) if number.isdigit() else 0


def leave_out_equivalent(figures: dict[str, Any], marked: list[dict[str, Any]]) -> dict[str, Any]:
    """The mutation figures without the surviving mutants a person marked equivalent: those
    move to "marked_equivalent" and leave the total, the score and the mutants the operators
    could make ("possible", which sets how many must run). Idempotent, and a mark taken
    back returns its mutant to the survivors. A marked mutant that a run kills stays counted as
    killed: the harness shows it is not equivalent."""
    if figures.get("error") or not (marked or figures.get("marked_equivalent")):
        return figures
    keys = {_mutant_key(m) for m in marked}
    pool = sorted(
        [*(figures.get("survivors") or []), *(figures.get("marked_equivalent") or [])],
        key=_mutant_order,
    )
    out = [m for m in pool if _mutant_key(m) in keys]
    before = len(figures.get("marked_equivalent") or [])
    total = int(figures.get("total") or 0) + before - len(out)
    killed = int(figures.get("killed") or 0)
    left_out = {
        **figures,
        "survivors": [m for m in pool if _mutant_key(m) not in keys],
        "marked_equivalent": out,
        "total": total,
        "score": round(killed / total, 4) if total else None,
    }
    if figures.get("possible") is not None:  # an equivalent mutant is no mutant that could run
        left_out["possible"] = int(figures["possible"]) + before - len(out)
    return left_out


def mark_equivalent(
    problem: Problem, mutant: dict[str, Any], *, by: str, options: HarnessOptions
) -> bool:
    """A person's judgement that a surviving mutant behaves as the target does (no test could
    kill it): marked, or unmarked when it was; the score leaves it out and the verdict is
    judged again (a generated problem may become valid, and back). Returns whether it is
    marked now; the history says who did it."""
    key = _mutant_key(mutant)
    kept = [m for m in problem.curation.equivalent if _mutant_key(m) != key]
    marked = len(kept) == len(problem.curation.equivalent)
    fields = ("id", "operator", "line", "description", "diff")
    problem.curation.equivalent = [*kept, {k: mutant.get(k) for k in fields}] if marked else kept
    what = "marked equivalent" if marked else "no longer marked equivalent"
    reason = f"mutant {mutant.get('description')} (line {mutant.get('line')}) {what}"
    problem.curation.history.append(CurationEntry(problem.curation.state, by, reason))
    validation = problem.validation
    if validation is not None and validation.mutation:
        validation.mutation = leave_out_equivalent(validation.mutation, problem.curation.equivalent)
        judge(validation, options.thresholds)
        state = problem.curation.state
        now = CurationState.VALID if validation.verdict == "valid" else CurationState.GENERATED
        if state in (CurationState.GENERATED, CurationState.VALID) and now != state:
            settle(problem, validation)  # RepoSim's verdict on the new figures
        elif state == CurationState.GENERATED:
            problem.curation.reasons = ["; ".join(validation.reasons)]
    return marked


def accept(problem: Problem, *, by: str, note: str = "") -> None:
    problem.curation.mark(CurationState.ACCEPTED, by=by, reason=note)


def reject(problem: Problem, *, by: str, reason: str) -> None:
    if not reason.strip():
        raise ValueError("a rejection needs a reason.")
    problem.curation.mark(CurationState.REJECTED, by=by, reason=reason)


def edit(problem: Problem, text: str, *, by: str, reason: str = "") -> None:
    """Replace the harness text; the problem must be validated again before it is valid (the
    earlier figures stay, marked stale, until then)."""
    why = check_harness(text)
    if why is not None:
        raise ValueError(f"the edited harness is not usable: {why}.")
    base = problem.harness or Harness("edited", text)
    problem.harness = replace(base, text=text, generator="edited")
    if problem.validation is not None:  # kept, marked stale, until validated again
        problem.validation = replace(problem.validation, stale=True)
    problem.curation.mark(CurationState.EDITED, by=by, reason=reason)


def note(problem: Problem, text: str) -> None:
    problem.curation.notes.append(text)


def record_decision(
    session: Session, problem: Problem, action: str, *, by: str, reason: str = ""
) -> None:
    """Record a person's curation decision (accept, reject, edit, note) in the trajectory: who,
    what and why, as a one-step `curation` workflow run whose result is the problem's state."""
    with WorkflowRun(
        session, "curation", {"action": action, "problem": problem.id}, actor=Actor.HUMAN
    ) as run:
        run.step(action, problem=problem.id, by=by, reason=reason)
        run.result(problem=problem.id, state=str(problem.curation.state), by=by, reason=reason)
