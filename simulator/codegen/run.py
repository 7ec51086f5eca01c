"""`reposim codegen`: n samples of a masked target from a model, each spliced in and scored by
the problem's harness; pass@k with the unbiased estimator, before and after debug rounds.

A sample is one conversation: the model sees the sliced context with the target masked
(signature and docstring kept) and answers with an implementation; it is spliced into the
target's file in the workspace and the harness runs. With `debug_rounds` R, a failing sample
gets the harness output back and up to R more tries. The file is restored after each sample.

pass@k means something only when the harness can judge a sample: a harness without a
validation is validated first, and when its verdict is invalid (low coverage, weak mutation
score, failing on the reference) the result says so and carries no pass@k, only how many
samples passed that harness.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from simulator.agent.models import Message, ModelClient, ModelError
from simulator.codegen.mask import SpliceError, extract_function, indentation, masked, splice
from simulator.codegen.passk import pass_at_k
from simulator.dataset.schema import Problem
from simulator.events import Actor
from simulator.harness.env import PythonEnv, install_runtime
from simulator.harness.format import HARNESS_DIR, harness_path, reference_path
from simulator.harness.llm import ask, code_block
from simulator.harness.target import Target
from simulator.harness.traced import module_env
from simulator.harness.validate import Thresholds, validate
from simulator.session import Session
from simulator.workflow import WorkflowFailure, WorkflowRun

SYSTEM = """You implement Python functions inside an existing repository.
You get the function's context (what it depends on, then the function itself with its body
replaced by `...`). Write the complete function: the same decorators, signature and docstring,
with a body that does what the docstring and the context say. Answer with one ```python code
block holding only that function."""


@dataclass
class Sample:
    index: int
    passed_first: bool = False  # passed on its first answer
    passed: bool = False  # passed after the debug rounds (if any)
    rounds: int = 0  # answers it took (1 + debug rounds used)
    error: str | None = None  # why the last answer could not be spliced
    code: str = ""  # the last implementation tried
    log: str = ""  # the end of the last failing harness run

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CodegenResult:
    problem: str
    model: str
    n: int
    ks: list[int]
    samples: list[Sample] = field(default_factory=list)
    harness_verdict: str = "valid"  # the scoring harness's validation verdict
    harness_reasons: list[str] = field(default_factory=list)  # why it is invalid
    harness_coverage: float | None = None  # its branch coverage of the target (0..1)
    harness_parity: float | None = None  # its suite parity (None: the tests kill no mutant)

    @property
    def judged(self) -> bool:
        """Whether the harness can judge the samples (its validation found it valid)."""
        return self.harness_verdict == "valid"

    @property
    def withheld(self) -> str | None:
        """Why pass@k is not reported, in one sentence; None when it is."""
        if self.judged:
            return None
        why = "; ".join(self.harness_reasons) or "its validation failed"
        return f"pass@k is not reported: the harness is invalid ({why})."

    @property
    def correct_first(self) -> int:
        return sum(s.passed_first for s in self.samples)

    @property
    def correct(self) -> int:
        return sum(s.passed for s in self.samples)

    def pass_at(self, *, debug: bool = False) -> dict[str, float]:
        """pass@k for each k (empty when the harness is invalid: see `withheld`)."""
        if not self.judged:
            return {}
        c = self.correct if debug else self.correct_first
        return {f"pass@{k}": round(pass_at_k(self.n, c, k), 4) for k in self.ks if k <= self.n}

    def as_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem,
            "model": self.model,
            "n": self.n,
            "correct_first": self.correct_first,
            "correct": self.correct,
            "pass_at": self.pass_at(),
            "pass_at_debug": self.pass_at(debug=True),
            **self.harness_figures(),
            "samples": [s.as_dict() for s in self.samples],
        }

    def harness_figures(self) -> dict[str, Any]:
        figures: dict[str, Any] = {
            "harness_verdict": self.harness_verdict,
            "harness_coverage": self.harness_coverage,
            "harness_parity": self.harness_parity,
        }
        if self.withheld:
            figures.update(harness_reasons=self.harness_reasons, withheld=self.withheld)
        return figures


def prompt(target: Target, source: str) -> list[Message]:
    """The first messages of a sample: the context with the target masked."""
    hidden = masked(target, source)
    indent = indentation(target, source)
    in_place = textwrap.indent(hidden, indent)[len(indent) :].rstrip("\n")
    # The body is dedented as a whole; in the context it stands at its own indentation.
    original = textwrap.indent(target.body, indent)[len(indent) :].rstrip("\n")
    context = target.context.replace(original, in_place) if target.context else ""
    if not context or original in context:
        context = hidden  # never show the reference
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": (
                f"Implement `{target.qualname}` in `{target.path}`.\n\n"
                f"```python\n{context.rstrip()}\n```\n\nThe function to write:\n"
                f"```python\n{hidden}```"
            ),
        },
    ]


async def codegen(
    session: Session,
    problem: Problem,
    client: ModelClient,
    *,
    n: int = 1,
    ks: Sequence[int] = (1,),
    debug_rounds: int = 0,
    env: PythonEnv | None = None,
    timeout: float = 300.0,
) -> CodegenResult:
    """Sample, splice and score `n` implementations of the problem's target."""
    if problem.harness is None:
        raise WorkflowFailure(f"{problem.id} has no harness; make one with reposim harness first.")
    if n < 1:
        raise WorkflowFailure("n must be at least 1.")
    target = Target.from_dict(problem.target)
    env = module_env(env or PythonEnv(), target, problem.module)
    result = CodegenResult(problem.id, client.model, n, sorted(set(ks)))
    params = {"problem": problem.id, "model": client.model, "n": n, "ks": list(ks)}
    with WorkflowRun(session, "codegen", {**params, "debug_rounds": debug_rounds}) as run:
        await install_runtime(session)
        original = (await session.read_bytes(target.path)).decode("utf-8")
        await session.write(reference_path(target), original, actor=Actor.SYSTEM)
        path = problem.harness.path or harness_path(target)
        await session.write(path, problem.harness.text, actor=Actor.SYSTEM)
        validation = problem.validation
        if validation is None or validation.stale:  # never judged, or judged before an edit
            with run.stage("validate harness") as detail:
                validation = await validate(
                    session,
                    env,
                    target,
                    problem.module,
                    path,
                    Thresholds(repeats=1),
                    suite_tests=problem.harness.suite_tests,
                )
                detail.update(verdict=validation.verdict, reasons=validation.reasons)
        result.harness_verdict = validation.verdict
        result.harness_reasons = list(validation.reasons)
        result.harness_coverage = validation.coverage_rate
        result.harness_parity = ((validation.mutation or {}).get("suite") or {}).get("parity")
        try:
            for index in range(n):
                with run.stage("sample", index=index) as detail:
                    sample = await _sample(
                        session, client, target, original, path, env, index, debug_rounds, timeout
                    )
                    detail.update(
                        passed=sample.passed, passed_first=sample.passed_first, rounds=sample.rounds
                    )
                    if sample.error:
                        detail["error"] = sample.error
                result.samples.append(sample)
        finally:
            if not session.closed:
                await session.write(target.path, original, actor=Actor.SYSTEM)
        run.result(
            n=n,
            correct_first=result.correct_first,
            correct=result.correct,
            pass_at=result.pass_at(),
            pass_at_debug=result.pass_at(debug=True),
            **result.harness_figures(),
        )
    return result


async def _sample(
    session: Session,
    client: ModelClient,
    target: Target,
    original: str,
    harness: str,
    env: PythonEnv,
    index: int,
    debug_rounds: int,
    timeout: float,
) -> Sample:
    sample = Sample(index)
    messages = prompt(target, original)
    for attempt in range(debug_rounds + 1):
        try:
            turn = await ask(session, client, messages)
        except ModelError as exc:
            raise WorkflowFailure(str(exc)) from None
        sample.rounds = attempt + 1
        messages.append({"role": "assistant", "content": turn.content})
        code = code_block(turn.content)
        try:
            if code is None:
                raise SpliceError("there is no Python code block in the answer")
            implementation = extract_function(code, target.name)
            spliced = splice(original, target, implementation)
            compile(spliced, target.path, "exec")
        except (SpliceError, SyntaxError) as exc:
            sample.error = str(exc)
            messages.append(
                {"role": "user", "content": f"That cannot be used: {exc}. Answer again."}
            )
            continue
        sample.error = None
        sample.code = implementation
        await session.write(target.path, spliced, actor=Actor.AGENT)
        run = await session.run_tests(
            harness, command=env.pytest(HARNESS_DIR), actor=Actor.SYSTEM, timeout=timeout
        )
        if run.passed:
            sample.passed = True
            sample.passed_first = attempt == 0
            return sample
        sample.log = run.output[-3000:]
        messages.append(
            {
                "role": "user",
                "content": (
                    "The function fails its tests:\n```\n"
                    f"{run.output[-3000:]}\n```\nFix it and answer with the whole function."
                ),
            }
        )
    return sample
