"""A RepoSim harness as a RepoST evaluation script (`eval_script`).

RepoST's scripts (yiqingxyq/RepoST, data/ExecEval/checked_test_set_final.json) hold the target's
own definition, then a `test_<name>()` comparing it with `<name>_new_implementation`, run under
`if __name__ == "__main__":`. Its generation step (generation/generate.py `make_eval_script`)
finds the definition in the script (`utils.get_function_line_idx`: the one `def <name>` in the
script, or in `class <Class>` for `Class.method`; the line right above it is taken with it when
not blank, for one decorator), keeps its header lines, renames the generated body's function to
`<name>_new_implementation` and inserts it right after the definition. Its evaluation runs the
script with python: success is exit status 0 with no "error" on stderr.

Here the definition is the reference's text; the test replays the harness against the
implementation named `<name>_new_implementation` (a clear failure when there is none: never the
reference instead). The script is self-contained when the target's sliced context holds every
dependency it names (nothing cut, no import of the repository itself, no recorded value that is a
pickle of a repository object); otherwise the script imports the target's module from the
installed repository, takes its names, and says so in its first lines.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from simulator.dataset.r2e_tests import (
    PYTEST_STAND_IN,
    R2ETestError,
    assignment,
    header_statement,
    parse_exportable,
)
from simulator.harness.format import SUPPORT_MODULE
from simulator.harness.runtime import source as runtime_source

SUPPORT = """
import inspect as _reposim_inspect


def _reposim_plain(value):
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    return value
"""


def _support_namespace(cases: str) -> list[str]:
    """Lines that run RepoSim's harness support module, and the recorded cases, in a namespace
    of their own (`_reposim`): their names (`same`, `C`, ...) never reach the target's."""
    support = runtime_source(SUPPORT_MODULE)
    return [
        "# RepoSim's harness support module (standard library only) and the recorded calls,",
        "# run in a namespace of their own",
        "_reposim = {'__name__': 'reposim_harness_support', '__file__': __file__}",
        f"exec({support!r}, _reposim)",
        f"exec({cases!r}, _reposim)",
        "CASES = _reposim['CASES']",
    ]


RUN_FUNCTIONS = """
def _reposim_run(function):
    sets = [{}]
    for names, values in function.__dict__.get("_r2e_params", []):
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        sets = [
            {**known, **dict(zip(names, value if len(names) > 1 else (value,)))}
            for known in sets
            for value in values
        ]
    for arguments in sets:
        try:
            function(**arguments)
        except _R2EPytestSkip:
            pass
"""


@dataclass(frozen=True)
class EvalScript:
    text: str
    self_contained: bool
    note: str  # why the script is or is not self-contained
    cases: int  # recorded calls or test functions it runs


def _imports_of_the_repository(context: str, package: str) -> list[str]:
    tree = ast.parse(context)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] == package:
                out.append(ast.unparse(node))
        elif isinstance(node, ast.Import):
            out += [ast.unparse(node) for a in node.names if a.name.split(".")[0] == package]
    return out


def _self_contained(context: str, package: str, pickles: bool, method: bool) -> str | None:
    """Why the context cannot stand in for the repository (None when it can)."""
    if method:
        return "a method needs its class as the repository defines it"
    if not context.strip():
        return "there is no sliced context"
    try:
        repository = _imports_of_the_repository(context, package)
    except SyntaxError:
        return "the sliced context does not parse"
    tree = ast.parse(context)
    variables = [n for n in tree.body if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)]
    if variables:
        # module code elsewhere in the file may change them (inflection fills its rule lists
        # by calls at module level): only the repository's module has their real values
        return f"the target uses module-level variables ({ast.unparse(variables[0])[:40]}...)"
    if "# cut for the token budget" in context:
        return "the sliced context was cut to its token budget"
    if repository:
        return f"the target's dependencies import the repository ({repository[0]})"
    if pickles:
        return "recorded values are pickles of the repository's objects"
    return None


def eval_script(
    *,
    harness: str,
    body: str,
    qualname: str,
    module: str,
    context: str,
    target_id: str,
) -> EvalScript:
    """The RepoST `eval_script` of a harness for the function or method `qualname`."""
    tree = parse_exportable(harness)
    name = qualname.rsplit(".", 1)[-1]
    class_name = qualname.rsplit(".", 1)[0] if "." in qualname else None
    new = f"{name}_new_implementation"
    cases = assignment(tree.body, "CASES")
    pickles = cases is not None and "P(" in (ast.get_source_segment(harness, cases) or "")
    package = module.split(".")[0]
    # readable values built from the repository's classes (C/O/E/T("pkg.mod.Class", ...))
    built = (
        re.findall(r"\b[COET]\(\s*['\"]([\w.]+)", ast.get_source_segment(harness, cases) or "")
        if cases is not None
        else []
    )
    pickles = pickles or any(path.split(".")[0] == package for path in built)
    why_not = _self_contained(context, package, pickles, class_name is not None)
    lines = [f"# RepoST evaluation script for {target_id} (made by RepoSim)."]
    if why_not is None:
        note = "self-contained: the target's sliced context holds every dependency it names"
        lines += [f"# {note}.", "", context.strip(), ""]
    else:
        note = f"not self-contained: {why_not}; it imports {module} from the installed repository"
        lines += [
            f"# {note}.",
            "import importlib as _reposim_importlib",
            "",
            f"_reposim_module = _reposim_importlib.import_module({module!r})",
            "globals().update(",
            "    {k: v for k, v in vars(_reposim_module).items() if not k.startswith('__')}",
            ")",
            "",
        ]
        definition = body.strip("\n")
        if class_name is not None:
            # the method in a subclass of the repository's class, a blank line above its
            # header (RepoST takes the line above a definition with it when it is not blank)
            lines += [
                f"class {class_name.split('.')[-1]}(_reposim_module.{class_name}):",
                "",
                textwrap.indent(definition, "    "),
                "",
            ]
        else:
            lines += ["", definition, ""]
    lines += ["", SUPPORT.strip("\n"), ""]
    if class_name is not None:
        owner = class_name.split(".")[-1]
        find = (
            f"    implementation = _reposim_plain(\n"
            f"        _reposim_inspect.getattr_static({owner}, {new!r}, None)\n    )\n"
        )
        where = f"in class {owner}"
    else:
        find = f"    implementation = globals().get({new!r})\n"
        where = "in this script"
    message = (
        f"no {new} is defined {where}: RepoST puts the generated function right after "
        f"{name}, under that name"
    )
    missing = f"    if implementation is None:\n        raise AssertionError({message!r})\n"
    if cases is not None:
        segment = ast.get_source_segment(harness, cases) or ast.unparse(cases)
        count = len(cases.value.elts) if isinstance(cases.value, ast.List) else 0
        lines += [
            *_support_namespace(segment),
            "",
            "",
            f"def test_{name}():",
            f'    """Every recorded call of {qualname}: {new} must behave like the reference."""',
            find + missing.rstrip("\n"),
            "    for case in CASES:",
            "        _reposim['check_call'](implementation, **case)",
        ]
    else:
        tests = [
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
        ]
        count = len(tests)
        if not tests:
            raise R2ETestError("the harness has no test functions")
        kept = [
            ast.get_source_segment(harness, node) or ast.unparse(node)
            for node in tree.body
            if not header_statement(node)
        ]
        original = (
            f"_reposim_plain(_reposim_inspect.getattr_static({class_name.split('.')[-1]}, "
            f"{name!r}))"
            if class_name
            else name
        )
        lines += [
            *_support_namespace("CASES = []"),
            PYTEST_STAND_IN.strip("\n"),
            RUN_FUNCTIONS.rstrip("\n"),
            "",
            f"def test_{name}():",
            f'    """The harness\'s tests of {qualname}, {new} as the candidate."""',
            find + missing.rstrip("\n"),
            "    global candidate, reference, same",
            f"    candidate, reference, same = implementation, {original}, _reposim['same']",
            *(f"    _reposim_run({t.name})" for t in tests),
            "",
            "",
            "\n\n".join(kept),
        ]
    lines += ["", "", 'if __name__ == "__main__":', f"    test_{name}()", ""]
    text = "\n".join(lines)
    text = re.sub(r"\n{4,}", "\n\n\n", text)
    return EvalScript(text, why_not is None, note, count)
