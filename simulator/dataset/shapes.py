"""JSON Schemas of the third-party shapes we write, from the fields those projects define.

- R2E (r2e-project/r2e, src/r2e/models): a function under test is a `Function` (function_id,
  file -> file_module -> module_id / module_type / repo {repo_org, repo_name, repo_id,
  local_repo_path}, function_code, function_name, function_complexity, context {context_type,
  context}) plus `test_history` {history: [Tests {tests: {id: code}, operation, gen_model,
  gen_date, exec_stats, chat_messages}]}; a method has method_id / method_code / method_name /
  parent_class_id instead. A code-generation problem adds `spec`. R2E's `is_passing` reads
  exec_stats.run_tests_logs[*].valid, its TestGenEvaluator the counts beside it and the
  coverage keys of exec_stats.coverage_logs[0].
- RepoST (yiqingxyq/RepoST, data/ExecEval/checked_test_set_final.json): a JSON list of
  {func_name, idx, repo_name, func_path, orig_func, orig_context, eval_script, coverage_rate,
  coverage_report, sandbox_ast_check, sandbox_functionality_check {reasoning, answer},
  test_correctness_check {reasoning, answer}, commit_id}.
"""

from __future__ import annotations

from typing import Any

# What R2E's TestGenEvaluator.parse_coverage_logs reads (r2e_test_server's R2ECodeCoverage).
R2E_COVERAGE_KEYS = (
    "num_executable_lines",
    "num_excluded_lines",
    "num_unexecuted_lines",
    "num_executed_branches",
    "line_coverage_percentage",
    "branch_coverage_percentage",
)
_IDENTIFIER = {
    "type": "object",
    "required": ["identifier"],
    "properties": {"identifier": {"type": "string", "minLength": 1}},
}
_REPO = {
    "type": "object",
    "required": ["repo_org", "repo_name", "repo_id", "local_repo_path"],
    "properties": {k: {"type": "string"} for k in ("repo_org", "repo_name", "repo_id")}
    | {"local_repo_path": {"type": "string"}},
}
_FILE = {
    "type": "object",
    "required": ["file_module"],
    "properties": {
        "file_module": {
            "type": "object",
            "required": ["module_id", "module_type", "repo"],
            "properties": {
                "module_id": _IDENTIFIER,
                "module_type": {"enum": ["file", "package"]},
                "repo": _REPO,
            },
        }
    },
}
_CONTEXT = {
    "type": ["object", "null"],
    "required": ["context_type", "context"],
    "properties": {"context_type": {"type": "string"}, "context": {"type": "string"}},
}
_TESTS = {
    "type": "object",
    "required": ["tests", "operation"],
    "properties": {
        "tests": {"type": "object", "additionalProperties": {"type": "string"}},
        "operation": {"type": "string"},
        "gen_model": {"type": ["string", "null"]},
        "gen_date": {"type": ["string", "null"]},
        "exec_stats": {
            "type": ["object", "null"],
            "properties": {
                "run_tests_logs": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["valid", "passed_count", "failed_count", "errored_count"],
                        "properties": {"valid": {"type": "boolean"}}
                        | {
                            k: {"type": "integer", "minimum": 0}
                            for k in ("passed_count", "failed_count", "errored_count")
                        },
                    },
                },
                "coverage_logs": {
                    "type": "array",
                    "maxItems": 1,
                    "items": {
                        "type": "object",
                        "required": list(R2E_COVERAGE_KEYS),
                        "properties": {k: {"type": "number"} for k in R2E_COVERAGE_KEYS},
                    },
                },
            },
        },
        "chat_messages": {"type": ["array", "null"]},
    },
}
_HISTORY = {
    "type": "object",
    "required": ["history"],
    "properties": {"history": {"type": "array", "items": _TESTS}},
}

R2E_FUNCTION: dict[str, Any] = {
    "type": "object",
    "required": ["function_id", "file", "function_code", "function_name", "test_history"],
    "properties": {
        "function_id": _IDENTIFIER,
        "file": _FILE,
        "function_code": {"type": "string", "minLength": 1},
        "function_name": {"type": "string"},
        "function_complexity": {"type": ["string", "null"]},
        "context": _CONTEXT,
        "test_history": _HISTORY,
        "spec": {"type": "string"},
    },
}
R2E_METHOD: dict[str, Any] = {
    "type": "object",
    "required": ["method_id", "file", "method_code", "method_name", "parent_class_id"],
    "properties": {
        "method_id": _IDENTIFIER,
        "file": _FILE,
        "method_code": {"type": "string", "minLength": 1},
        "method_name": {"type": "string"},
        "parent_class_id": _IDENTIFIER,
        "context": _CONTEXT,
        "test_history": _HISTORY,
        "spec": {"type": "string"},
    },
}
_CHECK = {
    "type": "object",
    "required": ["reasoning", "answer"],
    "properties": {"reasoning": {"type": "string"}, "answer": {"type": "string"}},
}
REPOST_RECORD: dict[str, Any] = {
    "type": "object",
    "required": [
        "func_name",
        "idx",
        "repo_name",
        "func_path",
        "orig_func",
        "orig_context",
        "eval_script",
        "coverage_rate",
        "coverage_report",
        "sandbox_ast_check",
        "sandbox_functionality_check",
        "test_correctness_check",
        "commit_id",
    ],
    "properties": {
        "func_name": {"type": "string", "minLength": 1},
        "idx": {"type": "string"},
        "repo_name": {"type": "string"},
        "func_path": {"type": "string"},
        "orig_func": {"type": "string"},
        "orig_context": {"type": "string"},
        "eval_script": {"type": "string"},
        "coverage_rate": {"type": "number", "minimum": 0, "maximum": 1},
        "coverage_report": {"type": "string"},
        "sandbox_ast_check": {"type": "boolean"},
        "sandbox_functionality_check": _CHECK,
        "test_correctness_check": _CHECK,
        "commit_id": {"type": "string"},
    },
}
REPOST_FILE: dict[str, Any] = {"type": "array", "items": REPOST_RECORD}
R2E_FILE: dict[str, Any] = {"type": "array", "items": {"anyOf": [R2E_FUNCTION, R2E_METHOD]}}
