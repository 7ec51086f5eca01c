"""A pytest plugin that records the calls of chosen functions while a test suite runs.

Loaded with `python -m pytest -p reposim_tracer` (this file's directory on PYTHONPATH) and
configured by environment variables:

- REPOSIM_TRACE_SPEC: a JSON file, {"root": workspace, "max_calls": N, "max_bytes": B,
  "targets": [{"id", "path", "qualname"}]};
- REPOSIM_TRACE_OUT: where to write what was recorded (JSON).

For every call of a target it keeps the arguments as they were on entry, then the return value
or the raised exception, and the arguments' state afterwards when the call changed them. Each
value is kept as a Python literal when `repr` gives one back (readable in the harness), else as
a pickle with a short readable form beside it (`shown`: for a person to read, never to run);
a call with a value that is neither is dropped. Calls are deduplicated per target and
at most `max_calls` distinct ones are kept. Standard library only: this runs in the project's
Python, locally or in a container.
"""

from __future__ import annotations

import ast
import base64
import inspect
import io
import itertools
import json
import os
import pickle
import re
import reprlib
import sys
import threading
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

SPEC_VARIABLE = "REPOSIM_TRACE_SPEC"
OUT_VARIABLE = "REPOSIM_TRACE_OUT"
_GENERATOR_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class Unencodable(Exception):
    """A value that is neither a literal nor picklable, or too big to keep."""


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxset = 3, 8, 6, 8
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxtuple, _SHOWN.maxdeque = 60, 80, 8, 8
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
SHOWN_LIMIT = 160


def shown(value: Any, data: bytes | None = None) -> str:
    """A one-line readable form of a pickled value: `module.name` for functions and classes,
    what an iterator yields (read from a copy unpickled from `data`, so the value itself is
    not consumed, and only when no project code runs for it: see _StandardOnly), else its repr
    (shortened when long) without memory addresses; "" when repr fails."""
    name = getattr(value, "__qualname__", None)
    module = getattr(value, "__module__", None)
    if isinstance(name, str) and isinstance(module, str) and callable(value):
        return f"{module}.{name}"
    if data is not None and hasattr(value, "__next__"):
        try:
            items = list(itertools.islice(_StandardOnly(io.BytesIO(data)).load(), 9))
            head = _SHOWN.repr(items[:8])
            more = ", …]" if len(items) > 8 else "]"
            return f"<{type(value).__name__} yielding {head[:-1]}{more}>"
        except Exception:
            pass
    try:
        text = repr(value)
        if len(text) > SHOWN_LIMIT:
            text = _SHOWN.repr(value)  # elided inside (`[0, 1, 2, ...]`), not only cut
    except Exception:
        return ""
    text = " ".join(_ADDRESS.sub("", text).split())
    return text if len(text) <= SHOWN_LIMIT else text[: SHOWN_LIMIT - 1] + "…"


class _StandardOnly(pickle.Unpickler):
    """Unpickles an iterator's copy only when it is built from builtins and operator alone:
    reading it then runs none of the project's code (a mapped function with side effects
    would change the test run being traced) and ends (itertools' count/cycle/repeat are not
    allowed, so a filter cannot spin forever)."""

    ALLOWED = frozenset({"builtins", "operator", "_operator", "copyreg"})

    def find_class(self, module: str, name: str) -> Any:
        if module not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not read for a preview")
        return super().find_class(module, name)


def _exact(values: list[dict[str, str]]) -> list[dict[str, str]]:
    """The encodings without their readable forms (what equality of values means)."""
    return [{k: v for k, v in value.items() if k != "s"} for value in values]


def _literal_ok(value: Any, depth: int = 0) -> bool:
    if depth > 20:
        return False
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return True
    if kind is float:
        return value == value and value not in (float("inf"), float("-inf"))
    if kind is complex:
        return _literal_ok(value.real) and _literal_ok(value.imag)
    if kind in (list, tuple, set, frozenset):
        return all(_literal_ok(item, depth + 1) for item in value)
    if kind is dict:
        return all(
            _literal_ok(k, depth + 1) and _literal_ok(v, depth + 1) for k, v in value.items()
        )
    return False


def encode(value: Any, max_bytes: int) -> dict[str, str]:
    """{"r": literal source} or {"p": base64 pickle, "s": readable form}; raises
    Unencodable."""
    if _literal_ok(value) and type(value) not in (set, frozenset):
        text = repr(value)
        try:
            if ast.literal_eval(text) == value:
                if len(text) > max_bytes:
                    raise Unencodable("too big")
                return {"r": text}
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            pass
    try:
        data = pickle.dumps(value, protocol=4)
        pickle.loads(data)  # a value that does not come back is of no use to a harness
    except Exception as exc:
        raise Unencodable(type(exc).__name__) from None
    if len(data) > max_bytes:
        raise Unencodable("too big")
    encoded = {"p": base64.b64encode(data).decode("ascii")}
    readable = shown(value, data)
    if readable:
        encoded["s"] = readable
    return encoded


class Recorder:
    def __init__(self, spec: dict[str, Any]) -> None:
        root = os.path.realpath(spec.get("root") or Path.cwd())
        self.max_calls = int(spec.get("max_calls", 40))
        self.max_bytes = int(spec.get("max_bytes", 20000))
        self.targets: dict[tuple[str, str], str] = {}
        for target in spec["targets"]:
            path = os.path.realpath(Path(root) / target["path"])
            self.targets[(path, target["qualname"])] = target["id"]
        self.root = root
        self.calls: dict[str, list[dict[str, Any]]] = {t["id"]: [] for t in spec["targets"]}
        self.seen: dict[str, set[str]] = {t["id"]: set() for t in spec["targets"]}
        self.dropped: dict[str, int] = {t["id"]: 0 for t in spec["targets"]}
        self.modules: dict[str, str] = {}
        self.test = ""
        self._codes: dict[CodeType, str | None] = {}
        self._lock = threading.Lock()

    def _target_of(self, code: CodeType) -> str | None:
        found = self._codes.get(code, "")
        if found != "":
            return found
        target: str | None = None
        if not code.co_flags & _GENERATOR_FLAGS:
            key = (os.path.realpath(code.co_filename), code.co_qualname)
            target = self.targets.get(key)
        self._codes[code] = target
        return target

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        target = self._target_of(frame.f_code)
        if target is None or len(self.calls[target]) >= self.max_calls:
            return None
        return self._start(frame, target)

    def _start(self, frame: FrameType, target: str) -> Any:
        code = frame.f_code
        names = list(code.co_varnames[: code.co_argcount])
        kwonly = list(
            code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
        )
        index = code.co_argcount + code.co_kwonlyargcount
        local = frame.f_locals
        positional = [local[name] for name in names]
        keywords = {name: local[name] for name in kwonly}
        if code.co_flags & inspect.CO_VARARGS:
            positional.extend(local[code.co_varnames[index]])
            index += 1
        if code.co_flags & inspect.CO_VARKEYWORDS:
            keywords.update(local[code.co_varnames[index]])
        try:
            args = [encode(value, self.max_bytes) for value in positional]
            kwargs = {k: encode(v, self.max_bytes) for k, v in keywords.items()}
        except Unencodable:
            self.dropped[target] += 1
            return None
        self.modules.setdefault(target, str(frame.f_globals.get("__name__", "")))
        state: dict[str, Any] = {"exception": None}

        def local_trace(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "exception":
                state["exception"] = arg[1]
            elif event == "line":
                state["exception"] = None
            elif event == "return":
                self._finish(target, positional, args, kwargs, arg, state["exception"])
            return local_trace

        return local_trace

    def _finish(
        self,
        target: str,
        positional: list[Any],
        args: list[dict[str, str]],
        kwargs: dict[str, dict[str, str]],
        value: Any,
        exception: BaseException | None,
    ) -> None:
        call: dict[str, Any] = {"args": args, "kwargs": kwargs, "test": self.test}
        try:
            if exception is not None and value is None:
                if not isinstance(exception, Exception):
                    return  # KeyboardInterrupt, SystemExit, pytest's outcomes: not behaviour
                kind = type(exception)
                call["raises"] = [f"{kind.__module__}.{kind.__qualname__}", str(exception)]
            else:
                call["returns"] = encode(value, self.max_bytes)
            after = [encode(v, self.max_bytes) for v in positional]
        except Unencodable:
            with self._lock:
                self.dropped[target] += 1
            return
        if _exact(after) != _exact(args):
            call["after"] = after
        exact_kwargs = {k: _exact([v])[0] for k, v in kwargs.items()}
        key = json.dumps([_exact(args), exact_kwargs], sort_keys=True)
        with self._lock:
            if key in self.seen[target] or len(self.calls[target]) >= self.max_calls:
                return
            self.seen[target].add(key)
            self.calls[target].append(call)

    def result(self) -> dict[str, Any]:
        paths = []
        for entry in sys.path:
            full = os.path.realpath(entry or ".")
            if full.startswith(self.root + os.sep) and "/.reposim/" not in full + "/":
                paths.append(os.path.relpath(full, self.root))
        return {
            "calls": self.calls,
            "modules": self.modules,
            "dropped": self.dropped,
            "paths": list(dict.fromkeys(paths)),
        }


_recorder: Recorder | None = None


def pytest_configure(config: Any) -> None:
    global _recorder
    spec_path = os.environ.get(SPEC_VARIABLE)
    if not spec_path:
        return
    with open(spec_path, encoding="utf-8") as handle:
        _recorder = Recorder(json.load(handle))
    sys.settrace(_recorder.global_trace)
    threading.settrace(_recorder.global_trace)


def pytest_runtest_setup(item: Any) -> None:
    if _recorder is not None:
        _recorder.test = str(item.nodeid)
        sys.settrace(_recorder.global_trace)  # another tracer (a debugger, coverage) may have won


def pytest_unconfigure(config: Any) -> None:
    global _recorder
    if _recorder is None:
        return
    sys.settrace(None)
    threading.settrace(None)
    out = os.environ.get(OUT_VARIABLE)
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(_recorder.result(), handle)
    _recorder = None
