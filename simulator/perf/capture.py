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
from collections import deque
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from types import FrameType
from typing import Any

CO_VARARGS = inspect.CO_VARARGS
CO_VARKEYWORDS = inspect.CO_VARKEYWORDS
CO_GENERATOR = inspect.CO_GENERATOR
CO_ASYNC_GENERATOR = inspect.CO_ASYNC_GENERATOR
CO_COROUTINE = inspect.CO_COROUTINE
MAX_CALLS = 500
MAX_ITEMS = 100_000  # drained from an iterator the API returns (the test's count unknown)


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
        items: list[int | None] | None = None,
    ) -> None:
        self.func = func
        self.calls = calls
        self.shared = shared  # per call: its arguments are immutable, used as they are
        self.dropped = dropped
        # per call: how many items the test took from it when the API is a generator function
        # (None: not one; an iterator it returns is drained, up to MAX_ITEMS)
        self.items = items if items is not None else [None] * len(calls)
        self.raised = 0  # calls left out because they raise (without_raising)

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
        if self.raised:
            text += f"; {self.raised} call(s) left out: they raise (as their tests expect)"
        return text

    def without_raising(self) -> Captured:
        """These calls less those that raise when replayed (a test's `assertRaises(f, 0)`):
        timed, they would stop the harness."""
        keep = []
        for index, (func, args, kwargs) in enumerate(self.fresh()):
            try:
                func(*args, **kwargs)
            except Exception:
                continue
            keep.append(index)
        kept = Captured(
            self.func,
            [self.calls[i] for i in keep],
            [self.shared[i] for i in keep],
            self.dropped,
            [self.items[i] for i in keep],
        )
        kept.raised = self.raised + len(self.calls) - len(keep)
        return kept

    def fresh(self) -> list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]:
        """The calls with new copies of their arguments (to be made outside the timing)."""
        out = []
        for (args, kwargs), shared, items in zip(self.calls, self.shared, self.items, strict=True):
            if not shared:
                args, kwargs = copy.deepcopy((args, kwargs))
            out.append((_drained(self.func, items), args, kwargs))
        return out


def _drained(func: Callable[..., Any], items: int | None) -> Callable[..., Any]:
    """`func`, with what it returns iterated as the test did: a generator function (or one that
    returns iterators, alone or in a tuple) does its work as it is iterated, so a replay that
    only called it timed the making of a generator (more-itertools' collapse, partition)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        for part in result if type(result) is tuple else (result,):
            if isinstance(part, Iterator):
                deque(islice(part, MAX_ITEMS if items is None else items), maxlen=0)
        return result

    return call


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
    items: list[int | None] = []
    dropped = 0
    active: list[FrameType] = []
    generators = CO_GENERATOR | CO_ASYNC_GENERATOR | CO_COROUTINE
    # a generator's frame, resumed by each next(), is a call of the profile hook each time:
    # {id(frame): (frame, index of its call or None)}, so it counts once and its items counted
    resumable: dict[int, tuple[FrameType, int | None]] = {}

    def matches(frame: FrameType) -> bool:
        code = frame.f_code
        if code is getattr(target, "__code__", None):
            return True
        return (
            frame.f_globals.get("__name__") == module_name
            and getattr(code, "co_qualname", code.co_name) == qualname
        )

    def record(frame: FrameType) -> int | None:
        """The call's arguments kept; its index, or None when it is not kept."""
        nonlocal dropped
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
                return None
        generator = bool(frame.f_code.co_flags & generators)
        items.append(0 if generator else None)
        return len(calls) - 1

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_name == name and matches(frame):
            if id(frame) not in resumable:
                index = record(frame) if not active and len(calls) < limit else None
                if frame.f_code.co_flags & generators:
                    resumable[id(frame)] = (frame, index)
            active.append(frame)
        elif event == "return" and active and frame is active[-1]:
            active.pop()
            kept = resumable.get(id(frame))
            if kept is not None and kept[1] is not None:
                count = items[kept[1]]
                items[kept[1]] = (count or 0) + 1  # a yield (or the final return)

    for test in tests:
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            test()
        finally:
            sys.setprofile(previous)
            active.clear()
            resumable.clear()
    return Captured(func, calls, shared, dropped, items).without_raising()


def save_calls(captured: Captured, path: str) -> None:
    """Write the captured calls' arguments to `path` (pickle), for the other revision to replay
    when its tests are not the same (renamed, split): calls that cannot be pickled are left
    out and counted as dropped. Written whole or not at all."""
    calls, shared, items, dropped = [], [], [], captured.dropped
    for call, same, taken in zip(captured.calls, captured.shared, captured.items, strict=True):
        try:
            pickle.dumps(call)
        except Exception:
            dropped += 1
            continue
        calls.append(call)
        shared.append(same)
        items.append(taken)
    partial = f"{path}.{os.getpid()}.part"
    data = {
        "calls": calls,
        "shared": shared,
        "dropped": dropped,
        "items": items,
        "raised": captured.raised,
    }
    with open(partial, "wb") as handle:
        pickle.dump(data, handle)
    Path(partial).replace(path)


def load_calls(api: str, path: str) -> Captured:
    """The calls `save_calls` wrote, on this revision's `api`."""
    func, _module, _qualname = resolve(api)
    with open(path, "rb") as handle:
        data = pickle.load(handle)
    captured = Captured(func, data["calls"], data["shared"], data["dropped"], data["items"])
    captured.raised = data["raised"]
    return captured
