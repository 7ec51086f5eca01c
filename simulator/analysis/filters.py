"""Filters for picking benchmark targets among extracted functions.

They cover what R2E's curation used. Each is switchable by name on the command line
(`--filter NAME[=VALUE]`, repeatable or comma-separated); `r2e` switches on all of them with
their defaults. `FILTERS` is the documentation `reposim extract --list-filters` prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from simulator.analysis.model import FileRecord, FunctionRecord, Lang

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
Check = Callable[[FunctionRecord, FileRecord, str], bool]


@dataclass(frozen=True)
class Filter:
    name: str
    help: str
    check: Check


def _has_docstring(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    return bool(fn.docstring and fn.docstring.strip())


def _takes_args(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    params = [p for p in fn.params if p not in ("*", "/", "...")]
    if fn.kind == "method" and params and params[0] in ("self", "cls"):
        params = params[1:]
    return bool(params) and fn.params != ["void"]


def _returns_value(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    if fn.lang is Lang.C and fn.return_type == "void":
        return False
    return fn.value_returns > 0


def _not_literal_returns(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    return fn.value_returns == 0 or fn.literal_returns * 2 <= fn.value_returns


def _body_lines(fn: FunctionRecord, _f: FileRecord, value: str) -> bool:
    low, high = _bounds(value or "3..200")
    return low <= fn.lines <= high


def _no_dunder(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    return not (fn.name.startswith("__") and fn.name.endswith("__"))


def _no_tests(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    pure = PurePosixPath(fn.path)
    if any(part.lower() in TEST_DIRS for part in pure.parts[:-1]):
        return False
    stem = pure.stem
    if stem.startswith("test_") or stem.endswith("_test") or stem in ("conftest", "setup"):
        return False
    return not (fn.name == "main" or fn.name.startswith("test"))


def _no_keywords(fn: FunctionRecord, record: FileRecord, value: str) -> bool:
    categories = [c for c in (value or "+".join(KEYWORDS)).split("+") if c]
    body = record.text(fn.body_start_byte, fn.end_byte).lower()
    for category in categories:
        words = KEYWORDS.get(category, (category,))
        if any(word in body for word in words):
            return False
    return True


def _not_wrapper(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    return fn.single_call is None


def _no_errors(fn: FunctionRecord, _f: FileRecord, _v: str) -> bool:
    return not fn.in_error


def _bounds(value: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d*)\.\.(\d*)", value.strip())
    if match is None:
        raise ValueError(f"body-lines wants MIN..MAX (e.g. 3..200), not {value!r}.")
    low = int(match.group(1)) if match.group(1) else 0
    high = int(match.group(2)) if match.group(2) else 10**9
    return low, high


FILTERS: dict[str, Filter] = {
    f.name: f
    for f in (
        Filter("has-docstring", "has a docstring (C: a comment right above it)", _has_docstring),
        Filter("takes-args", "takes at least one argument besides self/cls", _takes_args),
        Filter("returns-value", "returns a value somewhere (C: not void)", _returns_value),
        Filter(
            "not-literal-returns",
            "at most half of its value returns are literals (True, 0, '', None, [] ...)",
            _not_literal_returns,
        ),
        Filter("body-lines", "=MIN..MAX lines, decorators included (default 3..200)", _body_lines),
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
        Filter("no-errors", "does not overlap a syntax error", _no_errors),
    )
}
PRESETS: dict[str, list[str]] = {
    "r2e": [
        "has-docstring",
        "takes-args",
        "returns-value",
        "not-literal-returns",
        "body-lines",
        "no-dunder",
        "no-tests",
        "no-keywords",
        "not-wrapper",
        "no-errors",
    ]
}


@dataclass(frozen=True)
class FilterSpec:
    """Filters switched on, each with its value ("" for the default)."""

    active: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, specs: Iterable[str]) -> FilterSpec:
        """`["r2e", "body-lines=5..50", "no-dunder,no-tests"]` -> a spec; ValueError if unknown."""
        active: dict[str, str] = {}
        for spec in specs:
            for item in spec.split(","):
                item = item.strip()
                if not item:
                    continue
                name, _, value = item.partition("=")
                if name in PRESETS:
                    for member in PRESETS[name]:
                        active.setdefault(member, "")
                    continue
                if name not in FILTERS:
                    known = ", ".join([*FILTERS, *PRESETS])
                    raise ValueError(f"unknown filter {name!r} (known: {known}).")
                if name == "body-lines" and value:
                    _bounds(value)
                active[name] = value
        return cls(tuple(active.items()))

    def accepts(self, fn: FunctionRecord, record: FileRecord) -> bool:
        return all(FILTERS[name].check(fn, record, value) for name, value in self.active)

    def rejected_by(self, fn: FunctionRecord, record: FileRecord) -> list[str]:
        return [name for name, value in self.active if not FILTERS[name].check(fn, record, value)]

    def as_dict(self) -> dict[str, str]:
        return dict(self.active)
