"""Traced harnesses on a real project with a real test suite (issue 14).

The project is a pinned sdist from the package index (bench/corpus/fetch.py; default
toolz==1.0.0, whose sdist ships its tests). `reposim harness --generator traced` runs on every
target `--filter r2e` selects: its test suite runs once under the tracer, and each target gets
a harness validated on the reference (3 runs, branch coverage of the target only, up to 40
mutants). Reported: the share of targets with a valid harness at >= 80% branch coverage and
>= 60% mutation score (the target is >= 60% of targets; model-based pipelines reach that only
with a frontier model), why the others are not, and the time per target as a distribution.

Run: uv run python bench/harness_traced.py [NAME==VERSION] [--out problems.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from pathlib import Path

from bench._harness_progress import HarnessProgress
from bench._report import table
from bench.corpus.fetch import fetch
from simulator.dataset.readers import read_problems
from simulator.dataset.schema import Problem
from simulator.harness.batch import run_repo
from simulator.harness.workflow import HarnessOptions, quartiles


def _q(values: list[float], unit: str = "s") -> str:
    q = quartiles(values)
    if q is None:
        return "-"
    if unit == "%":
        return (
            f"q1 {q['q1']:.0%}  median {q['median']:.0%}  q3 {q['q3']:.0%}  "
            f"min {q['min']:.0%}  max {q['max']:.0%}  (n={q['n']})"
        )
    return (
        f"q1 {q['q1']:.1f}s  median {q['median']:.1f}s  q3 {q['q3']:.1f}s  "
        f"max {q['max']:.1f}s  mean {q['mean']:.1f}s  (n={q['n']})"
    )


def _why(problem: Problem) -> str:
    """The first reason a problem is not valid, without its figures (for counting)."""
    v = problem.validation
    if v is None:
        return "no harness: the repository's tests never call it, or no call could be kept"
    if v.verdict == "valid":
        return "valid"
    if str(problem.curation.state) == "rejected":
        return "no recorded call reproduces on the reference"
    for reason in v.reasons:
        if "coverage" in reason:
            return "branch coverage below the threshold"
    for reason in v.reasons:
        if "mutation" in reason:
            return "mutation score below the threshold"
    return "; ".join(v.reasons)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="toolz==1.0.0")
    parser.add_argument("--out", type=Path, default=Path("bench-harness-problems.jsonl"))
    args = parser.parse_args()
    repo = fetch(args.spec)
    progress = HarnessProgress("trace run of the test suite: {seconds:.1f}s", "  ")

    t0 = time.monotonic()
    summary = asyncio.run(
        run_repo(repo, args.out.resolve(), HarnessOptions(), on_event=progress.watch)
    )
    stage_seconds, trace_seconds = progress.targets, progress.trace
    wall = time.monotonic() - t0
    problems = read_problems(args.out)
    n = len(problems)
    valid = [p for p in problems if p.validation and p.validation.verdict == "valid"]
    reasons: Counter[str] = Counter()
    for p in problems:
        reasons[_why(p)] += 1
    harnessed = [p for p in problems if p.validation is not None]
    coverage = [
        p.validation.coverage_rate
        for p in harnessed
        if p.validation and p.validation.coverage_rate is not None
    ]
    mutation = [
        p.validation.mutation_score
        for p in harnessed
        if p.validation and p.validation.mutation_score is not None
    ]
    per_target = [
        stage_seconds.get(p.target["id"], 0.0) + trace_seconds / max(1, n) for p in problems
    ]
    share = len(valid) / n if n else 0.0
    rows: list[tuple[str, str, str]] = [
        ("project", "-", f"{args.spec} ({repo})"),
        ("targets (--filter r2e)", "-", str(n)),
        ("targets with a harness", "-", f"{len(harnessed)} ({len(harnessed) / max(1, n):.0%})"),
        (
            "valid at >= 80% branch cov, >= 60% mutation",
            ">= 60% of targets (model pipelines: a frontier model)",
            f"{len(valid)} / {n} = {share:.0%}",
        ),
        ("  of targets with a harness", "-", f"{len(valid) / max(1, len(harnessed)):.0%}"),
        ("branch coverage (harnessed)", "-", _q(coverage, "%")),
        ("mutation score (harnessed)", "-", _q(mutation, "%")),
        ("time per target (own stage + trace share)", "-", _q(per_target)),
        ("time per target (own stage only)", "-", _q(list(stage_seconds.values()))),
        ("test-suite trace run (once)", "-", f"{trace_seconds:.1f}s"),
        ("wall time, whole run", "-", f"{wall:.1f}s"),
    ]
    print(table(f"Traced harnesses on {args.spec}", rows))
    print("\noutcome per target (the first reason when not valid):")
    for reason, count in reasons.most_common():
        print(f"  {count:3d}  {reason}")
    print(f"\nproblems: {args.out}  (summary: {summary['valid']} valid of {summary['targets']})")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
