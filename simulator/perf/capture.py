"""Capture the calls a test makes to one API, to time those calls alone (not the test).

Runs inside an environment (imported by a traced harness as `reposim_perf_calls` from the perf
tools directory), so it imports only the standard library. While each test runs once, a profile
hook sees every call whose code is the API's (module and qualified name) and records it at
entry: the arguments, deep-copied before the call can change them (immutable ones are kept as
they are). Only the outermost call of a recursion is kept. `Captured.fresh()` gives new copies
of the mutable arguments for each timed loop, so the worker builds them outside the timed
region and times the calls only; immutable arguments are not copied at all (on more-itertools,
copying 36 calls' small tuples per loop cost 20x the calls themselves, and a compare's
calibration alone took 40 s).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

CO_VARARGS = inspect.CO_VARARGS
CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
MAX_CALLS = 500


def readings(api: str) -> list[tuple[str, str]]:
    """Every (module, qualname) reading of a dotted name: `a.b.c` -> (a.b, c), (a, b.c)."""
    parts = api.split(".")
    return [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]


def resolve(api: str) -> tuple[Callable[..., Any], str, str]:
    """The function object of `api`, unwrapped from staticmethod/classmethod, with its reading."""
    for module_name, qualname in readings(api):
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        found = True
        for part in qualname.split("."):
            try:
                owner = inspect.getattr_static(owner, part)
            except AttributeError:
                found = False
                break
            if isinstance(owner, staticmethod | classmethod):
                owner = owner.__func__
        if found and callable(owner):
            return owner, module_name, qualname
    raise LookupError(f"{api} is not a function this environment can import")


# values no call can change: shared between loops as they are, never copied
_ATOMS = (int, float, complex, str, bytes, bool, type(None), range, type, type(Ellipsis))


def immutable(value: Any, depth: int = 0) -> bool:
    """Nothing a call does can change `value` (numbers, strings, None, plain `object()`s and
    tuples or frozensets of those): it needs no fresh copy per timed loop."""
    if depth > 20:
        return False
    if isinstance(value, _ATOMS) or type(value) is object:
        return True
    if type(value) in (tuple, frozenset):
        return all(immutable(item, depth + 1) for item in value)
    return False


class Captured:
    """The recorded calls: the function, and its arguments as they were at each call's entry.

    A call whose arguments cannot change (`immutable`) reuses them in every loop; the others
    get deep copies per loop. A call whose arguments could not be copied (an iterator, a
    generator) is left out: replayed, it would find them used up after the first loop and time
    next to nothing. `dropped` counts those."""

    def __init__(
        self,
        func: Callable[..., Any],
        calls: list[tuple[tuple[Any, ...], dict[str, Any]]],
        shared: list[bool],
        dropped: int = 0,
    ) -> None:
        self.func = func
        self.calls = calls
        self.shared = shared  # per call: its arguments are immutable, used as they are
        self.dropped = dropped

    def __len__(self) -> int:
        return len(self.calls)

    @property
    def copies(self) -> int:
        """How many calls get fresh copies of their arguments per loop."""
        return self.shared.count(False)

    def describe(self, api: str, tests: int) -> str:
        """What the worker times, for the harness's TIMED."""
        text = f"{len(self)} call(s) of {api} captured from {tests} test(s)"
        if self.copies:
            text += f", the arguments of {self.copies} copied outside the timed region"
        if self.dropped:
            text += (
                f"; {self.dropped} call(s) left out: their arguments (iterators, generators) "
                "could not be copied"
            )
        return text

    def fresh(self) -> list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]:
        """The calls with new copies of their arguments (to be made outside the timing)."""
        out = []
        for (args, kwargs), shared in zip(self.calls, self.shared, strict=True):
            if not shared:
                args, kwargs = copy.deepcopy((args, kwargs))
            out.append((self.func, args, kwargs))
        return out


def _arguments(frame: FrameType) -> tuple[tuple[Any, ...], dict[str, Any]]:
    code = frame.f_code
    names = code.co_varnames
    local = frame.f_locals
    positional = [local[n] for n in names[: code.co_argcount]]
    index = code.co_argcount + code.co_kwonlyargcount
    kwargs = {n: local[n] for n in names[code.co_argcount : index]}
    if code.co_flags & CO_VARARGS:
        positional += list(local[names[index]])
        index += 1
    if code.co_flags & CO_VARKEYWORDS:
        kwargs.update(local[names[index]])
    # positional-only and ordinary parameters are passed by position: safe for both
    return tuple(positional), kwargs


def capture(api: str, tests: list[Callable[[], Any]], limit: int = MAX_CALLS) -> Captured:
    """Run each test once; the outermost calls of `api` they make, with copied arguments."""
    func, module_name, qualname = resolve(api)
    target = inspect.unwrap(func)
    name = qualname.rsplit(".", 1)[-1]
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    shared: list[bool] = []
    dropped = 0
    active: list[FrameType] = []

    def matches(frame: FrameType) -> bool:
        code = frame.f_code
        if code is getattr(target, "__code__", None):
            return True
        return (
            frame.f_globals.get("__name__") == module_name
            and getattr(code, "co_qualname", code.co_name) == qualname
        )

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal dropped
        if event == "call" and frame.f_code.co_name == name and matches(frame):
            if not active and len(calls) < limit:
                args, kwargs = _arguments(frame)
                if immutable((args, tuple(kwargs.items()))):
                    calls.append((args, kwargs))
                    shared.append(True)
                else:
                    try:
                        calls.append(copy.deepcopy((args, kwargs)))
                        shared.append(False)
                    except Exception:
                        dropped += 1
            active.append(frame)
        elif event == "return" and active and frame is active[-1]:
            active.pop()

    for test in tests:
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            test()
        finally:
            sys.setprofile(previous)
            active.clear()
    return Captured(func, calls, shared, dropped)


def save_calls(captured: Captured, path: str) -> None:
    """Write the captured calls' arguments to `path` (pickle), for the other revision to replay
    when its tests are not the same (renamed, split): calls that cannot be pickled are left
    out and counted as dropped. Written whole or not at all."""
    calls, shared, dropped = [], [], captured.dropped
    for call, same in zip(captured.calls, captured.shared, strict=True):
        try:
            pickle.dumps(call)
        except Exception:
            dropped += 1
            continue
        calls.append(call)
        shared.append(same)
    partial = f"{path}.{os.getpid()}.part"
    with open(partial, "wb") as handle:
        pickle.dump({"calls": calls, "shared": shared, "dropped": dropped}, handle)
    Path(partial).replace(path)


def load_calls(api: str, path: str) -> Captured:
    """The calls `save_calls` wrote, on this revision's `api`."""
    func, _module, _qualname = resolve(api)
    with open(path, "rb") as handle:
        data = pickle.load(handle)
    return Captured(func, data["calls"], data["shared"], data["dropped"])
