"""A pytest plugin that finds the tests which call one API, run inside an environment.

Loaded with `-p reposim_perf_trace` from the perf tools directory (it imports nothing from
RepoSim). REPOSIM_PERF_API names the API as a dotted path (`pkg.mod.func`, `pkg.mod.Class.meth`);
while each test runs, a profile hook counts the calls whose code has that module and qualified
name. At the end it writes, to REPOSIM_PERF_TRACE_OUT, one JSON object per test: its node id,
file, function (and class), whether a harness can run it without pytest (`plain`: no fixtures;
`unittest`: a TestCase method, run through unittest), the calls counted,
its outcome and duration. Collection errors are listed as such (`collection_errors`), so a
revision whose tests do not even import says so. REPOSIM_PERF_LINES, when set, names a JSON file
{path relative to the root: [line numbers]} (the lines a change made): each test also records
how many of those lines it executed (`reached`), so a harness can be chosen that exercises the
change.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

_API = os.environ.get("REPOSIM_PERF_API", "")
_OUT = os.environ.get("REPOSIM_PERF_TRACE_OUT", "")
_LINES_FILE = os.environ.get("REPOSIM_PERF_LINES", "")
_records: dict[str, dict[str, Any]] = {}
_collection_errors: list[dict[str, str]] = []


def _changed_lines() -> dict[str, set[int]]:
    """{absolute file path: changed line numbers}, from REPOSIM_PERF_LINES."""
    if not _LINES_FILE:
        return {}
    with open(_LINES_FILE) as handle:
        data = json.load(handle)
    root = Path.cwd()
    return {str((root / path).resolve()): set(lines) for path, lines in data.items()}


_CHANGED = _changed_lines()


def _split(api: str) -> list[tuple[str, str]]:
    """Every (module, qualname) reading of a dotted name: `a.b.c` -> (a.b, c), (a, b.c)."""
    parts = api.split(".")
    return [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]


_READINGS = _split(_API)


def _matches(frame: FrameType) -> bool:
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    module = frame.f_globals.get("__name__")
    return any(module == mod and qualname == name for mod, name in _READINGS)


def _plain_callable(item: pytest.Item) -> bool:
    """A test a harness can run without pytest: a function or a method of a plain class that
    takes no fixtures, or a method of a unittest.TestCase (run through unittest, its setUp and
    tearDown included)."""
    function = getattr(item, "function", None)
    if function is None or getattr(item, "callspec", None) is not None:
        return False
    cls = getattr(item, "cls", None)
    if cls is not None and _is_unittest(cls):
        return True
    if cls is not None and (not inspect.isclass(cls) or "__init__" in vars(cls)):
        return False
    params = list(inspect.signature(function).parameters)
    if cls is not None:
        params = params[1:]
    return not params


def _is_unittest(cls: Any) -> bool:
    return inspect.isclass(cls) and any(
        base.__module__.startswith("unittest") for base in cls.__mro__
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    calls = 0
    name = _API.rsplit(".", 1)[-1]

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_name == name and _matches(frame):
            calls += 1

    reached: set[tuple[str, int]] = set()
    files: dict[str, set[int] | None] = {}

    def line_tracer(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            wanted = files.get(frame.f_code.co_filename)
            if wanted and frame.f_lineno in wanted:
                reached.add((frame.f_code.co_filename, frame.f_lineno))
        return line_tracer

    def global_tracer(frame: FrameType, event: str, arg: object) -> Any:
        filename = frame.f_code.co_filename
        if filename not in files:
            files[filename] = _CHANGED.get(os.path.realpath(filename))
        if files[filename] is None:
            return None  # not a changed file: no line events for this frame
        return line_tracer

    previous = sys.getprofile()
    previous_trace = sys.gettrace()
    sys.setprofile(profile)
    if _CHANGED:
        sys.settrace(global_tracer)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if _CHANGED:
            sys.settrace(previous_trace)
        sys.setprofile(previous)
        path, _line, _desc = item.location
        owner = getattr(item, "cls", None)
        cls = owner.__name__ if owner is not None else None
        function = getattr(item, "function", None)
        _records[item.nodeid] = {
            "nodeid": item.nodeid,
            "path": path,
            "function": function.__name__ if function is not None else item.name,
            "cls": cls,
            "plain": _plain_callable(item),
            "unittest": _is_unittest(owner),
            "calls": calls,
            "seconds": round(time.perf_counter() - t0, 6),
            "outcome": "unknown",
            "reached": len(reached),
        }


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    record = _records.get(report.nodeid)
    if record is not None and (report.when == "call" or report.failed):
        record["outcome"] = report.outcome


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        text = str(report.longrepr or "").strip().splitlines()
        error = next((line for line in reversed(text) if line.startswith("E ")), "")
        error = error[1:].strip() or (text[-1] if text else "collection failed")
        _collection_errors.append({"nodeid": report.nodeid, "error": error[:300]})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _OUT:
        with open(_OUT, "w") as handle:
            json.dump(
                {
                    "api": _API,
                    "tests": list(_records.values()),
                    "collection_errors": _collection_errors,
                    "changed_lines": sum(len(lines) for lines in _CHANGED.values()),
                },
                handle,
            )
