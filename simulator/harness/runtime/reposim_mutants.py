"""Run one harness against many mutants of its target, in one process.

    python reposim_mutants.py SPEC.json OUT.json

SPEC: {"harness": path, "module": "pkg.mod", "qualname": "Class.method", "filename": path of
the target's file, "timeout": seconds per run, "mutants": [{"id", "source"}]} where each source
is the whole target file with one small change inside the target. For each mutant the file is
compiled, the target's code object is taken out of it and swapped into the live function
(`function.__code__`), and the harness runs with pytest in this process: no interpreter start
and no re-import per mutant. A mutant is killed when the harness fails or runs past the time
limit. The unmutated target runs first: a harness that fails on it says nothing about mutants.

With "tests": [node ids] instead of "harness", the repository's own tests run against the
mutants the same way (suite parity: which mutants the tests that call the target kill); the
tests that fail on the unmutated target are left out, named in the baseline.
Standard library and pytest only: this runs in the project's Python.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import signal
import sys
import time
from pathlib import Path
from types import CodeType, FrameType, FunctionType
from typing import Any

import pytest


class MutantTimeout(Exception):
    """The harness ran past its time limit on a mutant (an infinite loop, most often)."""


def find_code(code: CodeType, qualname: str, firstlineno: int) -> CodeType | None:
    if code.co_qualname == qualname and code.co_firstlineno == firstlineno:
        return code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found = find_code(const, qualname, firstlineno)
            if found is not None:
                return found
    return None


def target_function(module: str, qualname: str) -> FunctionType:
    """The function object whose code is the target's (decorator wrappers followed down)."""
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = inspect.getattr_static(obj, part)
        if isinstance(obj, staticmethod | classmethod):
            obj = obj.__func__
        elif isinstance(obj, property):
            obj = obj.fget
    seen = 0
    while not (isinstance(obj, FunctionType) and obj.__code__.co_qualname == qualname):
        obj = getattr(obj, "__wrapped__", None)
        seen += 1
        if obj is None or seen > 10:
            raise LookupError(f"no plain function at {module}:{qualname}")
    return obj


def clear_caches(module: str, qualname: str) -> None:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    for _ in range(10):
        if obj is None:
            return
        clear = getattr(obj, "cache_clear", None)
        if callable(clear):
            clear()
        obj = getattr(obj, "__wrapped__", None)


class _Failures:
    """A pytest plugin object that notes the tests that failed (any phase)."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed: list[str] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and report.nodeid not in self.failed:
            self.failed.append(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.append(report.nodeid)


SUITE_FLAGS = ["-q", "-p", "no:cacheprovider", "-p", "no:cov", "-p", "no:randomly"]
SUITE_FLAGS += ["-p", "no:xdist", "-p", "no:reposim_tracer"]


def run_suite(
    tests: list[str], timeout: float, stop: bool = True, notes: _Failures | None = None
) -> tuple[bool, str]:
    """(passed, how) for one pytest run of the repository's tests `tests`."""
    args = [*tests, *SUITE_FLAGS, *(["-x"] if stop else [])]
    return _run(args, timeout, [notes] if notes is not None else [])


def run_harness(harness: str, timeout: float) -> tuple[bool, str]:
    """(passed, how) for one pytest run of the harness, quietly, under a time limit."""
    return _run(
        [harness, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:cov", "-o", "addopts="],
        timeout,
        [],
    )


def _run(args: list[str], timeout: float, plugins: list[Any]) -> tuple[bool, str]:

    def expire(signum: int, frame: FrameType | None) -> None:
        raise MutantTimeout(f"over {timeout} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            code = pytest.main(args, plugins=plugins)
    except MutantTimeout:
        return False, "timeout"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return int(code) == 0, "passed" if int(code) == 0 else "failed"


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    sys.path.insert(0, str(Path.cwd()))
    function = target_function(spec["module"], spec["qualname"])
    original = function.__code__
    timeout = float(spec.get("timeout", 10.0))
    out: dict[str, Any] = {"baseline": None, "mutants": []}
    t0 = time.monotonic()
    tests = list(spec.get("tests") or [])
    if tests:
        notes = _Failures()
        run_suite(tests, timeout * 3, stop=False, notes=notes)
        failing = set(notes.failed)
        tests = [
            t
            for t in tests
            if t not in failing and any(p == t or p.startswith(t) for p in notes.passed)
        ]
        passed, how = bool(tests), "passed" if tests else "no test passes on the unmutated target"
        out["baseline"] = {
            "passed": passed,
            "how": how,
            "failing": sorted(failing),
            "tests": tests,
            "seconds": round(time.monotonic() - t0, 4),
        }

        def run_one() -> tuple[bool, str]:
            return run_suite(tests, timeout)
    else:
        passed, how = run_harness(spec["harness"], timeout * 3)
        out["baseline"] = {"passed": passed, "how": how, "seconds": round(time.monotonic() - t0, 4)}

        def run_one() -> tuple[bool, str]:
            return run_harness(spec["harness"], timeout)

    if passed:
        for mutant in spec["mutants"]:
            t0 = time.monotonic()
            try:
                compiled = compile(mutant["source"], spec["filename"], "exec")
                code = find_code(compiled, spec["qualname"], original.co_firstlineno)
                if code is None or code.co_freevars != original.co_freevars:
                    raise ValueError("the mutant's code does not fit the function")
                function.__code__ = code
            except (SyntaxError, ValueError) as exc:
                out["mutants"].append({"id": mutant["id"], "status": "invalid", "why": str(exc)})
                continue
            try:
                clear_caches(spec["module"], spec["qualname"])
                passed, how = run_one()
            finally:
                function.__code__ = original
            out["mutants"].append(
                {
                    "id": mutant["id"],
                    "status": "survived" if passed else "killed",
                    "how": how,
                    "seconds": round(time.monotonic() - t0, 4),
                }
            )
    with open(argv[2], "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
