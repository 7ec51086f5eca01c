"""Perf harnesses: a plain Python file whose `bench()` exercises one API.

Two ways to write one:
- traced (no model): the repository's tests run under a tracer at both revisions; the tests that
  call the API, pass at both, and can be called without fixtures become the workload;
- by a model (`--model`), given the API's dependency-sliced context; when the quickcheck fails
  at either revision, the error goes back to the model for a bounded number of repairs.

The file is written where the user can read and edit it, and `--harness FILE` reuses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.agent.models import Message, ModelClient, ModelError, ModelTurn

MAX_TRACED_TESTS = 8
CONTEXT_BUDGET = 3000

HARNESS_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_harness",
        "description": "Write the whole perf harness file (Python source).",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "the file's full text"}},
            "required": ["code"],
        },
    },
}

SYSTEM_PROMPT = """You write performance harnesses for Python code.
A harness is one Python file run from the repository's root with the repository importable.
It must define `bench()`, a function without arguments that calls the target API once with a
realistic workload that takes about a millisecond or more. Prepare inputs at module level, outside
bench(). It must work unchanged at two revisions of the repository (before and after a change), so
use only what both revisions offer. Answer by calling write_harness with the file's full text."""


@dataclass(frozen=True)
class TracedTest:
    nodeid: str
    path: str
    function: str
    cls: str | None
    calls: int
    reached: int = 0  # lines of the change (A..B) it executed at B, when they were traced
    unittest: bool = False  # a unittest.TestCase method: run through unittest (setUp, tearDown)


@dataclass
class HarnessSource:
    """Where a harness came from, for the result and the trajectory."""

    kind: str  # traced | model | file
    tests: list[str] = field(default_factory=list)
    # traced: the lines A..B changed, and whether the chosen tests execute any of them
    changed_lines: int | None = None
    reaches_change: bool | None = None
    model: str | None = None
    rounds: int = 0
    tokens: int = 0
    timed: str | None = None  # what the worker times (the harness's TIMED), from the quickcheck

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "timed": self.timed,
            "changed_lines": self.changed_lines,
            "reaches_change": self.reaches_change,
            "tests": self.tests,
            "model": self.model,
            "rounds": self.rounds,
            "tokens": self.tokens,
        }


def usable_tests(traces: Sequence[dict[str, Any]]) -> list[TracedTest]:
    """Tests that call the API, pass, and can be called plainly — at every traced revision."""
    per_revision = []
    for trace in traces:
        usable = {}
        for record in trace.get("tests") or []:
            if record.get("calls") and record.get("outcome") == "passed" and record.get("plain"):
                usable[record["nodeid"]] = record
        per_revision.append(usable)
    if not per_revision:
        return []
    common = set(per_revision[0]).intersection(*per_revision[1:])
    chosen = [per_revision[-1][nodeid] for nodeid in common]
    # the tests that execute the changed lines first (the change is what is measured), then
    # the ones that call the API most
    chosen.sort(key=lambda r: (-bool(r.get("reached")), -int(r["calls"]), r["nodeid"]))
    return [
        TracedTest(
            r["nodeid"],
            r["path"],
            r["function"],
            r.get("cls"),
            int(r["calls"]),
            int(r.get("reached") or 0),
            bool(r.get("unittest")),
        )
        for r in chosen[:MAX_TRACED_TESTS]
    ]


def changed_lines(tree: Path, a: str, b: str) -> dict[str, list[int]]:
    """{path: line numbers at B} of the non-test Python files that A..B changed."""
    import subprocess

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", str(tree), *args], capture_output=True, text=True, check=False
        )
        return proc.stdout if proc.returncode == 0 else ""

    out: dict[str, list[int]] = {}
    for path in git("diff", "--name-only", "--diff-filter=AM", a, b, "--", "*.py").split():
        if is_test_path(path):
            continue
        lines: list[int] = []
        for match in HUNK.finditer(git("diff", "-U0", a, b, "--", path)):
            start, count = int(match.group(1)), int(match.group(2) or 1)
            lines += range(start, start + max(count, 1))
        if lines:
            out[path] = sorted(set(lines))
    return out


HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def is_test_path(path: str) -> bool:
    parts = Path(path).parts
    name = parts[-1]
    return (
        any(p in ("tests", "test", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def collection_failure(trace: dict[str, Any]) -> str | None:
    """One phrase on the collection errors of a traced run, or None when there were none."""
    errors = trace.get("collection_errors") or []
    if not errors:
        return None
    first = errors[0]
    return (
        f"{len(errors)} test file(s) could not be collected (first: {first.get('nodeid')}: "
        f"{first.get('error')})"
    )


def _module_expression(path: str, root: Path) -> tuple[str, str]:
    """How the harness imports a test file: by dotted name inside packages, else by path."""
    parts = Path(path).with_suffix("").parts
    package_dirs = [root.joinpath(*parts[:i]) for i in range(1, len(parts))]
    if parts and all((d / "__init__.py").is_file() for d in package_dirs):
        return "import", ".".join(parts)
    return "path", path


def traced_harness(
    api: str,
    tests: Sequence[TracedTest],
    root: Path,
    revisions: str,
    replay: tuple[str, str] | None = None,
) -> str:
    """The harness text that calls the traced tests, in the order of how often they call `api`.

    `replay` (calls file, revision label): the tests exist at that revision only (renamed or
    split at the other): the first import there captures their calls into the file (pickled
    arguments), and every later import, at both revisions, replays those same calls."""

    lines = [
        f'"""Perf harness for {api}: the repository\'s own tests that call it, traced at '
        f"{revisions} (no model).",
        "",
        "Each test below passed at both revisions and called the API. The calls it makes to the",
        "API are captured when this file is imported, and those calls alone are timed.",
        "Edit freely: this is a plain file, reused with `reposim perf compare --harness FILE`.",
        "",
    ]
    lines += [f"{t.nodeid}: {t.calls} call(s)" for t in tests]
    lines += [
        '"""',
        "",
        "import importlib",
        "import importlib.util",
        "import os",
        "import sys",
        "",
        "",
        "def _load(path):",
        '    """A test file that is not inside a package, imported as pytest would."""',
        "    full = os.path.join(os.getcwd(), path)",
        "    folder = os.path.dirname(full)",
        "    if folder not in sys.path:",
        "        sys.path.insert(0, folder)",
        '    name = "reposim_perf_" + path.replace("/", "_").removesuffix(".py")',
        "    spec = importlib.util.spec_from_file_location(name, full)",
        "    module = importlib.util.module_from_spec(spec)",
        "    sys.modules[name] = module",
        "    spec.loader.exec_module(module)",
        "    return module",
        "",
        "",
    ]
    if any(t.unittest for t in tests):
        lines += [
            "_CLASSES_SET_UP = []",
            "",
            "",
            "def _unittest(cls, name):",
            '    """A TestCase method run as unittest runs it (setUp, the method, tearDown and its',
            "    cleanups; the class's setUpClass once, tearDownClass at exit); errors propagate.",
            '    """',
            "    if cls not in _CLASSES_SET_UP:",
            "        import atexit",
            "",
            "        cls.setUpClass()",
            "        atexit.register(cls.doClassCleanups)",
            "        atexit.register(cls.tearDownClass)",
            "        _CLASSES_SET_UP.append(cls)",
            "    return cls(name).debug",
            "",
            "",
        ]
    modules: dict[str, str] = {}
    imports: list[str] = []
    for test in tests:
        if test.path in modules:
            continue
        variable = f"_tests{len(modules)}"
        how, where = _module_expression(test.path, root)
        if how == "import":
            imports.append(f"{variable} = importlib.import_module({where!r})")
        else:
            imports.append(f"{variable} = _load({where!r})")
        modules[test.path] = variable
    entries: list[str] = []
    for test in tests:
        owner = modules[test.path]
        if test.cls and test.unittest:
            entries.append(f"_unittest({owner}.{test.cls}, {test.function!r}),")
        elif test.cls:
            entries.append(f"{owner}.{test.cls}().{test.function},")
        else:
            entries.append(f"{owner}.{test.function},")
    names = ["", "NAMES = [", *[f"    {t.nodeid!r}," for t in tests], "]"]
    if replay is not None:
        return "\n".join(lines + _replay_lines(api, len(tests), imports, entries, *replay, names))
    lines += [*imports, "", f"API = {api!r}", "TESTS = ["]
    lines += [f"    {entry}" for entry in entries]
    lines += [
        "]",
        *names,
        "",
        "# Each test runs once, here, while the calls it makes to the API are recorded with",
        "# their arguments; the worker then times those calls alone (calls() below), their",
        "# arguments copied afresh before the timer starts, not the rest of the test.",
        "try:",
        "    from reposim_perf_calls import capture",
        "",
        "    CAPTURED = capture(API, TESTS)",
        "except (ImportError, LookupError):  # outside RepoSim's worker, or not importable",
        "    CAPTURED = None",
        "if CAPTURED:",
        "    TIMED = CAPTURED.describe(API, len(TESTS))",
        "elif CAPTURED is not None and CAPTURED.dropped:",
        "    TIMED = (",
        '        f"the whole of {len(TESTS)} test(s): the arguments of the {CAPTURED.dropped} "',
        '        f"call(s) of {API} could not be copied (iterators, generators)"',
        "    )",
        "else:",
        '    TIMED = f"the whole of {len(TESTS)} test(s): no call of {API} could be captured"',
        "",
        "",
        "def calls():",
        "    if CAPTURED:",
        "        return CAPTURED.fresh()",
        "    return [(test, (), {}) for test in TESTS]",
        *_BENCH_LINES,
    ]
    return "\n".join(lines)


# The end of a harness of recorded calls: `bench()` times the calls `calls()` returns;
# `groups()`, the calls of each test and those on scaled inputs, which the worker also times
# one group at a time (see reposim_perf_calls.Captured.groups).
_BENCH_LINES = [
    "",
    "",
    "def bench():",
    "    for func, args, kwargs in calls():",
    "        func(*args, **kwargs)",
    "",
    "",
    "def groups():",
    "    return CAPTURED.groups(NAMES) if CAPTURED else []",
    "",
]


def _replay_lines(
    api: str,
    count: int,
    imports: list[str],
    entries: list[str],
    calls_file: str,
    side: str,
    names: list[str],
) -> list[str]:
    """The rest of a harness whose tests exist at `side` only (renamed or split at the other
    revision): the first import there captures their calls into `calls_file` (the arguments
    pickled), and every later import, at both revisions, replays those same calls."""
    return [
        f"# The tests below are at {side} only (renamed or split at the other revision): their",
        f"# calls to the API are captured at {side} into CALLS_FILE, and both revisions replay",
        "# those calls alone, timed.",
        f"API = {api!r}",
        f"CALLS_FILE = {calls_file!r}",
        "",
        "",
        "def _tests():",
        *[f"    {line}" for line in imports],
        "    return [",
        *[f"        {entry}" for entry in entries],
        "    ]",
        *names,
        "",
        "",
        "from reposim_perf_calls import capture, load_calls, save_calls  # noqa: E402",
        "",
        "if not os.path.exists(CALLS_FILE):",
        "    save_calls(capture(API, _tests()), CALLS_FILE)",
        "CAPTURED = load_calls(API, CALLS_FILE)",
        "if not CAPTURED:",
        "    raise RuntimeError(",
        f'        f"no call of {{API}} could be captured from the tests at {side}, and they are "',
        '        "not at the other revision: nothing to replay"',
        "    )",
        f'TIMED = CAPTURED.describe(API, {count}) + ", captured at {side}, replayed at both"',
        "",
        "",
        "def calls():",
        "    return CAPTURED.fresh()",
        *_BENCH_LINES,
    ]


# -- the model path ---------------------------------------------------------------------------


class HarnessWriter:
    """A conversation with a model that writes a harness, then repairs it from quickcheck errors."""

    def __init__(self, client: ModelClient, api: str, context: str) -> None:
        self.client = client
        self.api = api
        self.messages: list[Message] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": (
                    f"Target API: {self.api}\n\nIts code and what it depends on "
                    f"(dependency-sliced from the repository):\n\n{context}"
                ),
            },
        ]
        self._last: ModelTurn | None = None
        self.tokens = 0
        self.rounds = 0

    async def write(self) -> str:
        return await self._ask()

    async def repair(self, failure: str) -> str:
        """Send the quickcheck failure back (as the answer to the last tool call) and ask again."""
        turn = self._last
        if turn is not None and turn.tool_calls:
            self.messages.append(
                {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": failure}
            )
        else:
            self.messages.append({"role": "user", "content": failure})
        return await self._ask()

    async def _ask(self) -> str:
        self.rounds += 1
        turn = await self.client.complete(self.messages, [HARNESS_TOOL])
        self._last = turn
        self.messages.append(turn.as_message())
        if turn.usage is not None and turn.usage.total_tokens:
            self.tokens += turn.usage.total_tokens
        code = harness_code(turn)
        if code is None:
            raise ModelError(f"{self.client.model} answered without a harness.")
        return code


def harness_code(turn: ModelTurn) -> str | None:
    """The harness in a model's answer: write_harness's argument, or a fenced code block."""
    for call in turn.tool_calls:
        if call.name == "write_harness":
            try:
                code = json.loads(call.arguments).get("code")
            except (ValueError, AttributeError):
                continue
            if isinstance(code, str) and code.strip():
                return code if code.endswith("\n") else code + "\n"
    fenced = re.search(r"```(?:python)?\n(.*?)```", turn.content or "", re.S)
    return fenced.group(1) if fenced else None


def sliced_context(root: Path, api: str, budget: int = CONTEXT_BUDGET) -> str:
    """The API's dependency slice from the code index of `root` (the text given to a model)."""
    from simulator.analysis.index import CodeIndex
    from simulator.analysis.model import Lang

    index = CodeIndex.build(root, langs=(Lang.PYTHON,), workers=1)
    parts = api.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module, qualname = "/".join(parts[:cut]), ".".join(parts[cut:])
        files = {f"{module}.py", f"{module}/__init__.py", f"src/{module}.py"}
        files.add(f"src/{module}/__init__.py")
        for fn in index.find(qualname):
            if fn.path in files:
                return index.slice(fn.id, budget).text
    raise KeyError(f"{api} is not a function or method of the repository at this revision.")
