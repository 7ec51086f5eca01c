"""Capture the calls a test makes to one API, to time those calls alone (not the test).

Runs inside an environment (imported by a traced harness as `reposim_perf_calls` from the perf
tools directory), so it imports only the standard library. While each test runs once, a profile
hook sees every call whose code is the API's (module and qualified name) and records it at
entry: the arguments, deep-copied before the call can change them (immutable ones are kept as
they are). Only the outermost call of a recursion is kept. `Captured.fresh()` gives new copies
of the mutable arguments for each timed loop, so the worker builds them outside the timed
region and times the calls only; immutable arguments are not copied at all (on more-itertools,
copying 36 calls' small tuples per loop cost 20x the calls themselves, and a compare's
calibration alone took 40 s). Nor are mutable arguments that the call leaves as they were
(replayed once on a copy when captured, the copy pickled alike before and after): a deep copy
per loop of 40 calls' 200-item lists took 30x the calls' own time.

`Captured.groups` splits the calls into groups that the worker also times one by one: the calls
of each test, and each test's calls on *scaled* inputs (its list, tuple and range arguments
made longer, see `scaled_arguments`). A change that speeds up one call among many, or only
large inputs where the tests pass tiny ones, shows in its group when the total hides it
(more-itertools 10.2.0's `first` on an empty input, 10.4.0's `sliding_window` on more than the
tests' five items). A scaled input is not the test's input, and every report says so.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import pickle
import signal
import sys
import threading
import time
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
# a scaled call's longest list/tuple/range argument is made about this long (by-hand checks of
# more-itertools' speed-ups used 1,000-10,000 items)
SCALE_ITEMS = 2_000
SCALE_LIMIT = 1.0  # seconds: a scaled call slower than this, tried once, is left out
SCALED_TYPES = (list, tuple, range)  # sequences of data; strings are often separators or names


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
        origin: list[int] | None = None,
    ) -> None:
        self.func = func
        self.calls = calls
        self.shared = shared  # per call: its arguments are immutable, used as they are
        self.dropped = dropped
        # per call: how many items the test took from it when the API is a generator function
        # (None: not one; an iterator it returns is drained, up to MAX_ITEMS)
        self.items = items if items is not None else [None] * len(calls)
        self.origin = origin if origin is not None else [0] * len(calls)  # the test's index
        self.raised = 0  # calls left out because they raise (without_raising)
        self.slow = 0  # scaled calls left out: slower than SCALE_LIMIT
        # per call: what it returns is no iterator to drain, so it is called as it is (the
        # draining wrapper cost ~0.8 us a call: more-itertools' 4x `first` measured 1.18x)
        self.plain = [False] * len(calls)
        self._groups: list[CallGroup] | None = None

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

    def subset(self, keep: list[int]) -> Captured:
        """The calls at the indices `keep`, with what was left out so far."""
        kept = Captured(
            self.func,
            [self.calls[i] for i in keep],
            [self.shared[i] for i in keep],
            self.dropped,
            [self.items[i] for i in keep],
            [self.origin[i] for i in keep],
        )
        kept.raised, kept.slow = self.raised, self.slow
        kept.plain = [self.plain[i] for i in keep]
        return kept

    def find_plain(self) -> None:
        """Call each once, and mark those that return no iterator (see `plain`)."""
        for index, (func, args, kwargs) in enumerate(self.fresh()):
            try:
                self._mark_plain(index, func(*args, **kwargs))
            except Exception:
                continue

    def _mark_plain(self, index: int, result: Any) -> None:
        parts = result if type(result) is tuple else (result,)
        if self.items[index] is None and not any(isinstance(p, Iterator) for p in parts):
            self.plain[index] = True

    def without_raising(self, limit: float | None = None) -> Captured:
        """These calls less those that raise when replayed (a test's `assertRaises(f, 0)`):
        timed, they would stop the harness. `limit`: also less those that take longer than
        `limit` seconds (stopped there when this is the main thread)."""
        keep = []
        slow = 0
        unchanged = []
        for index, (func, args, kwargs) in enumerate(self.fresh()):
            started = time.perf_counter()
            try:
                with _deadline(limit):
                    result = func(*args, **kwargs)
            except _TooSlow:
                slow += 1
                continue
            except Exception:
                continue
            if limit is not None and time.perf_counter() - started > limit:
                slow += 1
                continue
            keep.append(index)
            self._mark_plain(index, result)
            if not self.shared[index] and _same(self.calls[index], (args, kwargs)):
                unchanged.append(index)
        for index in unchanged:
            # the call left its copy as it found it: the captured arguments serve every loop
            # (a deep copy per loop of 40 calls' 200-item lists cost 30x the calls' own time)
            self.shared[index] = True
        kept = self.subset(keep)
        kept.raised = self.raised + len(self.calls) - len(keep) - slow
        kept.slow = self.slow + slow
        return kept

    def groups(self, names: list[str]) -> list[CallGroup]:
        """The groups the worker times one by one (made once): the calls of each test when
        there are several tests, then each test's calls on scaled inputs (`scaled_arguments`).
        `names`: the tests, in the order they ran."""
        if self._groups is not None:
            return self._groups
        by_test: dict[int, list[int]] = {}
        for index, test in enumerate(self.origin):
            by_test.setdefault(test, []).append(index)
        found: list[CallGroup] = []
        if len(by_test) > 1:
            found += [CallGroup(names[t], self.subset(calls)) for t, calls in by_test.items()]
        for test, calls in by_test.items():
            group = self.subset(calls).scaled()
            if group is not None:
                found.append(group.named(names[test]))
        self._groups = found
        return found

    def scaled(self) -> CallGroup | None:
        """These calls on scaled inputs, those a scale applies to (`scaled_arguments`), each
        drained whole (up to MAX_ITEMS items: a scaled input has more to give than the test
        took), less those that raise or take over SCALE_LIMIT; None when none is left."""
        calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        factors: list[int] = []
        for args, kwargs in self.calls:
            factor = scale_factor(args, kwargs)
            if factor > 1:
                calls.append(scaled_arguments(args, kwargs, factor))
                factors.append(factor)
        if not calls:
            return None
        shared = [immutable((args, tuple(kwargs.items()))) for args, kwargs in calls]
        made = Captured(self.func, calls, shared, 0, [None] * len(calls), list(range(len(calls))))
        kept = made.without_raising(SCALE_LIMIT)
        if not kept:
            return None
        kept_factors = [factors[index] for index in kept.origin]
        return CallGroup("", kept, (min(kept_factors), max(kept_factors)))

    def fresh(self) -> list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]:
        """The calls with new copies of their arguments (to be made outside the timing)."""
        out = []
        for (args, kwargs), shared, items, plain in zip(
            self.calls, self.shared, self.items, self.plain, strict=True
        ):
            if not shared:
                args, kwargs = copy.deepcopy((args, kwargs))
            out.append((self.func if plain else _drained(self.func, items), args, kwargs))
        return out


def _same(before: Any, after: Any) -> bool:
    """The arguments are as they were (pickled alike); False when they cannot be pickled."""
    try:
        return pickle.dumps(before) == pickle.dumps(after)
    except Exception:
        return False


class CallGroup:
    """Some of the captured calls, timed apart from the others: `label` names the test they
    came from; `scale` (smallest, largest factor) when their inputs were scaled."""

    def __init__(self, label: str, calls: Captured, scale: tuple[int, int] | None = None) -> None:
        self.label = label if scale is None or not label else f"{label}, inputs scaled"
        self.calls = calls
        self.scale = scale

    def named(self, test: str) -> CallGroup:
        return CallGroup(test, self.calls, self.scale)

    def describe(self) -> dict[str, Any]:
        """What the worker reports with the group's time (the two sides' groups must agree)."""
        return {"label": self.label, "calls": len(self.calls), "scale": self.scale}


def scale_factor(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """By how much a call's list, tuple and range arguments are made longer: so that the
    longest is about SCALE_ITEMS items (1: none to scale, or already that long)."""
    lengths = [len(v) for v in (*args, *kwargs.values()) if type(v) in SCALED_TYPES and len(v)]
    if not lengths:
        return 1
    return max(1, SCALE_ITEMS // max(lengths))


def scaled_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], factor: int
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with every list and tuple repeated `factor` times and every range
    extended `factor`-fold (same start and step); the others, and the items, as they were. All
    of a call's sequences grow alike, so sequences the API expects to match in length still
    do. This is not the test's input: a call may mean something else scaled (it is left out
    when it then raises), and every report of a scaled group says so."""

    def grow(value: Any) -> Any:
        if type(value) is range:
            return range(value.start, value.start + len(value) * factor * value.step, value.step)
        if type(value) in (list, tuple) and value:
            return value * factor
        return value

    return tuple(grow(v) for v in args), {k: grow(v) for k, v in kwargs.items()}


class _TooSlow(Exception):
    pass


class _deadline:
    """Stop the block with _TooSlow after `seconds` (the main thread only: elsewhere the
    block runs to its end and its time is checked after)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.armed = seconds is not None and threading.current_thread() is threading.main_thread()

    def __enter__(self) -> None:
        if self.armed and self.seconds is not None:
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)

    @staticmethod
    def _expire(signum: int, frame: FrameType | None) -> None:
        raise _TooSlow


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
    origin: list[int] = []  # the index of the test that made each call
    running = 0
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
        origin.append(running)
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

    for index, test in enumerate(tests):
        running = index  # read by record()
        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            test()
        finally:
            sys.setprofile(previous)
            active.clear()
            resumable.clear()
    return Captured(func, calls, shared, dropped, items, origin).without_raising()


def save_calls(captured: Captured, path: str) -> None:
    """Write the captured calls' arguments to `path` (pickle), for the other revision to replay
    when its tests are not the same (renamed, split): calls that cannot be pickled are left
    out and counted as dropped. Written whole or not at all."""
    calls, shared, items, origin, dropped = [], [], [], [], captured.dropped
    for call, same, taken, test in zip(
        captured.calls, captured.shared, captured.items, captured.origin, strict=True
    ):
        try:
            pickle.dumps(call)
        except Exception:
            dropped += 1
            continue
        calls.append(call)
        shared.append(same)
        items.append(taken)
        origin.append(test)
    partial = f"{path}.{os.getpid()}.part"
    data = {
        "calls": calls,
        "shared": shared,
        "dropped": dropped,
        "items": items,
        "origin": origin,
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
    captured = Captured(
        func, data["calls"], data["shared"], data["dropped"], data["items"], data.get("origin")
    )
    captured.raised = data["raised"]
    captured.find_plain()  # this revision may return iterators where the other did not
    return captured
