"""The RepoST export, through RepoST's generation step and its evaluation.

RepoST (yiqingxyq/RepoST) is not on the package index, so its contract is reproduced here
field by field from its code (utils.py `get_function_line_idx`, `extract_func`,
`get_func_body_line_idx`, `rename_func`, `insert_new_func_after_exist_func`;
generation/generate.py `make_eval_script` in its `new_implementation` mode; utils_exec.py: a
script passes when python exits 0 with no "error" on stderr): the generated function is put
into each exported `eval_script` the way RepoST puts it, and the script is run.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from simulator.dataset.schema import Problem
from simulator.dataset.writers import repost_record, write

# ------------------------------------------------------------- RepoST, reproduced from its code


def repost_locate(script: str, func_name: str, class_name: str | None) -> tuple[int, int] | None:
    """0-based first and last line of the one definition of the target in the script (the
    line above `def` comes with it when it is not blank: one decorator)."""
    tree = ast.parse(script)
    found: list[ast.FunctionDef] = []
    for node in ast.walk(tree):
        if class_name is None and isinstance(node, ast.FunctionDef) and node.name == func_name:
            found.append(node)
        if class_name is not None and isinstance(node, ast.ClassDef) and node.name == class_name:
            found += [
                sub
                for sub in node.body
                if isinstance(sub, ast.FunctionDef) and sub.name == func_name
            ]
    if len(found) != 1:
        return None
    start, end = found[0].lineno - 1, (found[0].end_lineno or found[0].lineno) - 1
    lines = script.split("\n")
    if start > 0 and lines[start - 1].strip():
        start -= 1
    return start, end


def repost_make_eval_script(body: str, script: str, func_name: str, class_name: str | None) -> str:
    """`make_eval_script(generation, eval_script, func_name, class_name)`: the generated body
    under the original's header lines, renamed `<name>_new_implementation`, inserted right
    after the original. Raises TypeError where RepoST's does (no definition found)."""
    located = repost_locate(script, func_name, class_name)
    start, end = located  # type: ignore[misc]  # TypeError when None, as in RepoST
    lines = script.split("\n")
    func_code = "\n".join(lines[start : end + 1])
    snippet = ast.parse(textwrap.dedent(func_code))
    [function] = [n for n in snippet.body if isinstance(n, ast.FunctionDef) and n.name == func_name]
    first = function.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    body_start = (function.body[1] if docstring else first).lineno - 1
    header = func_code.split("\n")[:body_start]
    gt_line = func_code.split("\n")[body_start]
    gt_indent = gt_line[: len(gt_line) - len(gt_line.lstrip())]
    generation = textwrap.indent(textwrap.dedent(body), gt_indent)
    new = "\n".join([*header, generation])
    new = new.replace(f"def {func_name}", f"def {func_name}_new_implementation", 1)
    lines.insert(end + 1, f"\n{new}\n")
    return "\n".join(lines)


def repost_run(script: str, work: Path, repo: Path | None) -> tuple[bool, str]:
    """utils_exec.run_program + direct_return: success is exit 0 and no "error" on stderr."""
    path = work / "execution_test.py"
    path.write_text(script)
    env = {"PATH": "/usr/bin:/bin"} | ({"PYTHONPATH": str(repo)} if repo else {})
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=300,
        check=False,
    )
    failed = done.returncode != 0 or any(k in done.stderr for k in ("ERROR", "Error", "error"))
    return not failed, done.stderr


def body_of(code: str) -> str:
    """The statements of a function's text after its docstring (what a model writes)."""
    function = ast.parse(code).body[0]
    assert isinstance(function, ast.FunctionDef)
    first = function.body[0]
    skip = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    start = (function.body[1] if skip else first).lineno - 1
    return "\n".join(code.split("\n")[start : function.end_lineno])


# ------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def exported(
    inflection_problems: list[Problem], method_problems: list[Problem], tmp_path_factory: Any
) -> list[tuple[dict[str, Any], Path]]:
    out = []
    for problems, repo_fixture in ((inflection_problems, "inflection"), (method_problems, "m")):
        path = tmp_path_factory.mktemp("repost") / f"{repo_fixture}.json"
        assert write(problems, path, "repost") == len(problems)
        out += [(record, path) for record in json.loads(path.read_text())]
    return out


def test_repost_generation_and_evaluation_accept_every_script(
    exported: list[tuple[dict[str, Any], Path]],
    inflection_repo: Path,
    shapes_repo: Path,
    tmp_path: Path,
) -> None:
    assert len(exported) == 4
    for number, (record, _) in enumerate(exported):
        work = tmp_path / str(number)
        work.mkdir()
        func_name = record["func_name"]
        class_name = func_name.split(".")[0] if "." in func_name else None
        name = func_name.split(".")[-1]
        script = record["eval_script"]
        home = shapes_repo if record["func_path"].startswith("shapes/") else inflection_repo
        repo = None if record["reposim_self_contained"] else home
        # the right implementation (the original's own body) passes
        right = repost_make_eval_script(body_of(record["orig_func"]), script, name, class_name)
        passed, stderr = repost_run(right, work, repo)
        assert passed, stderr[-3000:]
        # a wrong one fails
        wrong = repost_make_eval_script("    return None\n", script, name, class_name)
        assert repost_run(wrong, work, repo)[0] is False
        # no implementation at all fails, saying what is missing (never the original instead)
        passed, stderr = repost_run(script, work, repo)
        assert not passed
        assert f"no {name}_new_implementation is defined" in stderr
    contained = {record["func_name"]: record["reposim_self_contained"] for record, _ in exported}
    assert set(contained) == {"humanize", "underscore", "singularize", "Account.withdraw"}
    # humanize needs only its sliced context (the script ran without the repository); a
    # method's script imports its class from the repository, and says so
    assert contained["humanize"] is True
    assert contained["Account.withdraw"] is False
    method = next(r for r, _ in exported if r["func_name"] == "Account.withdraw")
    assert "not self-contained" in method["eval_script"].split("\n")[1]
    assert inflection_repo.exists()


def test_an_empty_harness_carries_no_coverage_or_check_flags(
    inflection_problems: list[Problem],
) -> None:
    problem = Problem.from_dict(inflection_problems[0].as_dict())
    assert problem.harness is not None
    problem.harness.text = problem.harness.text.split("CASES = [")[0] + "CASES = []\n"
    record = repost_record(problem, 0)
    assert record is not None
    assert record["coverage_rate"] == 0.0
    assert record["sandbox_ast_check"] is False
    assert record["test_correctness_check"]["answer"] == "no"
    bare = Problem.from_dict(inflection_problems[0].as_dict())
    bare.harness = None
    assert repost_record(bare, 0) is None
