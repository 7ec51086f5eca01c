"""Writing problems: RepoSim's JSONL, and the R2E and RepoST shapes.

Each shaped record also carries the whole problem under `reposim_problem` (both projects'
loaders ignore keys they do not know), so that importing a shaped export gives back exactly the
problems that were exported; `round_trip=False` leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.analysis.code_text import standalone_definition
from simulator.dataset.r2e_tests import R2E_TEST_ID, R2ETestError, r2e_test
from simulator.dataset.repost_script import EvalScript, eval_script
from simulator.dataset.schema import Problem
from simulator.harness.format import check_harness

FORMATS = ("reposim", "r2e", "repost")
ROUND_TRIP_KEY = "reposim_problem"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(path)


def write_jsonl(problems: Iterable[Problem], path: Path) -> int:
    lines = [json.dumps(p.as_dict(), ensure_ascii=False) for p in problems]
    _atomic_write(path, "".join(line + "\n" for line in lines))
    return len(lines)


def _repo_parts(problem: Problem) -> tuple[str, str]:
    name = str(problem.repo.get("name") or "repo")
    org, _, repo = name.rpartition("___")
    return (org or repo or name), (repo or name)


def _reference(problem: Problem) -> str:
    """The reference implementation's text, standing alone (decorators dedented with it)."""
    return standalone_definition(str(problem.target.get("body") or ""))


def r2e_module_id(path: str) -> str:
    """R2E's module id of a file, derived from its path as `Identifier.from_relative_path`
    does: `.py` off, `/` to `.` (`pkg/__init__.py` -> `pkg.__init__`), so that R2E's
    `relative_module_path` names the file again."""
    return (path[:-3] if path.endswith(".py") else path).replace("/", ".")


def _percent(part: int, whole: int, empty: float) -> float:
    return part / whole * 100 if whole else empty


def r2e_coverage(problem: Problem) -> dict[str, Any] | None:
    """Our coverage of the target in the keys of R2E's `R2ECodeCoverage.report_coverage`
    (r2e_test_server/testing/codecov.py): statements of the function, executed lines =
    executable - excluded - unexecuted, branch arcs out of lines with several exits, and
    percentages in 0-100 (a function without branches has 100% branch coverage, as R2E says)."""
    validation = problem.validation
    coverage = validation.coverage if validation is not None else None
    if not coverage:
        return None
    lines, covered = int(coverage["lines_total"]), int(coverage["lines_covered"])
    arcs, taken = int(coverage["total"]), int(coverage["covered"])
    missing: dict[str, list[int]] = {}
    for start, end in coverage.get("missing") or []:
        missing.setdefault(str(start), []).append(int(end))
    return {
        "num_executable_lines": lines,
        "num_excluded_lines": 0,  # measured with no exclusion rules (harness/branches.py)
        "num_unexecuted_lines": lines - covered,
        "line_coverage_percentage": _percent(covered, lines, 0.0),
        "start_line": int(problem.target.get("start_line") or 0),
        "end_line": int(problem.target.get("end_line") or 0),
        "unexecuted_lines": list(coverage.get("missed_lines") or []),
        "num_executed_branches": taken,
        "num_missing_branches": arcs - taken,
        "branch_coverage_percentage": _percent(taken, arcs, 100.0),
        "unevaluated_branches": missing,
    }


def r2e_exec_stats(problem: Problem) -> dict[str, Any]:
    """`exec_stats` of the latest tests, as R2E's `self_equiv_futs` stores the test server's
    `submit` logs: `run_tests_logs` (per test text: `valid`, counts and names of passed, failed
    and errored tests), `run_tests_errors`, `coverage_logs` (one entry, for the function under
    test). `valid` is our verdict (every test passes on the reference in every run, and the
    coverage and mutation thresholds are met), so R2E's `is_passing` agrees with it. A problem
    never validated has only `error`, as R2E records a run that could not start."""
    validation = problem.validation
    if validation is None:
        return {"output": "", "error": "Error: the harness was never validated"}
    failing = set(validation.failing) | set(validation.flaky)
    errored = sorted(t for t in failing if t == "<collection>")
    failed = sorted(failing - set(errored))
    passed_count = max(validation.tests - len(failed), 0)
    valid = validation.passed and validation.verdict == "valid"
    logs = {
        "valid": valid,
        "passed_count": passed_count,
        "passed_names": [],  # validation keeps the names of the tests that did not pass
        "failed_count": len(failed),
        "failed_names": failed,
        "errored_count": len(errored),
        "errored_names": errored,
        "skipped_count": 0,
        "expected_failures": 0,
        "unexpected_successes": 0,
    }
    errors = [
        {"type": "FAIL", "test": name, "message": validation.log[-2000:]}
        for name in failed + errored
    ]
    coverage = r2e_coverage(problem)
    return {
        "run_tests_logs": {R2E_TEST_ID: logs},
        "run_tests_errors": {R2E_TEST_ID: errors},
        "coverage_logs": [coverage] if coverage is not None else [],
        "verdict": validation.verdict,
        "reasons": list(validation.reasons),
        "mutation": validation.mutation,
    }


def r2e_record(
    problem: Problem, *, round_trip: bool = True, keep_unharnessed: bool = False
) -> dict[str, Any] | None:
    """A `FunctionUnderTest` / `MethodUnderTest` (with `spec`), as R2E's models dump them;
    None for a problem without a harness unless `keep_unharnessed` (then its one history entry
    has no tests and an `error`, which R2E's properties and its evaluator read as errored)."""
    org, repo = _repo_parts(problem)
    path = str(problem.target["path"])
    module = r2e_module_id(path)
    qualname = str(problem.target["qualname"])
    repo_id = f"{org}___{repo}" if org != repo else repo
    file = {
        "file_module": {
            "module_id": {"identifier": module},
            "module_type": "file",
            "repo": {
                "repo_org": org,
                "repo_name": repo,
                "repo_id": repo_id,
                "local_repo_path": repo_id,
            },
        }
    }
    gen_date = datetime.fromtimestamp(problem.created, UTC).isoformat()
    entry: dict[str, Any] = {
        "tests": {},
        "operation": "generate",
        "gen_model": None,
        "gen_date": gen_date,
        "exec_stats": {"output": "", "error": "Error: no harness was made for this target"},
        "chat_messages": None,
    }
    if problem.harness is not None:
        entry["operation"] = "generate" if problem.harness.generator != "edited" else "edit"
        entry["gen_model"] = problem.harness.generator
        try:
            entry["tests"] = {R2E_TEST_ID: r2e_test(problem.harness.text, qualname, problem.id)}
            entry["exec_stats"] = r2e_exec_stats(problem)
        except R2ETestError as exc:
            entry["exec_stats"] = {"output": "", "error": f"Error: {exc}"}
    elif not keep_unharnessed:
        return None
    record: dict[str, Any]
    name = qualname.rsplit(".", 1)[-1]
    if problem.target.get("kind") == "method":
        record = {
            "method_id": {"identifier": f"{module}.{qualname}"},
            "file": file,
            "method_code": _reference(problem),
            "method_name": name,
            "parent_class_id": {"identifier": f"{module}.{qualname.rsplit('.', 1)[0]}"},
        }
    else:
        record = {
            "function_id": {"identifier": f"{module}.{qualname}"},
            "file": file,
            "function_code": _reference(problem),
            "function_name": name,
            "function_complexity": None,
        }
    record["context"] = {"context_type": "sliced", "context": problem.target.get("context", "")}
    record["test_history"] = {"history": [entry]}
    record["spec"] = str(problem.target.get("docstring") or "")
    if round_trip:
        record[ROUND_TRIP_KEY] = problem.as_dict()
    return record


def repost_record(
    problem: Problem, idx: int, *, round_trip: bool = True, keep_unharnessed: bool = False
) -> dict[str, Any] | None:
    """One entry of RepoST's checked_test_set_final.json; None for a problem without a harness
    unless `keep_unharnessed` (then with an empty script and every check false)."""
    qualname = str(problem.target["qualname"])
    # RepoST names a method `Class.method` and derives the class from it (generate.py)
    func_name = qualname if problem.target.get("kind") == "method" else str(problem.target["name"])
    validation = problem.validation
    text = problem.harness.text if problem.harness else ""
    if not text and not keep_unharnessed:
        return None
    script: EvalScript | None = None
    problem_note = ""
    if text:
        try:
            script = eval_script(
                harness=text,
                body=_reference(problem),
                qualname=qualname,
                module=problem.module or str(problem.target.get("module") or ""),
                context=str(problem.target.get("context") or ""),
                target_id=str(problem.target["id"]),
            )
        except R2ETestError as exc:
            problem_note = f"no evaluation script: {exc}"
    runs = script is not None and script.cases > 0 and validation is not None
    coverage = (validation.coverage if validation and runs else None) or {}
    mutation = (validation.mutation if validation else None) or {}
    report = (
        f"branch arcs {coverage.get('covered', 0)}/{coverage.get('total', 0)} of "
        f"{problem.target['id']} (coverage.py arcs, target lines only); statements "
        f"{coverage.get('lines_covered', 0)}/{coverage.get('lines_total', 0)}"
        if coverage
        else "not measured"
    )
    valid = bool(runs and validation and validation.passed and validation.verdict == "valid")
    correctness = (
        f"passes on the reference in {validation.runs} run(s); mutation score "
        f"{mutation.get('score')} ({mutation.get('killed', 0)}/{mutation.get('total', 0)} "
        f"mutants killed); verdict {validation.verdict}"
        + (f": {'; '.join(validation.reasons)}" if validation.reasons else "")
        if validation and runs
        else problem_note or "no tests to run"
    )
    record: dict[str, Any] = {
        "func_name": func_name,
        "idx": str(idx),
        "repo_name": str(problem.repo.get("name") or ""),
        "func_path": str(problem.target["path"]),
        "orig_func": _reference(problem),
        "orig_context": f"```python\n{problem.target.get('context', '')}\n```\n",
        "eval_script": script.text if script is not None else "",
        "coverage_rate": float(coverage.get("rate", 0.0)) if runs else 0.0,
        "coverage_report": report,
        "sandbox_ast_check": bool(runs) and check_harness(text) is None,
        "sandbox_functionality_check": {
            "reasoning": (
                f"The script holds the original function and is {script.note}."
                if script is not None
                else problem_note or "no harness"
            ),
            "answer": "same" if runs else "no",
        },
        "test_correctness_check": {
            "reasoning": correctness,
            "answer": "yes" if valid else "no",
        },
        "commit_id": str(problem.repo.get("commit") or ""),
        "reposim_self_contained": bool(script and script.self_contained),
    }
    if round_trip:
        record[ROUND_TRIP_KEY] = problem.as_dict()
    return record


def write(
    problems: list[Problem],
    path: Path,
    fmt: str,
    *,
    round_trip: bool = True,
    keep_unharnessed: bool = False,
) -> int:
    """Write `problems` to `path` in `fmt` (reposim JSONL, or an R2E / RepoST JSON list).

    R2E and RepoST records are for problems with a harness; `keep_unharnessed` keeps the
    others in the R2E shape (see `r2e_record`)."""
    if fmt == "reposim":
        return write_jsonl(problems, path)
    records: list[dict[str, Any]]
    if fmt == "r2e":
        shaped = (
            r2e_record(p, round_trip=round_trip, keep_unharnessed=keep_unharnessed)
            for p in problems
        )
        records = [r for r in shaped if r is not None]
    elif fmt == "repost":
        made = (
            repost_record(p, i, round_trip=round_trip, keep_unharnessed=keep_unharnessed)
            for i, p in enumerate(problems)
        )
        records = [r for r in made if r is not None]
    else:
        raise ValueError(f"unknown format {fmt!r} (choose {', '.join(FORMATS)}).")
    _atomic_write(path, json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    return len(records)
