"""The harness file format, `reposim.harness/1`: a plain pytest file anyone can run by hand.

Layout in a workspace:

    .reposim/harness/test_<target slug>.py        the harness
    .reposim/harness/reposim_harness_support.py   its support module (standard library only)
    .reposim/reference/<target path>               the reference file, for equivalence harnesses

Run one with `python -m pytest .reposim/harness/test_<slug>.py` from the workspace root. Every
harness starts with the same header:

    from reposim_harness_support import P, check_call, load_candidate, load_reference
    TARGET = {"path": "pkg/mod.py", "module": "pkg.mod", "qualname": "Class.method"}
    candidate = load_candidate(TARGET)

and its tests call only `candidate` (and `reference`, for a model's equivalence tests). What
`candidate` is, is decided outside the file: the target as it stands in the workspace (the
reference, a mutant, or a generated implementation spliced in its place), or whatever
`REPOSIM_CANDIDATE=module:qualname` names. Traced harnesses list the recorded calls in `CASES`,
one pytest parameter each (ids `c0`, `c1`, ...): arguments as Python literals where `repr`
allows, else `P("<base64 pickle>")` with its readable form in a comment above the case (what
`repr` showed when it was recorded: for reading, the pickle is what runs); the expected return
value or `raises=(type, message)`; `after=` the arguments' state when the reference changed them
in place; `classes=CLASS_STATE[i]` the class attributes the test run had set when the call was
made (written once each in `CLASS_STATE`). A call whose arguments hold one object between them
(a node, and the tree it is in) has `shared=` in place of `args=` and `kwargs=`: all of them
as one value, `(args, kwargs)`, so that what they share stays one object.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from simulator.harness.runtime import source as runtime_source
from simulator.harness.target import Target

SCHEMA = "reposim.harness/1"
REPOSIM_DIR = ".reposim"  # RepoSim's files in a workspace
HARNESS_DIR = f"{REPOSIM_DIR}/harness"
RUNTIME_DIR = f"{REPOSIM_DIR}/runtime"
REFERENCE_DIR = f"{REPOSIM_DIR}/reference"
SUPPORT_MODULE = "reposim_harness_support"
SUPPORT_PATH = f"{HARNESS_DIR}/{SUPPORT_MODULE}.py"
SUPPORT_IMPORT = (
    f"from {SUPPORT_MODULE} import (NOTHING, C, E, F, G, M, N, O, P, R, S, T, check_call, "
    "check_discrimination, check_in_situ, import_paths, load_candidate, load_reference, named, "
    "same)"
)
SELF_CHECK = "test_the_comparator_tells_recorded_results_apart"
DERIVED_MARK = "derived from the call recorded in"
_CASE_ID = re.compile(r"\[([cs])(\d+)\]$")
SHOWN_ARGUMENT = 400  # characters of an argument's readable form in a comment


def harness_path(target: Target) -> str:
    return f"{HARNESS_DIR}/test_{target.slug}.py"


def reference_path(target: Target) -> str:
    return f"{REFERENCE_DIR}/{target.path}"


def target_literal(target: Target, module: str) -> str:
    return json.dumps({"path": target.path, "module": module, "qualname": target.qualname})


def header(target: Target, module: str, generator: str, paths: list[str] | None = None) -> str:
    """The lines every harness starts with (docstring, imports, TARGET, candidate); `paths`
    are workspace directories to import from (where the recorded test run imported from)."""
    return (
        f'"""RepoSim harness ({SCHEMA}, {generator}) for {target.id}.\n\n'
        f"Run by hand: python -m pytest {harness_path(target)}\n"
        "Tests call `candidate`, the target as it stands in the workspace (or what\n"
        'REPOSIM_CANDIDATE=module:qualname names)."""\n\n'
        "import pytest\n\n"
        f"{SUPPORT_IMPORT}  # noqa: F401\n\n"
        f"TARGET = {target_literal(target, module)}\n"
        + (f"import_paths({json.dumps(paths)})\n" if paths else "")
        + "candidate = load_candidate(TARGET)\n"
    )


@dataclass(frozen=True)
class TracedCall:
    """One recorded call: values as {"r": literal source} or {"p": base64 pickle, and "s": its
    readable form when repr gave one}."""

    args: list[dict[str, str]]
    kwargs: dict[str, dict[str, str]]
    returns: dict[str, str] | None = None
    raises: tuple[str, str] | None = None
    after: list[dict[str, str]] | None = None
    test: str = ""
    yields: list[dict[str, str]] | None = None  # a generator's items, bounded
    exhausted: bool = True  # the generator ran to its end (else: the first items only)
    stdout: str | None = None  # what the call printed, when the target prints at all
    stderr: str | None = None
    # a call whose values cannot be kept, checked in situ: {"call": its number among the
    # target's calls in `test`, "why", "shown": its arguments' readable forms, "outcome"}
    in_situ: dict[str, Any] | None = None
    # the class attributes the test run had set when the call was made (rebound or added
    # since their module was imported): {"module:Class": {name: value}}, encoded as one value
    classes: dict[str, str] | None = None
    # not recorded but derived from the recorded call of `test` (what changed in it), its
    # expected values the reference's (see derive.py)
    derived: str | None = None
    # the arguments encoded as one value, `(args, kwargs)`, when two of them hold one object
    # (`args` and `kwargs` then only say what each looks like): the case passes it as `shared`
    shared: dict[str, str] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TracedCall:
        raises = data.get("raises")
        yields = data.get("yields")
        return cls(
            args=list(data.get("args") or []),
            kwargs=dict(data.get("kwargs") or {}),
            returns=data.get("returns"),
            raises=(str(raises[0]), str(raises[1])) if raises else None,
            after=data.get("after"),
            test=str(data.get("test") or ""),
            yields=list(yields) if yields is not None else None,
            exhausted=bool(data.get("exhausted", True)),
            stdout=data.get("stdout"),
            stderr=data.get("stderr"),
            in_situ=data.get("in_situ"),
            classes=data.get("classes"),
            shared=data.get("shared"),
        )

    @property
    def pickled(self) -> bool:
        """Whether any value of the call is kept as a pickle (not readable by eye)."""
        values = [*self.args, *self.kwargs.values(), *(self.after or []), *(self.yields or [])]
        values += [v for v in (self.returns, self.classes, self.shared) if v is not None]
        return any("p" in v or "P(" in v.get("r", "") for v in values)


def _value(encoded: dict[str, str]) -> str:
    if "r" in encoded:
        return encoded["r"]
    return f"P({encoded['p']!r})"


def _readable(call: TracedCall) -> list[str]:
    """Comment lines naming the pickled values of a call as a person can read them (every
    argument, when they are passed together as a pickle, `shared`)."""
    named: list[tuple[str, dict[str, str]]] = [(f"args[{i}]", v) for i, v in enumerate(call.args)]
    named += [(f"kwargs[{k!r}]", v) for k, v in call.kwargs.items()]
    lines = []
    if call.shared is not None:
        lines.append("    # the arguments hold one object between them: passed together, `shared`")
        for name, value in named if "p" in call.shared else []:
            text = " ".join((value.get("s") or value.get("r") or "?").split())
            text = text if len(text) <= SHOWN_ARGUMENT else text[: SHOWN_ARGUMENT - 1] + "…"
            lines.append(f"    # {name}: {text}")
        named = []
    if call.raises is None and call.returns is not None:
        named.append(("returns", call.returns))
    named += [(f"yields[{i}]", v) for i, v in enumerate(call.yields or [])]
    named += [(f"after[{i}]", v) for i, v in enumerate(call.after or [])]
    if call.classes is not None:
        named.append(("classes", call.classes))
    return lines + [
        f"    # {name}: {value['s']}" for name, value in named if "p" in value and value.get("s")
    ]


def _tuple(values: list[dict[str, str]]) -> str:
    items = [_value(v) for v in values]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def render_traced(
    target: Target, module: str, calls: list[TracedCall], paths: list[str] | None = None
) -> str:
    """A harness that replays recorded calls of the reference against `candidate` (`CASES`),
    and checks in situ the calls whose values could not be kept (`IN_SITU`)."""
    generator = "traced from the repository's tests"
    lines = [header(target, module, generator, paths)]
    kept = [c for c in calls if c.in_situ is None]
    if kept:
        lines.extend(_replayed(kept))
    checked = [c for c in calls if c.in_situ is not None]
    if checked:
        lines.extend(_in_situ(checked))
    return "\n".join(lines) + "\n"


def _in_situ(calls: list[TracedCall]) -> list[str]:
    lines = ["", "# Calls checked where they happen: each test runs again with `candidate` in the"]
    lines.append("# target's place, and the call numbered (the target's k-th call in that test)")
    lines.append("# must do what the reference does on a copy of the same live arguments.")
    lines.append("IN_SITU = [")
    for call in calls:
        info = call.in_situ or {}
        lines.append(f"    # {call.test}, call {info.get('call')} (not kept: {info.get('why')})")
        for position, text in enumerate(info.get("shown") or []):
            lines.append(f"    #   args[{position}]: {text}")
        if info.get("outcome"):
            lines.append(f"    #   the reference {info['outcome']}")
        lines.append(f"    dict(test={call.test!r}, call={int(info.get('call') or 0)}),")
    lines.append("]")
    lines.append("")
    lines.append("")
    lines.append(
        '@pytest.mark.parametrize("case", IN_SITU, ids=[f"s{i}" for i in range(len(IN_SITU))])'
    )
    lines.append("def test_in_situ(case):")
    lines.append("    check_in_situ(candidate, TARGET, IN_SITU, **case)")
    return lines


def _class_states(calls: list[TracedCall]) -> tuple[list[str], dict[str, int]]:
    """`CLASS_STATE = [...]`: the distinct class states the calls were made in, written once
    (most calls of a test run share one), and each one's index by its source. A pickled one
    stays in its case, so the case counts as pickled."""
    sources = list(
        dict.fromkeys(c.classes["r"] for c in calls if c.classes is not None and "r" in c.classes)
    )
    if not sources:
        return [], {}
    lines = [
        "",
        "# Class attributes the test run had set when the calls were made (rebound or added",
    ]
    lines.append("# since their module was imported); each case sets its own for the call.")
    lines.append("CLASS_STATE = [")
    lines.extend(f"    {source}," for source in sources)
    lines.append("]")
    return lines, {source: index for index, source in enumerate(sources)}


def _replayed(calls: list[TracedCall]) -> list[str]:
    lines, states = _class_states(calls)
    lines += ["", "CASES = ["]
    prints = any(c.stdout or c.stderr for c in calls)
    for call in calls:
        if call.derived is not None:
            lines.append(f"    # {DERIVED_MARK} {call.test or 'a recorded call'}: {call.derived}")
            lines.append("    # (not recorded: the expected values are the reference's)")
        elif call.test:
            lines.append(f"    # recorded in {call.test}")
        lines.extend(_readable(call))
        lines.append("    dict(")
        if call.shared is not None:
            lines.append(f"        shared={_value(call.shared)},")
        else:
            lines.append(f"        args={_tuple(call.args)},")
        if call.kwargs and call.shared is None:
            pairs = ", ".join(f"{k!r}: {_value(v)}" for k, v in call.kwargs.items())
            lines.append(f"        kwargs={{{pairs}}},")
        if call.raises is not None:
            lines.append(f"        raises={call.raises!r},")
        elif call.returns is not None and call.yields is None:
            lines.append(f"        returns={_value(call.returns)},")
        if call.yields is not None:
            lines.append(f"        yields=[{', '.join(_value(v) for v in call.yields)}],")
            if not call.exhausted:
                lines.append("        exhausted=False,  # the tests read only these items")
        elif prints:
            lines.append(f"        stdout={call.stdout or ''!r},")
            lines.append(f"        stderr={call.stderr or ''!r},")
        if call.after is not None:
            lines.append(f"        after={_tuple(call.after)},")
        if call.classes is not None:
            state = states.get(call.classes.get("r", ""))
            shared = f"CLASS_STATE[{state}]" if state is not None else _value(call.classes)
            lines.append(f"        classes={shared},")
        lines.append("    ),")
    lines.append("]")
    lines.append("")
    lines.append("")
    lines.append(
        '@pytest.mark.parametrize("case", CASES, ids=[f"c{i}" for i in range(len(CASES))])'
    )
    lines.append("def test_behaves_like_the_reference(case):")
    lines.append("    check_call(candidate, **case)")
    results = sum(c.raises is None and (c.returns or c.yields) is not None for c in calls)
    if results > 1:
        lines.append("")
        lines.append("")
        lines.append(f"def {SELF_CHECK}():")
        lines.append(
            '    """Results whose structural dumps differ must compare unequal (else the '
            'comparator is blind here)."""'
        )
        lines.append("    check_discrimination(CASES)")
    return lines


def readable_share(text: str) -> tuple[int, int]:
    """(cases with no pickle, cases) of a traced harness text."""
    cases = readable = 0
    inside = False
    block: list[str] = []
    for line in text.splitlines():
        if line in ("CASES = [", "IN_SITU = ["):
            inside = True
        elif inside and line == "]":
            inside = False
        elif inside and line.startswith("    dict(test="):  # checked in situ: no value kept
            cases += 1
            readable += 1
        elif inside and line == "    dict(":
            block = []
        elif inside and line == "    ),":
            cases += 1
            readable += not any("P(" in b for b in block)
        elif inside:
            block.append(line)
    return readable, cases


def derived_count(text: str) -> int:
    """The cases of a traced harness text derived from recorded ones (not recorded)."""
    return text.count(f"    # {DERIVED_MARK} ")


def case_of(test_id: str) -> tuple[str, int] | None:
    """The case a traced harness's test id stands for: ("c", 3) for `...[c3]` (CASES[3]),
    ("s", 1) for `...[s1]` (IN_SITU[1])."""
    match = _CASE_ID.search(test_id)
    return (match.group(1), int(match.group(2))) if match else None


def check_harness(text: str) -> str | None:
    """Why a harness text does not follow the format, or None when it does."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return f"it is not valid Python (line {exc.lineno}: {exc.msg})"
    names = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    if "candidate" not in names:
        return "it does not bind `candidate` (candidate = load_candidate(TARGET))"
    tests = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    if not tests:
        return "it has no test functions"
    return None


def standalone(text: str) -> str:
    """The harness with its support module inlined: one self-contained file (dataset exports).

    No `from __future__` line: code may be put in front of it (RepoST adds the candidate
    there); the support module runs on Python >= 3.10 without it."""
    support = runtime_source(SUPPORT_MODULE)
    support = support.replace("from __future__ import annotations\n", "")
    body = text.replace(f"{SUPPORT_IMPORT}  # noqa: F401\n", "")
    return f"# --- {SUPPORT_MODULE} (inlined) ---\n{support}\n# --- harness ---\n{body}"
