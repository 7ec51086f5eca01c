"""A pytest plugin that records the calls of chosen functions while a test suite runs.

Loaded with `python -m pytest -p reposim_tracer` (this file's directory on PYTHONPATH) and
configured by environment variables:

- REPOSIM_TRACE_SPEC: a JSON file, {"root": workspace, "max_calls": N, "max_bytes": B,
  "targets": [{"id", "path", "qualname"}]};
- REPOSIM_TRACE_OUT: where to write what was recorded (JSON).

For every call of a target it keeps the arguments as they were on entry, then the return value
or the raised exception (for a generator: the items it yielded, bounded, and whether it ran to
its end), what it printed, and the arguments' state afterwards when the call changed them. Each
value is kept as a Python literal when `repr` gives one back, else as a constructor expression
of the harness support module (`C(...)`, `O(...)`, `E(...)`, `T(...)`: checked to rebuild a
structurally equal value), else as a pickle (cloudpickle for what the standard pickle refuses,
when it is importable) with a structural dump beside it (`shown`: for a person to read, never
to run); a call with a value that is none of these is dropped and counted by reason. A call
whose arguments hold one object between them is also kept with all of them as one value
("shared"), so that a replay gets one object there too. Calls are
deduplicated per target, pooled with the arcs each one ran, and at most `max_calls` are chosen
greedily by new arcs (then new exception kinds, then in turn from every test that called the
target). The plugin also names the tests that failed. Standard library (plus cloudpickle and the
support module, both put on the path by RepoSim): this runs in the project's Python.
"""

from __future__ import annotations

import ast
import base64
import collections
import datetime
import enum
import functools
import importlib
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


_NO_VALUE: Any = object()  # describe() with no value: unpickle it from the encoding


class Unencodable(Exception):
    """A value that is neither a literal nor picklable, or too big to keep."""


# A path in pytest's temporary folders (tmp_path: /tmp/pytest-of-<user>/pytest-<n>/...) is
# the run's own: pytest keeps the folders of its last three runs only, so a call replayed with
# it later works or not depending on the runs in between (tomlkit's TOMLFile.write: 6 of its 7
# calls "not reproducible" in one corpus run, all 7 replayed in the runs before and after). Such
# an argument is not kept: the call is checked in situ, where the test makes its folder afresh.
TMP_MARK = "pytest-of-"
TMP_REASON = "a path in pytest's temporary folders (the run's own)"


def _names_pytest_tmp(encoded: dict[str, str]) -> bool:
    """Whether an encoded value holds a path in pytest's temporary folders (a str, or a
    Path, whose pickle keeps its parts as strings)."""
    if "r" in encoded:
        return TMP_MARK in encoded["r"]
    try:
        return TMP_MARK.encode() in base64.b64decode(encoded.get("p", ""))
    except ValueError:
        return False


class _BoundedRepr(reprlib.Repr):
    """reprlib's bounded repr, bounded for the standard containers it does not know too:
    reprlib calls the full builtin repr of any type it has no method for (a dict or list
    subclass, an OrderedDict, a ChainMap) and only cuts the text afterwards. glom passes its
    scope, a ChainMap whose maps hold the parent and child scopes, to every step: its full
    repr grew with the depth of the spec, and test_ref's one call took minutes under the
    tracer (issue 22: glom's suite did not finish within 1,800 s)."""

    def repr_instance(self, x: Any, level: int) -> str:
        kind = type(x)
        name = kind.__name__
        if not _standard_repr(kind):
            return super().repr_instance(x, level)
        if isinstance(x, collections.ChainMap):
            if level <= 0:
                return f"{name}(...)"
            maps = [self.repr1(m, level - 1) for m in x.maps[: self.maxlist]]
            more = ", ..." if len(x.maps) > self.maxlist else ""
            return f"{name}({', '.join(maps)}{more})"
        if isinstance(x, collections.UserDict | collections.UserList):
            return self.repr1(x.data, level)
        for base in (dict, list, tuple, set, frozenset):
            if isinstance(x, base):
                inner = getattr(self, "repr_" + base.__name__)(x, level)
                return inner if kind is base else f"{name}({inner})"
        return super().repr_instance(x, level)


def _standard_repr(kind: type) -> bool:
    """Whether `kind` shows itself with a repr of the standard library's containers (its
    own or inherited), which shows every item."""
    owner = next((k for k in kind.__mro__ if "__repr__" in vars(k)), object)
    return owner is not object and owner.__module__ in ("builtins", "collections")


_SHOWN = _BoundedRepr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxset = 3, 8, 6, 8
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxtuple, _SHOWN.maxdeque = 60, 80, 8, 8
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
SHOWN_LIMIT = 160


def shown(value: Any, data: bytes | None = None) -> str:
    """A one-line readable form of a pickled value: `module.name` for functions and classes,
    what an iterator yields (read from a copy unpickled from `data`, so the value itself is
    not consumed, and only when no project code runs for it: see _StandardOnly), else its repr
    (shortened when long) without memory addresses; "" when repr fails."""
    if callable(value):  # (asked first: a class answering any attribute makes new objects)
        name = getattr(value, "__qualname__", None)
        module = getattr(value, "__module__", None)
        if isinstance(name, str) and isinstance(module, str):
            return f"{module}.{name}"
    if data is not None and hasattr(type(value), "__next__"):
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


def _path(obj: Any) -> str | None:
    """`module:qualname` of a class or function importable by that name, else None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if "<" in qualname or module == "__main__" or module not in sys.modules:
        return None
    found: Any = sys.modules[module]
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module}:{qualname}" if found is obj else None


_DATE_KINDS = (datetime.datetime, datetime.date, datetime.time)
_MARK = re.compile("\x00(\\d+)\x01|\x02(\\d+)\x03")


def _has_identity(value: Any) -> bool:
    """Whether a copy of `value` must stay one object wherever the value holds it (a list, a
    dict, a set, an object of a class): not an immutable value (a number, a date, a class or
    function, an enum member, a pattern or match) or a module-level singleton (written by
    name)."""
    support = _support()
    if support.immutable_value(value):
        return False
    if type(value) in (list, dict, set, bytearray):
        return True
    return support.shared_name(value) is None


_ATOMS = (str, bytes, int, float, complex, bool, type(None))
_CONTAINERS = (list, dict, set, tuple, frozenset, collections.deque)
SHARED_WALK = 50_000  # objects visited at most, over a call's arguments, to find one shared


def _shares(values: list[Any], limit: int = SHARED_WALK) -> bool:
    """Whether two of a call's argument values hold one object with an identity (one holds the
    other, or both hold a third): each encoded apart, it comes back as two objects. sqlparse's
    `ReindentFilter._flatten_up_to_token(self, token)` looks for `token` among the nodes of
    `self._curr_stmt` with `is`: replayed with the two apart, it never found it, and all 40
    recorded calls differed on the reference. False past `limit` objects (taken as not shared:
    the arguments are then encoded apart, as before)."""
    structured = [v for v in values if not isinstance(v, _ATOMS)]
    if len(structured) < 2:
        return False
    support = _support()
    owners: dict[int, int] = {}
    common: list[Any] = []
    budget = limit
    for index, value in enumerate(structured):
        stack, seen = [value], set()
        while stack:
            item = stack.pop()
            key = id(item)
            if key in seen or isinstance(item, _ATOMS):
                continue
            seen.add(key)
            budget -= 1
            if budget < 0:
                return False
            if owners.setdefault(key, index) != index:
                common.append(item)  # (what it holds is held by both too)
                continue
            if type(item) in _CONTAINERS or not support.immutable_value(item):
                stack.extend(support._members(item))  # (a class, a module... not walked)
    return any(_has_identity(item) for item in common)


def _remembered(value: Any) -> bool:
    """Whether a value found too big (or unpicklable) is taken as such for the rest of a test
    without trying again: an object with an identity, or a subclass of an immutable builtin
    that carries a state of its own (tomlkit's `Source`, a str holding its parser's position
    and the characters yet to read). A plain number or string is not: one that came in the
    same call as the culprit is innocent."""
    if _has_identity(value):
        return True
    kind = type(value)
    if kind.__module__ == "builtins" or isinstance(value, enum.Enum):
        return False
    return bool(getattr(value, "__dict__", None))


class _Builder:
    """A constructor expression that rebuilds a value readably (support's C, O, E, T), made
    from the value's class and its fields, or None when there is none."""

    MAX_DEPTH = 24  # nesting of one expression (a reference back up costs none)

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.seen: dict[int, tuple[Any, int]] = {}  # objects with an identity, written or begun
        self.labels: dict[int, int] = {}  # those met again: their label for N(...) / R(...)

    def expression(self, value: Any) -> str:
        """The whole value's expression: an object met again (a cycle, or a member shared) is
        written once as N(label, ...) and then R(label), all inside G(...)."""
        text = self.build(value)
        marks = {index: self.labels.get(key) for key, (_, index) in self.seen.items()}

        def opened(match: re.Match[str]) -> str:
            if match.group(1) is not None:
                label = marks[int(match.group(1))]
                return f"N({label}, " if label else ""
            return ")" if marks[int(match.group(2))] else ""

        text = _MARK.sub(opened, text)
        return f"G({text})" if self.labels else text

    def build(self, value: Any, depth: int = 0, stack: frozenset[int] = frozenset()) -> str:
        key = id(value)
        if key in self.seen:
            label = self.labels.setdefault(key, len(self.labels) + 1)
            return f"R({label})"
        if depth > self.MAX_DEPTH or key in stack:
            raise Unencodable("no constructor: too deep or a reference cycle")
        identity = _has_identity(value)
        if identity:
            index = len(self.seen)
            self.seen[key] = (value, index)  # (the value kept: its id stays its own)
        text = self._build(value, depth + 1, stack | {key})
        if identity:  # where N(label, ...) goes if the object is met again
            text = f"\x00{index}\x01{text}\x02{index}\x03"
        if len(text) > self.max_bytes:
            raise Unencodable("too big")
        return text

    def _dict(self, value: Any, depth: int, stack: frozenset[int]) -> str:
        pairs = []
        size = 0
        for k, v in value.items():
            pairs.append(f"{self.build(k, depth, stack)}: {self.build(v, depth, stack)}")
            size += len(pairs[-1]) + 2
            if size > self.max_bytes:  # (stopped here, not after the whole dict)
                raise Unencodable("too big")
        return "{" + ", ".join(pairs) + "}"

    def _items(self, values: Any, depth: int, stack: frozenset[int]) -> list[str]:
        items = []
        size = 0
        for v in values:
            items.append(self.build(v, depth, stack))
            size += len(items[-1]) + 2
            if size > self.max_bytes:  # (stopped here, not after the whole collection)
                raise Unencodable("too big")
        return items

    def _build(self, value: Any, depth: int, stack: frozenset[int]) -> str:
        kind = type(value)
        if _literal_ok(value) and kind not in (set, frozenset):
            return repr(value)
        if kind is float:
            return f"float({repr(value)!r})"
        if kind is list:
            return "[" + ", ".join(self._items(value, depth, stack)) + "]"
        if kind is tuple:
            items = self._items(value, depth, stack)
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if kind in (set, frozenset):
            items = self._items(value, depth, stack)
            inner = "{" + ", ".join(items) + "}" if items else ""
            return inner if kind is set and items else f"{kind.__name__}({inner})"
        if kind is dict:
            return self._dict(value, depth, stack)
        import collections

        if kind is collections.defaultdict:
            factory = value.default_factory
            made = "None" if factory is None else f"named({_path(factory)!r})"
            if factory is not None and _path(factory) is None:
                raise Unencodable("no constructor: the default factory is not importable")
            return f"C('collections:defaultdict', {made}, {self._dict(value, depth, stack)})"
        if kind in (collections.OrderedDict, collections.Counter):
            return f"C('collections:{kind.__name__}', {self._dict(value, depth, stack)})"
        if kind is collections.deque:
            inner = "[" + ", ".join(self._items(value, depth, stack)) + "]"
            return f"C('collections:deque', {inner}, {value.maxlen!r})"
        if isinstance(value, type) or inspect.isroutine(value):
            named = _path(value)
            if named is not None:
                return f"named({named!r})"
            if inspect.ismethod(value) and isinstance(value.__func__.__name__, str):
                # a bound method: the method of that object, as a pickle keeps it
                owner = self.build(value.__self__, depth, stack)
                return f"C('builtins:getattr', {owner}, {value.__func__.__name__!r})"
            raise Unencodable("no constructor: not importable by name")
        support = _support()
        if support._is_pattern(value) and kind.__module__ in ("re", "_regex"):
            module = "re" if kind.__module__ == "re" else "regex"
            source = self.build(value.pattern, depth, stack)
            return f"C('{module}:compile', {source}, {value.flags!r})"
        if support._is_match(value):
            found = support._match_reduction(value)
            if found is None:
                raise Unencodable("no constructor: no pattern method finds the match again")
            items = [self.build(v, depth, stack) for v in (value.re, found[0].__name__)]
            items += [self.build(v, depth, stack) for v in (value.string, value.pos, value.endpos)]
            return "M(" + ", ".join(items) + ")"
        path = _path(kind)
        if path is None:
            # a class made at run time (pytz makes one per time zone) may still say how a
            # pickle rebuilds its objects: a named factory and plain arguments
            reduced = self._reduced(value, depth, stack, anonymous=True)
            if reduced is None:
                raise Unencodable("no constructor: its class is not importable by name")
            return reduced
        import enum

        if isinstance(value, enum.Enum):
            if value.name in kind.__members__:
                return f"E({path!r}, {value.name!r})"
            return f"C({path!r}, {self.build(value.value, depth, stack)})"  # a combined Flag
        shared = _support().shared_name(value)
        if shared is not None:  # a module-level singleton: itself, not a copy
            return f"named({shared!r})"
        if isinstance(value, tuple) and hasattr(kind, "_fields"):
            return f"C({path!r}, " + ", ".join(self._items(value, depth, stack)) + ")"
        import unittest

        if isinstance(value, unittest.TestCase):
            method = getattr(value, "_testMethodName", "runTest")
            own = _support().unittest_state(value)
            return f"T({path!r}, {method!r}" + self._fields(own, depth, stack, lenient=True) + ")"
        import dataclasses

        if dataclasses.is_dataclass(value):
            init = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init}
            return f"C({path!r}" + self._fields(init, depth, stack) + ")"
        attributes = getattr(kind, "__attrs_attrs__", None)
        if attributes is not None:
            init = {
                (getattr(a, "alias", None) or a.name.lstrip("_")): getattr(value, a.name)
                for a in attributes
                if a.init
            }
            return f"C({path!r}" + self._fields(init, depth, stack) + ")"
        reduced = self._reduced(value, depth, stack)
        if reduced is not None:
            return reduced
        base = _support().content_base(kind)
        if base is not None:
            return self._extended(value, base, path, depth, stack)
        own_state = _support().state(value)
        import ast

        # (an ast node is made by its C base's __new__, all its state in __dict__)
        if own_state is None or (
            kind.__new__ is not object.__new__  # type: ignore[comparison-overlap]
            and not isinstance(value, ast.AST)
        ):
            raise Unencodable("no constructor: its state is not in __dict__ or __slots__")
        return f"O({path!r}" + self._fields(own_state, depth, stack) + ")"

    def _extended(
        self, value: Any, base: type, path: str, depth: int, stack: frozenset[int]
    ) -> str:
        """`S(class, content, field=...)` for an object of a class that extends a builtin: its
        content read with the builtin's own methods (an overridden `__iter__`, `__str__` or
        `items` does not run), then its own fields."""
        content: Any
        if base in (str, bytes, tuple, list):
            content = base.__getitem__(value, slice(None))
        elif base is int:
            content = int.__int__(value)
        elif base is float:
            content = float.__float__(value)
        elif base in (set, frozenset):
            content = set(base.__iter__(value))
        else:
            content = dict(base.items(value))  # type: ignore[attr-defined]
        if base is frozenset:
            content = frozenset(content)
        fields = _support().state(value) or {}
        text = self.build(content, depth, stack)
        return f"S({path!r}, {text}" + self._fields(fields, depth, stack) + ")"

    def _reduced(
        self, value: Any, depth: int, stack: frozenset[int], anonymous: bool = False
    ) -> str | None:
        """`C(factory, *args)` when __reduce_ex__ gives a named factory and plain arguments
        (Decimal, Fraction, datetime...; an exception; an object of a class with a __reduce__
        of its own), and `F(C(factory, *args), field=...)` when it also gives the fields a
        pickle sets on what the factory made (an exception's attributes beside its args);
        None for the default reduction (O and S write those) or anything else. `anonymous`: its
        class cannot be named, so only its own reduction can rebuild it."""
        kind = type(value)
        if kind.__module__ == "datetime" and isinstance(value, _DATE_KINDS):
            return self._date(value, depth, stack)
        if kind is functools.partial and not getattr(value, "__dict__", None):
            parts = [self.build(value.func, depth, stack)]
            parts += self._items(value.args, depth, stack)
            return (
                "C('functools:partial', "
                + ", ".join(parts)
                + self._fields(value.keywords, depth, stack)
                + ")"
            )
        # a class's own __reduce__ only where its fields cannot be set directly (O): a reduction
        # may keep less than the object holds (cachetools' TTL links keep key and expiry, not
        # their neighbours), which O would keep
        own = _own_reduce(kind) and (
            anonymous
            or kind.__new__ is not object.__new__  # type: ignore[comparison-overlap]
            or _support().state(value) is None
        )
        if kind.__module__ not in ("decimal", "fractions", "datetime", "pathlib", "uuid") and not (
            isinstance(value, BaseException) or own
        ):
            return None
        if kind.__module__ == "ast":
            return None  # (O writes a node with its fields by name)
        try:
            reduced = value.__reduce_ex__(4)
        except Exception:
            return None
        if not isinstance(reduced, tuple) or len(reduced) < 2 or any(reduced[3:5]):
            return None  # (a string: a global's name; list or dict items: S writes those)
        factory = _path(reduced[0])
        if factory is None or factory.startswith("copyreg:"):
            return None
        state = reduced[2] if len(reduced) > 2 else None
        setstate = getattr(kind, "__setstate__", None)  # (an exception's sets each field)
        if state and (
            not isinstance(state, dict) or setstate not in (None, BaseException.__setstate__)
        ):
            return None
        call = (
            f"C({factory!r}"
            + "".join(", " + item for item in self._items(reduced[1], depth, stack))
            + ")"
        )
        if not state:
            return call
        return f"F({call}" + self._fields(state, depth, stack) + ")"

    def _date(self, value: Any, depth: int, stack: frozenset[int]) -> str:
        """A date, time or datetime by its fields (its pickle's arguments are packed bytes):
        `C('datetime:datetime', 2013, 11, 10, 14, 20, 58, tzinfo=...)`, trailing zeros left out."""
        kind = type(value)
        names = {
            datetime.date: ("year", "month", "day"),
            datetime.time: ("hour", "minute", "second", "microsecond"),
            datetime.datetime: ("year", "month", "day", "hour", "minute", "second", "microsecond"),
        }[next(k for k in kind.__mro__ if k in _DATE_KINDS)]
        numbers = [getattr(value, name) for name in names]
        while len(numbers) > 3 and numbers[-1] == 0:
            numbers.pop()
        extra = {}
        if getattr(value, "tzinfo", None) is not None:
            extra["tzinfo"] = value.tzinfo
        if getattr(value, "fold", 0):
            extra["fold"] = value.fold
        path = _path(kind) or "datetime:" + kind.__name__
        return (
            f"C({path!r}, "
            + ", ".join(str(n) for n in numbers)
            + self._fields(extra, depth, stack)
            + ")"
        )

    def _fields(
        self, fields: dict[str, Any], depth: int, stack: frozenset[int], lenient: bool = False
    ) -> str:
        out = []
        for name, item in fields.items():
            if not name.isidentifier():
                raise Unencodable("no constructor: a field is not a name")
            try:
                text = self.build(item, depth, stack)
            except Unencodable:
                if not lenient:
                    raise
                text = f"P({_pickled(item, self.max_bytes)[0]!r})"
            out.append(f", {name}={text}")
        return "".join(out)


def _own_reduce(kind: type) -> bool:
    """Whether a class (or a base of it other than `object`) says how a pickle keeps it."""
    return any("__reduce__" in vars(k) or "__reduce_ex__" in vars(k) for k in kind.__mro__[:-1])


_cloud_pickler: Any = None


def _cloud_dumps(value: Any, limit: int | None = None) -> bytes:
    """cloudpickle's pickle of `value`, with the support module's reductions first (named
    singletons, modules, regular-expression matches); the support module's TooBig as soon as
    it is over `limit` bytes."""
    global _cloud_pickler
    import cloudpickle  # type: ignore[import-untyped]

    if _cloud_pickler is None:
        reduction = _support().reduction

        class CloudPickler(cloudpickle.Pickler):  # type: ignore[misc]
            def reducer_override(self, obj: Any) -> Any:
                found = reduction(obj)
                return super().reducer_override(obj) if found is NotImplemented else found

        _cloud_pickler = CloudPickler
    out: io.BytesIO = _support().Bounded(limit)
    _cloud_pickler(out, protocol=4).dump(value)
    return out.getvalue()


def _pickled(value: Any, max_bytes: int) -> tuple[str, bool]:
    """(base64 pickle, made by cloudpickle) of a value that comes back from it; the standard
    pickle first (module-level singletons named, matches found again: the support module's
    `dumps`), cloudpickle for what it refuses (lambdas, closures, local classes)."""
    too_big = _support().TooBig
    try:
        data = _support().dumps(value, limit=max_bytes)  # (stopped once over the limit)
        pickle.loads(data)  # a value that does not come back is of no use to a harness
        cloud = False
    except too_big:
        raise Unencodable("too big") from None
    except Exception as exc:
        try:
            import cloudpickle  # noqa: F401
        except ImportError:
            raise Unencodable(f"unpicklable ({_why(exc)}; no cloudpickle)") from None
        try:
            data = _cloud_dumps(value, limit=max_bytes)
            pickle.loads(data)
            cloud = True
        except too_big:
            raise Unencodable("too big") from None
        except Exception as cloud_exc:
            raise Unencodable(f"unpicklable ({_why(cloud_exc)})") from None
    return base64.b64encode(data).decode("ascii"), cloud


def _why(exc: BaseException) -> str:
    """An exception as a short reason (`TypeError: cannot pickle 'generator' object`): the
    kind alone does not tell which value was at fault."""
    text = " ".join(str(exc).split())
    text = _ADDRESS.sub("", text)
    return f"{type(exc).__name__}: {text[:60]}" if text else type(exc).__name__


def _support() -> Any:
    """The harness support module (copied beside this file: same comparator, same dump)."""
    name = "reposim_harness_support"
    if name not in sys.modules:
        try:
            importlib.import_module(name)
        except ImportError:  # this file imported as a package module: load the sibling file
            from importlib import util

            path = Path(__file__).with_name(f"{name}.py")
            spec = util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    return sys.modules[name]


def encode(value: Any, max_bytes: int, *, lazy: bool = False) -> dict[str, str]:
    """{"r": source} (a literal, or a constructor expression checked to rebuild an equal
    value) or {"p": base64 pickle, "s": its structural dump}; raises Unencodable with the
    reason. `lazy`: the dump is left for `describe` (made only for the calls kept)."""
    if _literal_ok(value) and type(value) not in (set, frozenset):
        text = repr(value)
        try:
            if ast.literal_eval(text) == value:
                if len(text) > max_bytes:
                    raise Unencodable("too big")
                return {"r": text}
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            pass
    support = _support()
    try:
        if hasattr(type(value), "__next__"):
            # (checking an expression compares what both values yield: it would consume the
            # test run's own iterator) a pickle copies it without reading it
            raise Unencodable("an iterator")
        text = _Builder(max_bytes).expression(value)
        support._LABELLED.clear()  # (an expression that failed half-way left its labels)
        rebuilt = eval(text, vars(support))
        with support.live_values():  # (the test goes on with `value`: its iterators stay unread)
            equal = support.same(rebuilt, value)
        if equal and support.dump(rebuilt) == support.dump(value):
            return {"r": text}
    except Unencodable as exc:
        if str(exc) == "too big":
            raise
    except Exception:
        pass
    data, cloud = _pickled(value, max_bytes)
    encoded = {"p": data}
    if cloud:
        encoded["c"] = "1"
    if not lazy:
        describe(encoded, value)
    return encoded


def describe(encoded: dict[str, str], value: Any = _NO_VALUE) -> None:
    """Add the readable form ("s") of a pickled value: its structural dump, or what an
    iterator yields; `value` unpickled from the encoding when not given."""
    if "p" not in encoded or "s" in encoded:
        return
    data = base64.b64decode(encoded["p"])
    if value is _NO_VALUE:
        try:
            value = pickle.loads(data)
        except Exception:
            return
    support = _support()
    if hasattr(type(value), "__next__"):
        readable = shown(value, data)
    else:
        try:  # the structural dump: `Class(field=value, ...)`, nested
            readable = " ".join(support.dump(value).split())
        except Exception:
            readable = shown(value)
        if len(readable) > 400:
            readable = readable[:399] + "…"
    if readable:
        encoded["s"] = readable


def _form(name: str, encoded: dict[str, str]) -> str:
    """The readable form of an encoded argument (`name=` first for a keyword's)."""
    text = encoded.get("s") or encoded.get("r") or "?"
    text = text if len(text) <= SHOWN_LIMIT else text[: SHOWN_LIMIT - 1] + "…"
    return f"{name}={text}" if name else text


def live_form(value: Any) -> str:
    """A short readable form of a live value that is not kept (an argument of a call checked
    in situ): its repr when that says something, else a shallow structural dump."""
    if callable(value):
        text = shown(value)
    else:
        try:  # bounded for containers: a live argument is often huge
            text = " ".join(_ADDRESS.sub("", _SHOWN.repr(value)).split())
        except Exception:
            text = ""
    if not text or (text.startswith("<") and " object" in text):
        try:
            text = " ".join(_support().dump(value, depth=2).split())
        except Exception:
            text = text or f"<{type(value).__qualname__}>"
    return text if len(text) <= SHOWN_LIMIT else text[: SHOWN_LIMIT - 1] + "…"


class _Tee(io.TextIOBase):
    """Writes through to the stream it replaces and keeps a copy (what a target prints)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.kept = io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return int(self.stream.write(text) or 0)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _start_offset(code: CodeType) -> int:
    """The offset of a generator's first RESUME: a resume event at or before it is its start
    (later resumes continue after a yield)."""
    import dis

    for instruction in dis.get_instructions(code):
        if instruction.opname == "RESUME":
            return instruction.offset
    return 0


def _note_arc(state: dict[str, Any], frame: FrameType, event: str, arg: Any) -> None:
    """What a traced call's local trace keeps of an event: the arc it ran (a line; the return,
    as the arc out of the function) and the exception in flight."""
    if event == "line":
        state["exception"] = None
        state["arcs"].add((state["last"], frame.f_lineno))
        state["last"] = frame.f_lineno
    elif event == "exception":
        state["exception"] = arg[1]
    elif event == "return":
        state["arcs"].add((state["last"], -frame.f_code.co_firstlineno))


def _call_values(frame: FrameType) -> tuple[list[Any], dict[str, Any]]:
    """The arguments a call was made with (positional, then keyword-only and **kwargs), read
    from its frame at the call event."""
    code = frame.f_code
    names = list(code.co_varnames[: code.co_argcount])
    kwonly = list(code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount])
    index = code.co_argcount + code.co_kwonlyargcount
    local = frame.f_locals
    positional = [local[name] for name in names]
    keywords = {name: local[name] for name in kwonly}
    if code.co_flags & inspect.CO_VARARGS:
        positional.extend(local[code.co_varnames[index]])
        index += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        keywords.update(local[code.co_varnames[index]])
    return positional, keywords


_ABSENT: Any = object()


def _test_file(path: str) -> bool:
    """Whether a file is a test module or a conftest (by pytest's default names): the classes
    of test modules are not state a target reads."""
    name = Path(path).name
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def _test_class(kind: type) -> bool:
    unittest = sys.modules.get("unittest")
    testcase = unittest is not None and issubclass(kind, unittest.TestCase)
    return testcase or kind.__name__.startswith("Test")


class ClassState:
    """The class attributes a test run sets (boolean.py's `BooleanAlgebra()` puts `TRUE`,
    `FALSE`, `AND`, `OR`... on its expression classes; methods read them through `self`): each
    project class's attributes as its module left them once imported, and at a call, those
    rebound or added since, encoded once (the harness sets them for the call: a harness
    process that never builds an algebra would see `TRUE = None`)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.pristine: dict[int, tuple[type, dict[str, Any]]] = {}
        # (class path, name, id(value)) of a state -> its encoding, with the values kept alive
        # so that no other object takes their ids; cleared at each test
        self._encoded: dict[tuple[Any, ...], tuple[list[Any], dict[str, str] | None]] = {}

    def note_module(self, namespace: dict[str, Any]) -> None:
        """The classes a module defines, as it left them (its body has just run)."""
        module = namespace.get("__name__")
        for value in list(namespace.values()):
            if (
                isinstance(value, type)
                and value.__module__ == module
                and id(value) not in self.pristine
                and not _test_class(value)
            ):
                self.pristine[id(value)] = (value, dict(vars(value)))

    def changes(self) -> dict[str, dict[str, Any]]:
        """`{"module:Class": {name: value}}`: the attributes rebound or added since import."""
        found: dict[str, dict[str, Any]] = {}
        for kind, before in self.pristine.values():
            changed = {
                name: value
                for name, value in list(vars(kind).items())
                if before.get(name, _ABSENT) is not value and not name.startswith("__")
            }
            path = _path(kind) if changed else None
            if path is not None:
                found[path] = changed
        return found

    def new_test(self) -> None:
        self._encoded.clear()

    def encoded(self, changes: dict[str, dict[str, Any]] | None = None) -> dict[str, str] | None:
        """The encoding of the class state now (or of `changes`), None when there is none or
        nothing of it can be kept (an attribute that cannot be is left out)."""
        changes = self.changes() if changes is None else changes
        if not changes:
            return None
        values = [v for fields in changes.values() for v in fields.values()]
        key = tuple((path, name, id(v)) for path, f in changes.items() for name, v in f.items())
        hit = self._encoded.get(key)
        if hit is not None:
            return hit[1]
        try:
            encoded: dict[str, str] | None = encode(changes, self.max_bytes, lazy=True)
        except Exception:
            kept: dict[str, dict[str, Any]] = {}
            for path, fields in changes.items():
                for name, value in fields.items():
                    try:
                        encode(value, self.max_bytes, lazy=True)
                    except Exception:
                        continue
                    kept.setdefault(path, {})[name] = value
            try:
                encoded = encode(kept, self.max_bytes, lazy=True) if kept else None
            except Exception:
                encoded = None
        self._encoded[key] = (values, encoded)
        return encoded


class Recorder:
    POOL = 120  # candidate calls kept per target before the greedy choice
    PER_TEST = 12  # candidates one test may add to a target's pool (more only with new arcs)
    ENCODED_PER_TEST = 200  # calls of one target encoded in one test at most
    IN_SITU_EXTRA = 6  # calls checked in situ added beyond those the greedy choice takes

    def __init__(self, spec: dict[str, Any]) -> None:
        root = os.path.realpath(spec.get("root") or Path.cwd())
        self.max_calls = int(spec.get("max_calls", 40))
        self.max_bytes = int(spec.get("max_bytes", 20000))
        self.max_yields = int(spec.get("max_yields", 50))
        self.targets: dict[tuple[str, str], str] = {}
        for target in spec["targets"]:
            path = os.path.realpath(Path(root) / target["path"])
            self.targets[(path, target["qualname"])] = target["id"]
        self.root = root
        ids = [t["id"] for t in spec["targets"]]
        self.pool: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
        self.seen: dict[str, set[str]] = {i: set() for i in ids}
        self.dropped: dict[str, dict[str, int]] = {i: {} for i in ids}
        self.tests: dict[str, dict[str, None]] = {i: {} for i in ids}
        self.kinds: dict[str, str] = {}
        self.encoded: dict[tuple[str, str], int] = {}
        self._known: dict[str, set[tuple[int, int]]] = {i: set() for i in ids}  # pool's arcs
        self._admitted: dict[tuple[str, str], int] = {}  # (target, test): calls in the pool
        # (target, test) whose last call traced for its arcs alone had new ones: encode again
        self._hungry: set[tuple[str, str]] = set()
        # (target, test) -> calls of the target so far in the test: a call that cannot be kept
        # is named by its number for the check in situ (the run is deterministic)
        self.ordinals: dict[tuple[str, str], int] = {}
        self.modules: dict[str, str] = {}
        self.failed: list[str] = []
        self.test = ""
        self._codes: dict[CodeType, str | None] = {}
        self._starts: dict[CodeType, int] = {}
        self._generators: dict[FrameType, dict[str, Any]] = {}
        self._lock = threading.Lock()
        # objects an argument was found too big as, in the current test (kept alive, so no other
        # object takes the id): a parser passed to every grammar action is pickled (as far as
        # the limit) once a test, not once a call. It would have to shrink between two calls
        # of one test to be kept; the next test tries again
        self._too_big: dict[int, Any] = {}
        self._unpickled: dict[int, Any] = {}  # the same for a probed call's plain pickle
        self._too_big_test = ""
        self.classes = ClassState(self.max_bytes)

    def drop(self, target: str, reason: str) -> None:
        with self._lock:
            counts = self.dropped[target]
            counts[reason] = counts.get(reason, 0) + 1

    def _target_of(self, code: CodeType) -> str | None:
        found = self._codes.get(code, "")
        if found != "":
            return found
        key = (os.path.realpath(code.co_filename), code.co_qualname)
        target = self.targets.get(key)
        if target is not None:
            if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
                self.kinds[target] = "coroutine"
                target = None
            elif code.co_flags & inspect.CO_GENERATOR:
                self.kinds[target] = "generator"
                self._starts[code] = _start_offset(code)
        self._codes[code] = target
        return target

    def make_global_trace(self) -> Any:
        """The function sys.settrace calls at every call the test run makes: one dictionary
        look-up for a code object already known not to be a target (nearly every call)."""
        known = self._codes.get
        rest = self.global_trace

        def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
            if known(frame.f_code, "") is None:
                return None
            return rest(frame, event, arg)

        return global_trace

    def global_trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        target = self._target_of(frame.f_code)
        if target is None:
            if frame.f_code.co_name == "<module>" and self.project_file(frame.f_code.co_filename):
                return self._watch_module(frame)
            return None
        generator = frame.f_code.co_flags & inspect.CO_GENERATOR
        if not generator:
            number = (target, self.test)
            self.ordinals[number] = self.ordinals.get(number, 0) + 1
        if len(self.pool[target]) >= 2 * self.POOL:
            return None  # (_finish keeps no more calls of it: not worth encoding)
        if generator:
            state = self._generators.get(frame)
            if state is not None:
                return state["trace"]
            if frame.f_lasti > self._starts.get(frame.f_code, 0):
                return None  # a generator started before it was watched
        self.tests[target].setdefault(self.test, None)
        counted = (target, self.test)
        if (
            not generator
            and counted not in self._hungry
            and (
                len(self.pool[target]) >= self.POOL
                or self._admitted.get(counted, 0) >= self.PER_TEST
            )
        ):
            # the pool keeps this call only for arcs it lacks: trace the arcs alone (encoding
            # the arguments costs far more, and nearly all such calls are dropped)
            return self._probe(frame, target, counted)
        if self.encoded.get(counted, 0) >= self.ENCODED_PER_TEST:
            return None
        self.encoded[counted] = self.encoded.get(counted, 0) + 1
        return self._start(frame, target, bool(generator))

    def project_file(self, path: str) -> bool:
        """A module of the project's own (not a test module, not RepoSim's)."""
        full = os.path.realpath(path)
        return (
            full.startswith(self.root + os.sep)
            and "/.reposim/" not in full
            and not _test_file(full)
        )

    def _watch_module(self, frame: FrameType) -> Any:
        """A module of the project is being imported: note its classes once its body ran."""
        frame.f_trace_lines = False

        def module_trace(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "return":
                self.classes.note_module(frame.f_globals)
            return module_trace

        return module_trace

    def _probe(self, frame: FrameType, target: str, counted: tuple[str, str]) -> Any:
        """A local trace that keeps a call's arcs only, beside a plain pickle of its arguments
        (far cheaper than encoding them); if it ran arcs the pool lacks, it is kept from that
        pickle (a branch one test takes once, after the pool filled, is not lost); when the
        arguments do not pickle, the target's next calls in this test are encoded again
        (until one is kept)."""
        known = self._known[target]
        arcs: set[tuple[int, int]] = set()
        last = -frame.f_code.co_firstlineno
        positional, keywords = _call_values(frame)
        snapshot = self._snapshot(positional, keywords)
        exception: list[BaseException | None] = [None]
        streams = (sys.stdout, sys.stderr)
        tees = (_Tee(streams[0]), _Tee(streams[1]))
        sys.stdout, sys.stderr = tees

        def probe(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal last
            if event == "line":
                exception[0] = None
                arcs.add((last, frame.f_lineno))
                last = frame.f_lineno
            elif event == "exception":
                exception[0] = arg[1]
            elif event == "return":
                sys.stdout, sys.stderr = streams
                arcs.add((last, -frame.f_code.co_firstlineno))
                if not arcs <= known:
                    output = (tees[0].kept.getvalue(), tees[1].kept.getvalue())
                    if snapshot is None or not self._late(
                        frame, target, snapshot, positional, arcs, exception[0], arg, output
                    ):
                        self._hungry.add(counted)
            return probe

        return probe

    def _snapshot(self, positional: list[Any], keywords: dict[str, Any]) -> bytes | None:
        """A call's arguments as the standard pickle keeps them (named singletons by name),
        or None when they do not pickle under the size limit (not tried again this test for
        the same object: a parser passed to every grammar action)."""
        if self._too_big_test != self.test:
            self._too_big.clear()
            self._unpickled.clear()
            self._too_big_test = self.test
        values = [*positional, *keywords.values()]
        if any(id(v) in self._unpickled for v in values):
            return None
        try:
            return bytes(_support().dumps((positional, keywords), limit=self.max_bytes))
        except Exception:
            for value in values:
                if _remembered(value):
                    self._unpickled[id(value)] = value
            return None

    def _late(
        self,
        frame: FrameType,
        target: str,
        snapshot: bytes,
        positional: list[Any],
        arcs: set[tuple[int, int]],
        exception: BaseException | None,
        value: Any,
        output: tuple[str, str],
    ) -> bool:
        """Keep a probed call that ran new arcs, its arguments encoded from the pickle taken
        before it ran (what it left them as, from the live ones), and the class state it ran
        in. False when they cannot be."""
        try:
            before, keywords = pickle.loads(snapshot)
            args = [self._argument(v) for v in before]
            kwargs = {k: self._argument(v) for k, v in keywords.items()}
            shared = self._together(before, keywords)
        except Exception:
            return False
        self.modules.setdefault(target, str(frame.f_globals.get("__name__", "")))
        state: dict[str, Any] = {
            "exception": exception,
            "arcs": arcs,
            "test": self.test,
            "yields": [],
            "error": None,
            "call": self.ordinals.get((target, self.test), 0),
            # the class state as the call ends, not as it began: reading it at every probed
            # call's start cost a third more CPU on glom's suite (its ~100 classes), and a call
            # that changes class attributes itself is rare
            "classes": self.classes.encoded(),
            "shared": shared,
        }
        self._finish(target, positional, args, kwargs, value, state, output=output)
        return True

    def _start(self, frame: FrameType, target: str, generator: bool) -> Any:
        positional, keywords = _call_values(frame)
        try:
            args = [self._argument(value) for value in positional]
            kwargs = {k: self._argument(v) for k, v in keywords.items()}
            shared = self._together(positional, keywords)
        except Unencodable as exc:
            return self._in_situ(frame, target, f"an argument: {exc}", positional, keywords)
        except Exception as exc:  # a repr or a property that raises
            return self._in_situ(
                frame, target, f"an argument: {type(exc).__name__}", positional, keywords
            )
        self.modules.setdefault(target, str(frame.f_globals.get("__name__", "")))
        state: dict[str, Any] = {
            "exception": None,
            "arcs": set(),
            "last": -frame.f_code.co_firstlineno,
            "test": self.test,
            "yields": [],
            "error": None,
            "call": self.ordinals.get((target, self.test), 0),
            "classes": self.classes.encoded(),  # as the call starts (it may change them)
            "shared": shared,
        }
        tees = None
        if not generator:
            tees = (_Tee(sys.stdout), _Tee(sys.stderr))
            state["streams"] = (sys.stdout, sys.stderr)
            sys.stdout, sys.stderr = tees

        def local_trace(frame: FrameType, event: str, arg: Any) -> Any:
            _note_arc(state, frame, event, arg)
            if event == "return":
                if generator:
                    self._resumed(frame, target, positional, args, kwargs, arg, state)
                    state["last"] = frame.f_lineno
                else:
                    sys.stdout, sys.stderr = state["streams"]
                    output = (tees[0].kept.getvalue(), tees[1].kept.getvalue()) if tees else None
                    self._finish(target, positional, args, kwargs, arg, state, output=output)
            return local_trace

        state["trace"] = local_trace
        if generator:
            self._generators[frame] = state
            state.update(target=target, args=args, kwargs=kwargs)
        return local_trace

    def _in_situ(
        self,
        frame: FrameType,
        target: str,
        why: str,
        positional: list[Any],
        keywords: dict[str, Any],
    ) -> Any:
        """A call with an argument that cannot be kept: a candidate for a check in situ (the
        test runs again and the call is compared live), with its arcs and what its arguments
        and result looked like; a generator's is dropped."""
        if frame.f_code.co_flags & inspect.CO_GENERATOR:
            self.drop(target, why)
            return None
        if not self.test:  # made while the tests were collected (a decorator at import): no
            self.drop(target, f"{why}, outside a test")  # test reruns it
            return None
        self.modules.setdefault(target, str(frame.f_globals.get("__name__", "")))
        shown_args = [live_form(v) for v in positional]
        shown_args += [f"{k}={live_form(v)}" for k, v in keywords.items()]
        state: dict[str, Any] = {
            "exception": None,
            "arcs": set(),
            "last": -frame.f_code.co_firstlineno,
            "test": self.test,
            "call": self.ordinals.get((target, self.test), 0),
        }

        def local_trace(frame: FrameType, event: str, arg: Any) -> Any:
            _note_arc(state, frame, event, arg)
            if event == "return":
                self._admit_in_situ(target, state, why, shown_args, arg)
            return local_trace

        return local_trace

    def _admit_in_situ(
        self,
        target: str,
        state: dict[str, Any],
        why: str,
        shown_args: list[str],
        value: Any,
        encoded: tuple[list[dict[str, str]], dict[str, dict[str, str]]] | None = None,
    ) -> None:
        exception = state["exception"]
        if exception is not None and value is None:
            if not isinstance(exception, Exception):
                return
            outcome = f"raised {type(exception).__qualname__}: {_support().message(exception)[:80]}"
        else:
            outcome = f"returned {live_form(value)}"
        call = {
            "args": [],
            "kwargs": {},
            "test": state["test"],
            "in_situ": {"call": state["call"], "why": why, "shown": shown_args, "outcome": outcome},
        }
        if encoded is not None:  # (made readable only if it is kept)
            pairs = [*(["", a] for a in encoded[0]), *([k, v] for k, v in encoded[1].items())]
            call["in_situ"]["encoded"] = pairs
        self._admit(target, call, f"in situ {state['test']} {state['call']}", state["arcs"])

    def _admit(self, target: str, call: dict[str, Any], key: str, arcs: set[Any]) -> None:
        """Into the target's pool, unless it is a call already there, or the pool (or the
        test's share of it) is full and the call runs no arc the pool lacks."""
        with self._lock:
            pool = self.pool[target]
            if key in self.seen[target]:
                return
            counted = (target, call["test"])
            from_test = self._admitted.get(counted, 0)
            full = len(pool) >= self.POOL or from_test >= self.PER_TEST
            if full and (not arcs - self._known[target] or len(pool) >= 2 * self.POOL):
                return
            self.seen[target].add(key)
            call["arcs"] = arcs
            pool.append(call)
            self._known[target] |= arcs
            self._admitted[counted] = from_test + 1
            self._hungry.discard(counted)

    def _argument(self, value: Any) -> dict[str, str]:
        """An argument encoded, unless the same object was too big earlier in this test."""
        if self._too_big_test != self.test:
            self._too_big.clear()
            self._unpickled.clear()
            self._too_big_test = self.test
        if id(value) in self._too_big:
            raise Unencodable("too big")
        try:
            encoded = encode(value, self.max_bytes, lazy=True)
        except Unencodable as exc:
            if str(exc) == "too big" and _remembered(value):
                self._too_big[id(value)] = value
            raise
        if _names_pytest_tmp(encoded):
            raise Unencodable(TMP_REASON)
        return encoded

    def _together(self, positional: list[Any], keywords: dict[str, Any]) -> dict[str, str] | None:
        """The call's arguments encoded as one value, `(args, kwargs)`, when two of them hold
        one object (see _shares): rebuilt together, what they share stays one object. None
        when they share nothing (each argument's own encoding is the call's, readable apart)."""
        if not _shares([*positional, *keywords.values()]):
            return None
        try:
            return self._argument((tuple(positional), dict(keywords)))
        except Unencodable as exc:
            raise Unencodable(f"the arguments together: {exc}") from None

    def _resumed(
        self,
        frame: FrameType,
        target: str,
        positional: list[Any],
        args: list[dict[str, str]],
        kwargs: dict[str, dict[str, str]],
        value: Any,
        state: dict[str, Any],
    ) -> None:
        """A generator of a target stopped: at a yield (keep the item, bounded) or for good."""
        import dis

        opname = dis.opname[frame.f_code.co_code[frame.f_lasti]] if frame.f_lasti >= 0 else ""
        if opname == "YIELD_VALUE" and state["exception"] is None:
            if len(state["yields"]) < self.max_yields:
                try:
                    state["yields"].append(encode(value, self.max_bytes, lazy=True))
                except Unencodable as exc:
                    state["error"] = f"a yielded item: {exc}"
            else:
                state["truncated"] = True
            return
        self._generators.pop(frame, None)
        exception = state["exception"]
        if isinstance(exception, GeneratorExit):
            state["exhausted"] = False
            exception = None
        else:
            state["exhausted"] = not state.get("truncated")
        state["exception"] = exception
        self._finish(target, positional, args, kwargs, None, state, generator=True)

    def flush(self) -> None:
        """Generators a test left unfinished: kept with the items it read (not exhausted)."""
        for frame, state in list(self._generators.items()):
            self._generators.pop(frame, None)
            state["exhausted"] = False
            state["exception"] = None
            self._finish(
                state["target"], [], state["args"], state["kwargs"], None, state, generator=True
            )

    def _finish(
        self,
        target: str,
        positional: list[Any],
        args: list[dict[str, str]],
        kwargs: dict[str, dict[str, str]],
        value: Any,
        state: dict[str, Any],
        *,
        generator: bool = False,
        output: tuple[str, str] | None = None,
    ) -> None:
        exception = state["exception"]
        call: dict[str, Any] = {"args": args, "kwargs": kwargs, "test": state["test"]}
        try:
            if state.get("error"):
                raise Unencodable(state["error"])
            if generator:
                call["yields"] = list(state["yields"])
                call["exhausted"] = bool(state.get("exhausted"))
                if exception is not None and isinstance(exception, Exception):
                    kind = type(exception)
                    said = _support().message(exception)
                    call["raises"] = [f"{kind.__module__}.{kind.__qualname__}", said]
            elif exception is not None and value is None:
                if not isinstance(exception, Exception):
                    return  # KeyboardInterrupt, SystemExit, pytest's outcomes: not behaviour
                kind = type(exception)
                said = _support().message(exception)
                call["raises"] = [f"{kind.__module__}.{kind.__qualname__}", said]
            else:
                try:
                    call["returns"] = encode(value, self.max_bytes, lazy=True)
                except Unencodable as exc:
                    raise Unencodable(f"the result: {exc}") from None
            after = [] if generator else [encode(v, self.max_bytes, lazy=True) for v in positional]
        except Exception as exc:
            reason = str(exc) if isinstance(exc, Unencodable) else type(exc).__name__
            reason = reason if ":" in reason else f"a value afterwards: {reason}"
            if generator or not state["test"]:
                self.drop(target, reason if state["test"] else f"{reason}, outside a test")
            else:  # its arguments were kept, what it returned or left was not: in situ
                self._admit_in_situ(target, state, reason, [], value, (args, kwargs))
            return
        if output is not None and (output[0] or output[1]):
            call["stdout"], call["stderr"] = output
        if after and _exact(after) != _exact(args):
            call["after"] = after
        if state.get("classes") is not None:
            call["classes"] = state["classes"]
        if state.get("shared") is not None:
            call["shared"] = state["shared"]
        exact_kwargs = {k: _exact([v])[0] for k, v in kwargs.items()}
        exact_shared = _exact([call["shared"]]) if "shared" in call else []
        key = json.dumps([_exact(args), exact_kwargs, *exact_shared], sort_keys=True)
        values = [
            *args,
            *kwargs.values(),
            *after,
            *([call["returns"]] if "returns" in call else []),
            *([call["shared"]] if "shared" in call else []),
        ]
        if not generator and state["test"] and any("c" in v for v in values):
            # a value only cloudpickle keeps (a lambda, a class defined in the test): a pickle
            # no one can read, bound to the test's own code; checked in situ instead
            call = {
                "args": [],
                "kwargs": {},
                "test": state["test"],
                "in_situ": {
                    "call": state["call"],
                    "why": "a value only cloudpickle keeps",
                    "encoded": [*(["", a] for a in args), *([k, v] for k, v in kwargs.items())],
                    "outcome": f"raised {call['raises'][0]}: {call['raises'][1][:80]}"
                    if "raises" in call
                    else f"returned {live_form(value)}",
                },
            }
        self._admit(target, call, key, state["arcs"])

    def choose(self, target: str) -> list[dict[str, Any]]:
        """At most max_calls of a target's candidate calls: greedily the one that covers most
        arcs not yet covered, then ones raising an exception kind not yet kept, then the rest
        taken in turn from every test that called it."""
        pool = list(self.pool[target])
        chosen: list[dict[str, Any]] = []
        covered: set[tuple[int, int]] = set()
        kinds: set[str] = set()
        while pool and len(chosen) < self.max_calls:
            gains = [len(c["arcs"] - covered) for c in pool]
            # a kept call before one checked in situ that covers as much (it reads, and it
            # runs without the test)
            best = max(range(len(pool)), key=lambda i: (gains[i], "in_situ" not in pool[i], -i))
            if gains[best] == 0:
                break
            call = pool.pop(best)
            covered |= call["arcs"]
            kinds.add((call.get("raises") or ["-"])[0])
            chosen.append(call)
        for call in list(pool):
            kind = (call.get("raises") or ["-"])[0]
            if kind not in kinds and len(chosen) < self.max_calls:
                kinds.add(kind)
                chosen.append(call)
                pool.remove(call)
        by_test: dict[str, list[dict[str, Any]]] = {}
        for call in pool:
            if "in_situ" not in call:
                by_test.setdefault(call["test"], []).append(call)
        # a check in situ runs its test again and copies the arguments: beyond the calls the
        # greedy choice needs, a few more, one test at a time, tests not yet rerun first (a
        # line's arcs do not tell `a if len(p) == 2 else b` apart: other tests bring the
        # other shapes of argument)
        rerun = {c["test"] for c in chosen if "in_situ" in c}
        extra: dict[str, list[dict[str, Any]]] = {}
        for call in pool:
            if "in_situ" in call:
                extra.setdefault(call["test"], []).append(call)
        order = sorted(extra, key=lambda test: test in rerun)
        taken = 0
        while order and taken < self.IN_SITU_EXTRA:
            for test in list(order):
                if taken >= self.IN_SITU_EXTRA:
                    break
                by_test.setdefault(test, []).append(extra[test].pop(0))
                taken += 1
                if not extra[test]:
                    order.remove(test)
        queues = list(by_test.values())
        while queues and len(chosen) < self.max_calls:
            for queue in list(queues):
                if len(chosen) >= self.max_calls:
                    break
                chosen.append(queue.pop(0))
                if not queue:
                    queues.remove(queue)
        kept = [{k: v for k, v in c.items() if k != "arcs"} for c in chosen]
        for call in kept:
            encoded = (call.get("in_situ") or {}).pop("encoded", None)
            if encoded is not None:  # the arguments' readable forms, made for the calls kept
                for _, value in encoded:
                    describe(value)
                call["in_situ"]["shown"] = [_form(name, v) for name, v in encoded]
        for call in kept:  # readable forms only for the calls kept (a dump costs as much as
            # the pickle, and most recorded calls are never kept)
            values = [*call["args"], *call["kwargs"].values(), *call.get("after", [])]
            values += [*call.get("yields", []), *([call["returns"]] if "returns" in call else [])]
            values += [call["classes"]] if "classes" in call else []
            for encoded in values:
                describe(encoded)
        return kept

    def result(self) -> dict[str, Any]:
        paths = []
        for entry in sys.path:
            full = os.path.realpath(entry or ".")
            if full.startswith(self.root + os.sep) and "/.reposim/" not in full + "/":
                paths.append(os.path.relpath(full, self.root))
        return {
            "calls": {target: self.choose(target) for target in self.pool},
            "candidates": {target: len(pool) for target, pool in self.pool.items()},
            "modules": self.modules,
            "dropped": self.dropped,
            "kinds": self.kinds,
            "tests": {target: [t for t in tests if t] for target, tests in self.tests.items()},
            "failed": self.failed,
            "paths": list(dict.fromkeys(paths)),
        }


_recorder: Recorder | None = None
_global_trace: Any = None


def pytest_configure(config: Any) -> None:
    global _recorder, _global_trace
    spec_path = os.environ.get(SPEC_VARIABLE)
    if not spec_path:
        return
    with open(spec_path, encoding="utf-8") as handle:
        _recorder = Recorder(json.load(handle))
    _global_trace = _recorder.make_global_trace()
    for module in list(sys.modules.values()):  # the project's modules imported before this
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and _recorder.project_file(path):
            _recorder.classes.note_module(vars(module))
    sys.settrace(_global_trace)
    threading.settrace(_global_trace)


def pytest_runtest_setup(item: Any) -> None:
    if _recorder is not None:
        _recorder.test = str(item.nodeid)
        _recorder.classes.new_test()
        sys.settrace(_global_trace)  # another tracer (a debugger, coverage) may have won


def pytest_runtest_teardown(item: Any) -> None:
    if _recorder is not None:
        _recorder.flush()


def pytest_runtest_logreport(report: Any) -> None:
    if _recorder is not None and report.failed and report.nodeid not in _recorder.failed:
        _recorder.failed.append(str(report.nodeid))


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
