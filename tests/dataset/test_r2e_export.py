"""The R2E export, run by R2E's own test server and read as R2E's models and evaluator read it.

`r2e-test-server` (PyPI) is R2E's runner: these tests start it and drive it over rpyc exactly as
R2E's `execute_futs` does. R2E itself (`r2e`) is not on the package index, so its models'
properties and its `TestGenEvaluator` are reproduced below field by field from its code
(r2e-project/r2e, src/r2e/models/tests.py, module.py, identifier.py and
src/r2e/evaluators/testgen.py at 5bff37a), and the records are read through them.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.dataset.schema import Problem
from simulator.dataset.writers import r2e_record, repost_record, write
from tests.dataset.conftest import run_r2e_server

# ---------------------------------------------------------------- R2E, reproduced from its code


def r2e_is_passing(record: dict[str, Any]) -> bool:
    """TestHistory.is_passing."""
    history = record["test_history"]["history"]
    if len(history) == 0:
        return False
    stats = history[-1]["exec_stats"]
    if stats is None or "run_tests_logs" not in stats:
        return False
    return all(logs["valid"] for logs in stats["run_tests_logs"].values())


def r2e_latest(record: dict[str, Any]) -> tuple[dict[str, str], str, dict[str, Any] | None]:
    """BaseUnderTest.tests / .operation / .exec_stats (history[-1]: IndexError when empty)."""
    last = record["test_history"]["history"][-1]
    return last["tests"], last["operation"], last["exec_stats"]


def r2e_relative_module_path(record: dict[str, Any]) -> str:
    """Module.relative_module_path for a `file` module."""
    return record["file"]["file_module"]["module_id"]["identifier"].replace(".", "/") + ".py"


def r2e_evaluate(records: list[dict[str, Any]]) -> dict[str, Any]:
    """TestGenEvaluator.evaluate (its fields that read exec_stats), on the records."""
    metrics: dict[str, Any] = {"runnable": 0, "valid": 0, "errored": 0, "pass_ratios": []}
    metrics |= {"line_cov": [], "branch_cov": [], "executed_lines": [], "executed_branches": []}
    for record in records:
        _, _, stats = r2e_latest(record)
        if stats is None:
            raise ValueError("No execution stats found")
        if "run_tests_logs" not in stats:
            metrics["errored"] += 1
            continue
        metrics["runnable"] += 1
        logs = stats["run_tests_logs"]
        coverage_logs = stats["coverage_logs"]
        is_valid = all(entry["valid"] for entry in logs.values())
        passed = sum(entry["passed_count"] for entry in logs.values())
        failed = sum(entry["failed_count"] for entry in logs.values())
        errored = sum(entry["errored_count"] for entry in logs.values())
        total = passed + failed + errored
        metrics["pass_ratios"].append(passed / total if total > 0 else 0)
        if is_valid:
            metrics["valid"] += 1
            assert len(coverage_logs) == 1, "more than one func was tested?"
            coverage = coverage_logs[0]
            executed = (
                coverage["num_executable_lines"]
                - coverage["num_excluded_lines"]
                - coverage["num_unexecuted_lines"]
            )
            metrics["executed_lines"].append(executed)
            metrics["executed_branches"].append(coverage["num_executed_branches"])
            metrics["line_cov"].append(coverage["line_coverage_percentage"])
            metrics["branch_cov"].append(coverage["branch_coverage_percentage"])
    return metrics


# ------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def exported(
    inflection_problems: list[Problem], method_problems: list[Problem], tmp_path_factory: Any
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for name, problems in (("inflection", inflection_problems), ("shapes", method_problems)):
        path = tmp_path_factory.mktemp("r2e") / f"{name}.r2e.json"
        assert write(problems, path, "r2e") == len(problems)
        out[name] = json.loads(path.read_text())
    return out


def test_r2e_test_server_runs_the_exported_tests(
    exported: dict[str, list[dict[str, Any]]],
    inflection_problems: list[Problem],
    method_problems: list[Problem],
    inflection_repo: Path,
    shapes_repo: Path,
    r2e_server_python: Path,
    tmp_path: Path,
) -> None:
    """Every record's tests load in r2e-test-server (unittest TestCases, nothing of RepoSim
    imported), find one test per recorded call, and pass on the repository's own function;
    a wrong implementation put in its place (R2E's codegen mode) fails them."""
    for name, repo, problems in (
        ("inflection", inflection_repo, inflection_problems),
        ("shapes", shapes_repo, method_problems),
    ):
        records = exported[name]
        wrong = "def humanize(word):\n    return word\n" if name == "inflection" else None
        plan: list[tuple[int, str | None]] = [(i, None) for i in range(len(records))]
        if wrong is not None:
            plan.append((0, wrong))
        work = tmp_path / name
        work.mkdir()
        results = run_r2e_server(r2e_server_python, repo, records, plan, work)
        for result, problem in zip(results, problems, strict=False):
            assert result["init_error"] == "", result["init_error"][-2000:]
            logs = result["logs"]
            assert logs is not None, result["error"][-2000:]
            run = logs["run_tests_logs"]["test_0"]
            assert problem.validation is not None
            assert run["passed_count"] == problem.validation.tests > 0, logs["run_tests_errors"]
            assert run["failed_count"] == run["errored_count"] == 0
            assert run["valid"] is True
            # R2E measures its own coverage (the fixture's `# pragma: no cover` on the class
            # hides the method from it: 0 lines; ours is measured without exclusions)
            assert len(logs["coverage_logs"]) == 1
        if wrong is not None:
            broken = results[-1]
            assert broken["execute_error"] == ""
            run = broken["logs"]["run_tests_logs"]["test_0"]
            assert run["valid"] is False and run["failed_count"] > 0


def test_r2e_models_and_evaluator_read_every_record(
    exported: dict[str, list[dict[str, Any]]],
    inflection_problems: list[Problem],
    method_problems: list[Problem],
    inflection_repo: Path,
    shapes_repo: Path,
) -> None:
    for name, repo, problems in (
        ("inflection", inflection_repo, inflection_problems),
        ("shapes", shapes_repo, method_problems),
    ):
        records = exported[name]
        for record, problem in zip(records, problems, strict=True):
            # ids derived from the path as R2E derives them: the file exists where R2E looks
            relative = r2e_relative_module_path(record)
            assert relative == problem.target["path"]
            assert (repo / relative).is_file()
            code = record.get("function_code") or record.get("method_code")
            assert isinstance(ast.parse(code).body[0], ast.FunctionDef)  # R2E's code_ast
            assert problem.validation is not None
            assert r2e_is_passing(record) is (problem.validation.verdict == "valid")
            tests, operation, _ = r2e_latest(record)
            assert "reposim" not in tests["test_0"].split("# --- helpers inlined")[0]
            assert "from fut_module import" in tests["test_0"]
            assert operation == "generate"
        metrics = r2e_evaluate(records)  # raised KeyError 'passed_count' before issue 23
        assert metrics["runnable"] == len(records)
        assert metrics["valid"] == sum(p.validation.verdict == "valid" for p in problems)  # type: ignore[union-attr]
        assert all(0 <= c <= 100 for c in metrics["branch_cov"] + metrics["line_cov"])
    ids = [r["file"]["file_module"]["module_id"]["identifier"] for r in exported["inflection"]]
    assert set(ids) == {"inflection.__init__"}  # R2E's id of pkg/__init__.py
    [method] = exported["shapes"]
    assert method["method_id"] == {"identifier": "shapes.calc.Account.withdraw"}
    assert method["parent_class_id"] == {"identifier": "shapes.calc.Account"}


def test_an_invalid_verdict_is_not_passing_in_r2e(inflection_problems: list[Problem]) -> None:
    problem = Problem.from_dict(inflection_problems[0].as_dict())
    assert problem.validation is not None
    problem.validation.verdict = "invalid"  # e.g. a mutation score under the threshold
    record = r2e_record(problem)
    assert record is not None
    assert r2e_is_passing(record) is False
    run = record["test_history"]["history"][-1]["exec_stats"]["run_tests_logs"]["test_0"]
    assert run["passed_count"] == problem.validation.tests


def test_problems_without_a_harness_are_left_out_unless_kept(
    inflection_problems: list[Problem], tmp_path: Path
) -> None:
    bare = Problem.from_dict(inflection_problems[0].as_dict())
    bare.harness, bare.validation = None, None
    path = tmp_path / "r2e.json"
    assert write([bare, inflection_problems[1]], path, "r2e") == 1
    assert write([bare], path, "r2e", keep_unharnessed=True) == 1
    [record] = json.loads(path.read_text())
    tests, operation, stats = r2e_latest(record)  # IndexError on an empty history before
    assert tests == {} and operation == "generate" and stats is not None
    assert r2e_is_passing(record) is False
    assert r2e_evaluate([record])["errored"] == 1


# what simulator/harness/format.py writes for calls checked where they happen (issue 22)
IN_SITU_BLOCK = (
    "\nIN_SITU = [\n"
    "    # test_inflection.py::test_camelize, call 0 (not kept: too big)\n"
    "    dict(test='test_inflection.py::test_camelize', call=0),\n"
    "]\n\n\n"
    '@pytest.mark.parametrize("case", IN_SITU, ids=[f"s{i}" for i in range(len(IN_SITU))])\n'
    "def test_in_situ(case):\n"
    "    check_in_situ(candidate, TARGET, IN_SITU, **case)\n"
)


def test_a_harness_with_checks_in_situ_is_not_exported_without_them(
    inflection_problems: list[Problem],
) -> None:
    # its in-situ checks rerun the repository's own tests, which neither R2E's test server nor a
    # RepoST eval_script has: an export of its CASES alone would be weaker than what was validated
    problem = Problem.from_dict(inflection_problems[0].as_dict())
    assert problem.harness is not None and "CASES = [" in problem.harness.text
    problem.harness.text += IN_SITU_BLOCK
    record = r2e_record(problem)
    assert record is not None
    tests, _, stats = r2e_latest(record)
    assert tests == {}
    assert stats is not None and "in situ" in stats["error"]
    assert r2e_is_passing(record) is False
    assert r2e_evaluate([record])["errored"] == 1
    repost = repost_record(problem, 0)
    assert repost is not None and repost["eval_script"] == ""
    assert "in situ" in repost["test_correctness_check"]["reasoning"]
    assert repost["test_correctness_check"]["answer"] == "no"
