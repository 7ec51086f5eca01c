"""A RepoSim harness rewritten in R2E's test form, for `r2e-test-server`.

R2E's test server (r2e_test_server.testing) loads the file under test as the module
`fut_module`, execs a renamed copy of the function (or of the method's class) into it as
`reference_<name>`, and execs each test text in a namespace made of that module's names. It
runs every `unittest.TestCase` class the text defines and reports, per test text, `valid`,
`passed_count`, `failed_count`, `errored_count` and their names; R2E's own generated tests start
with `from fut_module import <name>, reference_<name>` (its prompt's starter code).

The rewritten harness keeps that contract and imports nothing of RepoSim: the helpers a RepoSim
harness calls (`same`, `P`, ...) are inlined from its support module, `candidate` and `reference`
are bound to the function under test and R2E's reference, and the tests become TestCase methods:

- a traced harness: one method per recorded call (`test_c0`, `test_c1`, ...) checking that
  R2E's reference and then the candidate do what the reference was recorded doing (returned,
  yielded, printed or raised, and the arguments' state afterwards), with the harness's own
  `check_call`; its other checks (the comparator's self-check) one method each;
- a model-written or edited harness (pytest functions calling `candidate` and `reference`): one
  method per test function and parameter set; a small stand-in for the `pytest` names such
  harnesses use (`pytest.raises`, `pytest.mark.parametrize`, `pytest.approx`, skip marks) is
  inlined, so pytest need not be installed where R2E runs.
"""

from __future__ import annotations

import ast

from simulator.harness.format import SUPPORT_MODULE
from simulator.harness.runtime import source as runtime_source

R2E_TEST_ID = "test_0"

# Lines of a RepoSim harness header that R2E's form replaces.
_HEADER_NAMES = frozenset({"TARGET", "candidate", "reference"})

PYTEST_STAND_IN = """
class _R2EPytestRaises:
    def __init__(self, expected, match=None):
        self.expected, self.match, self.value = expected, match, None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            raise AssertionError(f"DID NOT RAISE {self.expected}")
        if not issubclass(kind, self.expected):
            return False
        if self.match is not None and re.search(self.match, str(value)) is None:
            raise AssertionError(f"{str(value)!r} does not match {self.match!r}")
        self.value = value
        return True


class _R2EPytestApprox:
    def __init__(self, expected, rel=1e-06, abs=1e-12):
        self.expected, self.rel, self.abs = expected, rel, abs

    def __eq__(self, actual):
        if isinstance(self.expected, (list, tuple)):
            return len(actual) == len(self.expected) and all(
                _R2EPytestApprox(e, self.rel, self.abs) == a
                for a, e in zip(actual, self.expected)
            )
        return math.isclose(actual, self.expected, rel_tol=self.rel, abs_tol=self.abs)


class _R2EPytestMark:
    @staticmethod
    def parametrize(names, values, ids=None, **ignored):
        def mark(function):
            function.__dict__.setdefault("_r2e_params", []).insert(0, (names, list(values)))
            return function

        return mark

    def __getattr__(self, name):
        def mark(*args, **kwargs):
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]
            return lambda function: function

        return mark


class _R2EPytestSkip(Exception):
    pass


def _r2e_pytest_skip(reason=""):
    raise _R2EPytestSkip(reason)


def _r2e_pytest_fail(reason=""):
    raise AssertionError(reason)


class pytest:
    raises = _R2EPytestRaises
    approx = _R2EPytestApprox
    mark = _R2EPytestMark()
    skip = staticmethod(_r2e_pytest_skip)
    fail = staticmethod(_r2e_pytest_fail)
"""

CASE_CHECK = """
def _r2e_case_test(case):
    def test(self):
        # the reference's recorded behaviour: what it returned, yielded, printed or raised
        check_call(reference, **case)
        check_call(candidate, **case)

    return test


def _r2e_plain_test(function):
    def test(self):
        function()

    return test
"""

FUNCTION_TESTS = """
def _r2e_function_tests(function):
    sets = [((), ())]
    for names, values in function.__dict__.get("_r2e_params", []):
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        grown = []
        for known, bound in sets:
            for value in values:
                value = value if len(names) > 1 else (value,)
                grown.append((known + tuple(names), bound + tuple(value)))
        sets = grown
    tests = []
    for names, values in sets:
        def test(self, names=names, values=values):
            try:
                function(**dict(zip(names, values)))
            except _R2EPytestSkip as skipped:
                self.skipTest(str(skipped))

        tests.append(test)
    return tests
"""


class R2ETestError(ValueError):
    """A harness that cannot be put in R2E's form; the message says why."""


def _support() -> str:
    support = runtime_source(SUPPORT_MODULE)
    return support.replace("from __future__ import annotations\n", "")


def header_statement(node: ast.stmt) -> bool:
    """Whether a top-level statement of a RepoSim harness belongs to its header."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return isinstance(node.value.value, str)  # the docstring
    if isinstance(node, ast.Import) and any(a.name == "pytest" for a in node.names):
        return True
    if isinstance(node, ast.ImportFrom) and node.module == SUPPORT_MODULE:
        return True
    if isinstance(node, ast.Assign):
        names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        return bool(names) and names <= _HEADER_NAMES
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Name) and func.id == "import_paths"
    return False


def _class_name(qualname: str) -> str:
    return "Test" + "".join(part[:1].upper() + part[1:] for part in qualname.split("."))


def assignment(body: list[ast.stmt], name: str) -> ast.Assign | None:
    """The module-level statement of `body` that assigns `name` (`CASES = [...]`), if any."""
    return next(
        (
            node
            for node in body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ),
        None,
    )


def parse_exportable(harness_text: str) -> ast.Module:
    """The harness's syntax tree, if it can leave RepoSim: calls checked in situ (`IN_SITU`)
    rerun the repository's own tests, which an exported test does not have, and an export of its
    other checks alone would be weaker than the harness that was validated."""
    try:
        tree = ast.parse(harness_text)
    except SyntaxError as exc:
        raise R2ETestError(f"the harness is not valid Python (line {exc.lineno})") from None
    if assignment(tree.body, "IN_SITU") is not None:
        raise R2ETestError(
            "the harness checks calls in situ (IN_SITU), rerunning the repository's own tests; "
            "an exported test cannot, so it is not exported"
        )
    return tree


def r2e_test(harness_text: str, qualname: str, target_id: str) -> str:
    """The R2E test text for a RepoSim harness of the function or method `qualname`."""
    tree = parse_exportable(harness_text)
    root, _, rest = qualname.partition(".")
    bind = (
        f"candidate = resolve({root}, {rest!r})\nreference = resolve(reference_{root}, {rest!r})\n"
        if rest
        else f"candidate = {root}\nreference = reference_{root}\n"
    )
    head = (
        f'"""R2E form of the RepoSim harness for {target_id}: the candidate `{qualname}` must\n'
        'behave like the reference on every test."""\n\n'
        "import math\nimport re\nimport unittest\n\n"
        f"from fut_module import {root}, reference_{root}\n\n"
        f"# --- helpers inlined from {SUPPORT_MODULE} ---\n{_support()}\n"
        f"# --- the function under test and R2E's reference ---\n{bind}"
    )
    body = [node for node in tree.body if not header_statement(node)]
    cases = assignment(body, "CASES")
    name = _class_name(qualname)
    if cases is not None:  # a traced harness: the recorded calls, and its other checks
        segment = ast.get_source_segment(harness_text, cases) or ast.unparse(cases)
        others = [
            node
            for node in body
            if isinstance(node, ast.FunctionDef)
            and node.name.startswith("test")
            and not node.decorator_list
            and not node.args.args
        ]
        code = "\n\n".join(
            ast.get_source_segment(harness_text, node) or ast.unparse(node) for node in others
        )
        adders = "".join(
            f'setattr({name}, "{node.name}", _r2e_plain_test({node.name}))\n' for node in others
        )
        return (
            f"{head}\n{segment}\n{CASE_CHECK}\n\n{code}\n\n\n"
            f"class {name}(unittest.TestCase):\n"
            f'    """Recorded calls of {qualname}: the reference and the candidate."""\n\n\n'
            "for _r2e_index, _r2e_case in enumerate(CASES):\n"
            f'    setattr({name}, f"test_c{{_r2e_index}}", _r2e_case_test(_r2e_case))\n'
            f"{adders}"
        )
    tests = [
        node.name
        for node in body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    ]
    if not tests:
        raise R2ETestError("the harness has no test functions")
    code = "\n\n".join(
        ast.get_source_segment(harness_text, node) or ast.unparse(node) for node in body
    )
    adders = "\n".join(
        f"for _r2e_n, _r2e_t in enumerate(_r2e_function_tests({t})):\n"
        f'    setattr({name}, f"{t}_{{_r2e_n}}", _r2e_t)'
        for t in tests
    )
    return (
        f"{head}\n{PYTEST_STAND_IN}\n\n{code}\n{FUNCTION_TESTS}\n\n"
        f"class {name}(unittest.TestCase):\n"
        f'    """{qualname}: the harness\'s tests, the candidate against the reference."""\n\n\n'
        f"{adders}\n"
    )
