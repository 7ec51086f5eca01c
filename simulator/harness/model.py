"""The model generator: an R2E-style equivalence harness, with k generate-execute rounds.

The model sees the target, its dependency-sliced context and the harness format; it writes
tests that call `reference` and `candidate` on the same inputs and compare them with `same`.
Each round the harness runs on the reference (validate.py); when it fails, or covers too few of
the target's branches, the output (or the branch arcs never taken) goes back to the model for
the next round. The first valid harness wins; after k rounds the last one is kept, invalid.
"""

from __future__ import annotations

from simulator.agent.models import Message, ModelError
from simulator.dataset.schema import CurationState, Harness, Problem, Validation
from simulator.events import Actor
from simulator.harness.format import check_harness, harness_path, header
from simulator.harness.generation import HarnessOptions, settle, snapshot_reference
from simulator.harness.llm import ask, code_block
from simulator.harness.target import Target
from simulator.harness.validate import validate
from simulator.session import Session
from simulator.workflow import StepStatus, WorkflowFailure, WorkflowRun

SYSTEM = """You write equivalence test harnesses for Python functions.
A harness is a pytest file that checks that `candidate` (an implementation of the target
function) behaves exactly like `reference` (the original): call both on the same inputs and
compare with `same(candidate_result, reference_result)`; when the reference raises, check that
the candidate raises the same exception type. Cover every branch of the target: choose inputs
that take each `if` both ways, loops zero and several times, every `return` and `raise`.
For a method, `reference` and `candidate` are plain functions: pass the instance explicitly,
building it from the reference's module (`reference.__globals__`) for `reference` and from the
candidate's (`candidate.__globals__`) for `candidate`. Tests must be deterministic.
Answer with one ```python code block holding only the test functions (and any helpers); the
header below is added for you and already binds `candidate`, `reference`, `same` and `pytest`."""


def harness_header(target: Target, module: str) -> str:
    return header(target, module, "model") + "reference = load_reference(TARGET)\n"


def first_prompt(target: Target, module: str) -> list[Message]:
    context = target.context or target.body
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (
                f"Target: `{target.qualname}` in `{target.path}` (module `{module}`).\n\n"
                f"Its context (dependencies first, the target last):\n```python\n{context}\n```"
                f"\n\nThe header of the harness file:\n```python\n"
                f"{harness_header(target, module)}```\n\nWrite the tests."
            ),
        },
    ]


def assemble(target: Target, module: str, code: str) -> str:
    """The full harness: our header, then the model's tests (a header it wrote is dropped)."""
    lines = [
        line
        for line in code.splitlines()
        if not line.startswith(("from reposim_harness_support", "TARGET =", "candidate ="))
        and not line.startswith("reference = load_reference")
    ]
    return harness_header(target, module) + "\n\n" + "\n".join(lines).strip("\n") + "\n"


def feedback(validation: Validation | None, why: str | None, min_cov: float) -> str:
    """What the next round is told."""
    if why is not None:
        return f"That answer cannot be used: {why}. Answer with one ```python code block."
    assert validation is not None
    if validation.failing or validation.flaky or not validation.tests:
        parts = ["The harness does not pass on the reference implementation."]
        if validation.failing:
            parts.append("Failing: " + ", ".join(validation.failing[:10]))
        if validation.flaky:
            parts.append("Flaky (passed only sometimes): " + ", ".join(validation.flaky[:10]))
        parts.append(f"Output:\n```\n{validation.log[-3000:]}\n```")
        parts.append("Fix the tests; the reference is correct by definition.")
        return "\n".join(parts)
    coverage = validation.coverage or {}
    missing = ", ".join(
        f"line {a} -> {'exit' if b < 0 else f'line {b}'}"
        for a, b in coverage.get("missing", [])[:20]
    )
    return (
        f"The harness passes but covers {coverage.get('rate', 0):.0%} of the target's branches "
        f"(at least {min_cov:.0%} is needed). Branches never taken: {missing or 'none'}. "
        "Add tests whose inputs take them; keep the passing tests."
    )


async def model_problem(
    session: Session,
    run: WorkflowRun,
    problem: Problem,
    target: Target,
    options: HarnessOptions,
) -> None:
    assert options.client is not None

    module = problem.module or target.module
    if not module:
        raise WorkflowFailure(f"the module of {target.path} is unknown; it cannot be imported.")
    problem.module = module
    from simulator.harness.traced import module_env

    env = module_env(options.env, target, module)
    path = harness_path(target)
    await snapshot_reference(session, target)
    messages = first_prompt(target, module)
    validation: Validation | None = None
    text = ""
    for round_number in range(1, max(1, options.rounds) + 1):
        try:
            turn = await ask(session, options.client, messages)
        except ModelError as exc:
            raise WorkflowFailure(str(exc)) from None
        messages.append({"role": "assistant", "content": turn.content})
        code = code_block(turn.content)
        why = "there is no Python code block in it" if code is None else None
        validation = None
        if code is not None:
            text = assemble(target, module, code)
            why = check_harness(text)
        if why is None:
            await session.write(path, text, actor=Actor.SYSTEM)
            validation = await validate(session, env, target, module, path, options.thresholds)
        status = (
            StepStatus.OK
            if validation is not None and validation.verdict == "valid"
            else StepStatus.FAILED
        )
        run.step(
            "round",
            status,
            target=target.id,
            round=round_number,
            verdict=validation.verdict if validation else "unusable",
            reasons=validation.reasons if validation else [why],
        )
        problem.harness = Harness(
            "model",
            text,
            path=path,
            rounds=round_number,
            cases=validation.tests if validation else 0,
        )
        if validation is not None and validation.verdict == "valid":
            break
        messages.append(
            {"role": "user", "content": feedback(validation, why, options.thresholds.min_cov)}
        )
    if validation is None:
        problem.curation.mark(
            CurationState.REJECTED,
            reason=f"the model never wrote a usable harness in {options.rounds} round(s)",
        )
        return
    problem.curation.mark(CurationState.GENERATED)
    settle(problem, validation)
