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

from simulator.dataset.schema import Problem
from simulator.harness.format import check_harness, standalone

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
    return str(problem.target.get("body") or "")


def r2e_record(problem: Problem, *, round_trip: bool = True) -> dict[str, Any]:
    """A `FunctionUnderTest` / `MethodUnderTest` (with `spec`), as R2E's models dump them."""
    org, repo = _repo_parts(problem)
    module = problem.module or str(problem.target.get("module") or "")
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
    history: list[dict[str, Any]] = []
    if problem.harness is not None:
        validation = problem.validation
        exec_stats: dict[str, Any] | None = None
        if validation is not None:
            exec_stats = {
                "run_tests_logs": {"test_0": {"valid": validation.passed}},
                "coverage_logs": [validation.coverage] if validation.coverage else [],
                "mutation": validation.mutation,
                "verdict": validation.verdict,
            }
        history.append(
            {
                "tests": {"test_0": problem.harness.text},
                "operation": "generate" if problem.harness.generator != "edited" else "edit",
                "gen_model": problem.harness.generator,
                "gen_date": datetime.fromtimestamp(problem.created, UTC).isoformat(),
                "exec_stats": exec_stats,
                "chat_messages": None,
            }
        )
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
    record["test_history"] = {"history": history}
    record["spec"] = str(problem.target.get("docstring") or "")
    if round_trip:
        record[ROUND_TRIP_KEY] = problem.as_dict()
    return record


def repost_record(problem: Problem, idx: int, *, round_trip: bool = True) -> dict[str, Any]:
    """One entry of RepoST's checked_test_set_final.json."""
    name = str(problem.target["name"])
    validation = problem.validation
    text = problem.harness.text if problem.harness else ""
    script = ""
    if text:
        # RepoST scripts get the generated function as `<name>_new_implementation`
        script = standalone(text).replace(
            "candidate = load_candidate(TARGET)",
            f"candidate = globals().get({name + '_new_implementation'!r}) or "
            "load_candidate(TARGET)",
        )
        script += '\n\nif __name__ == "__main__":\n    raise SystemExit(pytest.main([__file__]))\n'
    coverage = (validation.coverage if validation else None) or {}
    mutation = (validation.mutation if validation else None) or {}
    report = (
        f"branch arcs {coverage.get('covered', 0)}/{coverage.get('total', 0)} of "
        f"{problem.target['id']} (coverage.py arcs, target lines only); statements "
        f"{coverage.get('lines_covered', 0)}/{coverage.get('lines_total', 0)}"
        if coverage
        else "not measured"
    )
    passed = bool(validation and validation.passed)
    correctness = (
        f"passes on the reference in {validation.runs} run(s); mutation score "
        f"{mutation.get('score')} ({mutation.get('killed', 0)}/{mutation.get('total', 0)} "
        f"mutants killed); verdict {validation.verdict}"
        + (f": {'; '.join(validation.reasons)}" if validation.reasons else "")
        if validation
        else "not validated"
    )
    record: dict[str, Any] = {
        "func_name": name,
        "idx": str(idx),
        "repo_name": str(problem.repo.get("name") or ""),
        "func_path": str(problem.target["path"]),
        "orig_func": _reference(problem),
        "orig_context": f"```python\n{problem.target.get('context', '')}\n```\n",
        "eval_script": script,
        "coverage_rate": float(coverage.get("rate", 0.0)),
        "coverage_report": report,
        "sandbox_ast_check": bool(text) and check_harness(text) is None,
        "sandbox_functionality_check": {
            "reasoning": "Not sandboxed: the harness imports the function from the repository "
            "at this commit, so the function under test is the original.",
            "answer": "same",
        },
        "test_correctness_check": {
            "reasoning": correctness,
            "answer": "yes" if passed and validation and validation.verdict == "valid" else "no",
        },
        "commit_id": str(problem.repo.get("commit") or ""),
    }
    if round_trip:
        record[ROUND_TRIP_KEY] = problem.as_dict()
    return record


def write(problems: list[Problem], path: Path, fmt: str, *, round_trip: bool = True) -> int:
    """Write `problems` to `path` in `fmt` (reposim JSONL, or an R2E / RepoST JSON list)."""
    if fmt == "reposim":
        return write_jsonl(problems, path)
    if fmt == "r2e":
        records = [r2e_record(p, round_trip=round_trip) for p in problems]
    elif fmt == "repost":
        records = [repost_record(p, i, round_trip=round_trip) for i, p in enumerate(problems)]
    else:
        raise ValueError(f"unknown format {fmt!r} (choose {', '.join(FORMATS)}).")
    _atomic_write(path, json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    return len(records)
