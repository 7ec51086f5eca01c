"""Filters for picking benchmark targets among extracted functions.

Each is switchable by name on the command line (`--filter NAME[=VALUE]`, repeatable or
comma-separated). Two presets: `r2e` is R2E's own rules, reproduced exactly on Python's `ast`
(see `r2e.py`); `reposim`, the default, is what we keep for a benchmark, each difference from
R2E argued in docs/extract-filters.md. `FILTERS` is what `reposim extract --list-filters` prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from simulator.analysis import r2e
from simulator.analysis.code_text import parses_as_python
from simulator.analysis.model import FileRecord, FunctionRecord, Lang

if TYPE_CHECKING:
    from simulator.analysis.graph import CallGraph

# Categories of the keyword blocklist; a function whose body mentions one is skipped.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "io": (
        "open(",
        "print(",
        "input(",
        "os.remove",
        "os.unlink",
        "shutil.",
        "os.system",
        "subprocess",
        "fopen",
        "fwrite",
        "printf(",
        "scanf(",
        "sys.stdout",
        "sys.stdin",
        "pathlib",
        ".write_text",
        ".read_text",
        "tempfile",
    ),
    "gpu": ("cuda", ".to(device", "torch.device", "cupy", "gpu", "jax.devices"),
    "network": (
        "socket",
        "requests.",
        "urllib",
        "http.client",
        "httpx",
        "aiohttp",
        "urlopen",
        "smtplib",
        "ftplib",
        "websocket",
    ),
    "plotting": ("matplotlib", "plt.", "seaborn", "plotly", "bokeh", ".plot(", ".show()"),
}
TEST_DIRS = frozenset({"test", "tests", "testing", "demo", "demos", "example", "examples"})
# Decorators that leave what a function computes as it is (reposim's `plain-decorators`).
PLAIN_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "cached_property",
        "functools.cached_property",
        "cache",
        "functools.cache",
        "lru_cache",
        "functools.lru_cache",
    }
)
Check = Callable[[FunctionRecord, FileRecord, str, "CallGraph | None"], bool]


@dataclass(frozen=True)
class Filter:
    name: str
    help: str
    check: Check
    needs_graph: bool = False


def _has_docstring(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    return bool(fn.docstring and fn.docstring.strip())


def _applies(fn: FunctionRecord, value: str) -> bool:
    """`functions` limits a rule to functions (methods pass), `all` or "" applies it to both."""
    if value not in ("", "all", "functions"):
        raise ValueError(f"use =functions or =all, not {value!r}.")
    return value != "functions" or fn.kind == "function"


def _takes_args(fn: FunctionRecord, _f: FileRecord, value: str, _g: CallGraph | None) -> bool:
    if not _applies(fn, value):
        return True
    params = [p for p in fn.params if p not in ("*", "/", "...")]
    if fn.kind == "method" and params and params[0] in ("self", "cls"):
        params = params[1:]
    return bool(params) and fn.params != ["void"]


def _returns_value(fn: FunctionRecord, _f: FileRecord, value: str, _g: CallGraph | None) -> bool:
    if not _applies(fn, value):
        return True
    if fn.lang is Lang.C and fn.return_type == "void":
        return False
    return fn.value_returns > 0 or fn.yields > 0  # a generator produces its values by yield


def _not_literal_returns(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    return fn.literal_returns * 3 <= fn.value_returns * 2


def _body_lines(fn: FunctionRecord, _f: FileRecord, value: str, _g: CallGraph | None) -> bool:
    low, high = _bounds(value or "3..200")
    return low <= fn.lines <= high


def _code_lines(fn: FunctionRecord, _f: FileRecord, value: str, _g: CallGraph | None) -> bool:
    low, high = _bounds(value or "..60")
    return low <= fn.code_lines <= high


def _min_statements(fn: FunctionRecord, _f: FileRecord, value: str, _g: CallGraph | None) -> bool:
    return fn.statements >= _count(value or "2")


def _no_dunder(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    return not (fn.name.startswith("__") and fn.name.endswith("__"))


def _no_tests(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    pure = PurePosixPath(fn.path)
    if any(part.lower() in TEST_DIRS for part in pure.parts[:-1]):
        return False
    stem = pure.stem
    if stem.startswith("test_") or stem.endswith("_test") or stem in ("conftest", "setup"):
        return False
    return not (fn.name == "main" or fn.name.startswith("test"))


def _no_keywords(fn: FunctionRecord, record: FileRecord, value: str, _g: CallGraph | None) -> bool:
    categories = [c for c in (value or "+".join(KEYWORDS)).split("+") if c]
    body = record.text(fn.body_start_byte, fn.end_byte).lower()
    for category in categories:
        words = KEYWORDS.get(category, (category,))
        if any(word in body for word in words):
            return False
    return True


def _docstring_words(fn: FunctionRecord, _f: FileRecord, value: str, _g: CallGraph | None) -> bool:
    words = {w.lower() for w in (value or "todo+fixme").split("+") if w}
    return not fn.docstring or r2e.docstring_words(fn.docstring).isdisjoint(words)


def _not_wrapper(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    return fn.single_call is None


def _no_errors(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    return not fn.in_error


_python_parses = lru_cache(maxsize=16)(parses_as_python)  # one file, many functions


def _parses(fn: FunctionRecord, record: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    if fn.lang is Lang.PYTHON:
        return _python_parses(record.source)  # a test cannot import a file Python rejects
    return not fn.in_error


def _scope(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    # A nested function cannot be called from a test; a coroutine needs an event loop.
    return fn.parent_qualname is None and not fn.is_async


def _plain_decorators(fn: FunctionRecord, _f: FileRecord, _v: str, _g: CallGraph | None) -> bool:
    return all(d.partition("(")[0].strip() in PLAIN_DECORATORS for d in fn.decorators)


def _connected(fn: FunctionRecord, _f: FileRecord, _v: str, graph: CallGraph | None) -> bool:
    if graph is None:
        raise ValueError("the connected filter needs the call graph.")
    if graph.callers(fn.id):
        return True
    return any(edge.target is not None for edge in graph.callees(fn.id))


def _r2e_rule(rule: str) -> Check:
    def check(fn: FunctionRecord, record: FileRecord, _v: str, _g: CallGraph | None) -> bool:
        if fn.lang is not Lang.PYTHON:
            return False  # R2E reads .py files only
        return rule not in r2e.verdict(fn.path, record.source, fn.qualname, fn.def_line).failed

    return check


def _bounds(value: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d*)\.\.(\d*)", value.strip())
    if match is None:
        raise ValueError(f"a range is MIN..MAX (e.g. 3..200), not {value!r}.")
    low = int(match.group(1)) if match.group(1) else 0
    high = int(match.group(2)) if match.group(2) else 10**9
    return low, high


def _count(value: str) -> int:
    if not value.strip().isdigit():
        raise ValueError(f"min-statements wants a number, not {value!r}.")
    return int(value)


FILTERS: dict[str, Filter] = {
    f.name: f
    for f in (
        Filter("scope", "not nested in a function, not `async def`", _scope),
        Filter("parses", "Python: its file is accepted by ast.parse; C: no syntax error", _parses),
        Filter("has-docstring", "has a docstring (C: a comment right above it)", _has_docstring),
        Filter(
            "docstring-words",
            "=W1+W2 (default todo+fixme): no such word in its docstring (whole words)",
            _docstring_words,
        ),
        Filter(
            "takes-args",
            "takes at least one argument besides self/cls (=functions: methods pass)",
            _takes_args,
        ),
        Filter(
            "returns-value",
            "returns a value or yields (C: not void) (=functions: methods pass)",
            _returns_value,
        ),
        Filter(
            "not-literal-returns",
            "at most 2/3 of its value returns are literals (True, 0, '', None, [] ...)",
            _not_literal_returns,
        ),
        Filter("body-lines", "=MIN..MAX lines, decorators included (default 3..200)", _body_lines),
        Filter(
            "code-lines",
            "=MIN..MAX code lines in the body, docstring/blank/comment lines out (default ..60)",
            _code_lines,
        ),
        Filter(
            "min-statements",
            "=N statements directly in the body besides the docstring (default 2)",
            _min_statements,
        ),
        Filter("no-dunder", "not a __dunder__ method", _no_dunder),
        Filter(
            "no-tests",
            "not in tests/demos/examples, not test_*, not main, not in setup.py/conftest.py",
            _no_tests,
        ),
        Filter(
            "no-keywords",
            "=io+gpu+network+plotting (default all): its body mentions none of those categories'"
            " keywords; other words are taken literally",
            _no_keywords,
        ),
        Filter(
            "not-wrapper",
            "not a trivial wrapper whose whole body is one call (`return f(...)`)",
            _not_wrapper,
        ),
        Filter(
            "plain-decorators",
            "no decorator but staticmethod, classmethod, property, cached_property, "
            "functools.cache/lru_cache",
            _plain_decorators,
        ),
        Filter("no-errors", "does not overlap a syntax error", _no_errors),
        Filter(
            "connected",
            "calls a function of the repository or is called by one (our call graph)",
            _connected,
            needs_graph=True,
        ),
        *(Filter(rule, f"R2E: {text}", _r2e_rule(rule)) for rule, text in r2e.RULES.items()),
    )
}
PRESETS: dict[str, list[str]] = {
    "r2e": list(r2e.RULES),
    "reposim": [
        "scope",
        "parses",
        "has-docstring",
        "docstring-words",
        "takes-args=functions",
        "returns-value=functions",
        "not-literal-returns",
        "min-statements",
        "code-lines",
        "not-wrapper",
        "plain-decorators",
        "no-dunder",
        "no-tests",
        "no-keywords",
    ],
}
DEFAULT_PRESET = "reposim"


@dataclass(frozen=True)
class FilterSpec:
    """Filters switched on, each with its value ("" for the default)."""

    active: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, specs: Iterable[str]) -> FilterSpec:
        """`["r2e", "code-lines=5..50", "no-dunder,connected"]` -> a spec; ValueError if unknown.

        `none` switches every filter off; a later item overrides a preset member's value.
        """
        active: dict[str, str] = {}
        for spec in specs:
            for item in spec.split(","):
                item = item.strip()
                if not item:
                    continue
                name, _, value = item.partition("=")
                if name == "none":
                    active.clear()
                    continue
                if name in PRESETS:
                    for member in PRESETS[name]:
                        member_name, _, member_value = member.partition("=")
                        active.setdefault(member_name, member_value)
                    continue
                if name not in FILTERS:
                    known = ", ".join([*FILTERS, *PRESETS, "none"])
                    raise ValueError(f"unknown filter {name!r} (known: {known}).")
                _validate(name, value)
                active[name] = value
        return cls(tuple(active.items()))

    @classmethod
    def default(cls) -> FilterSpec:
        return cls.parse([DEFAULT_PRESET])

    @property
    def needs_graph(self) -> bool:
        return any(FILTERS[name].needs_graph for name, _ in self.active)

    def accepts(
        self, fn: FunctionRecord, record: FileRecord, graph: CallGraph | None = None
    ) -> bool:
        return all(FILTERS[name].check(fn, record, value, graph) for name, value in self.active)

    def rejected_by(
        self, fn: FunctionRecord, record: FileRecord, graph: CallGraph | None = None
    ) -> list[str]:
        return [
            name for name, value in self.active if not FILTERS[name].check(fn, record, value, graph)
        ]

    def as_dict(self) -> dict[str, str]:
        return dict(self.active)


def _validate(name: str, value: str) -> None:
    if not value:
        return
    if name in ("body-lines", "code-lines"):
        _bounds(value)
    elif name == "min-statements":
        _count(value)
    elif name in ("takes-args", "returns-value") and value not in ("all", "functions"):
        raise ValueError(f"{name} takes =functions or =all, not {value!r}.")
