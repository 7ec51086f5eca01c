"""Support for RepoSim harness files (reposim.harness/1); runs in the project's own Python.

A harness is a plain pytest file that sits next to a copy of this module. Its tests call one
well-known name, `candidate`: the target function as it stands in the workspace (the reference,
a mutant, or a generated implementation spliced in its place). `REPOSIM_CANDIDATE=module:qualname`
points `candidate` at another implementation without editing the harness. Equivalence harnesses
also call `reference`, the target loaded from the snapshot under `.reposim/reference/`.

Standard library only (pytest is the project's): this file is copied into workspaces and
containers where RepoSim itself is not installed.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import copy
import datetime
import decimal
import importlib
import importlib.util
import inspect
import io
import math
import operator
import os
import pickle
import re
import sys
from collections.abc import Iterator, Sequence
from enum import Enum
from itertools import islice
from pathlib import Path
from types import BuiltinMethodType, MethodType, ModuleType, NoneType
from typing import Any

CANDIDATE_VARIABLE = "REPOSIM_CANDIDATE"
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "reference"
WORKSPACE = Path(__file__).resolve().parent.parent.parent  # .reposim/harness/ -> the workspace
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class P:
    """A recorded value that is not a Python literal, kept as a base64 pickle (made by
    cloudpickle when the standard pickle refuses it: unpickling then needs cloudpickle, which
    RepoSim puts on the path of every harness run)."""

    def __init__(self, data: str) -> None:
        self.data = data

    def load(self) -> Any:
        return pickle.loads(base64.b64decode(self.data))

    def __repr__(self) -> str:
        return f"P({self.data!r})"


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Any = _Nothing()


_NAMED: dict[int, Any] = {}  # what `named` returned: copies of a recorded value share it


def named(path: str) -> Any:
    """The object at `module:qualname` (a function, a class, or a module-level singleton)."""
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    _NAMED[id(obj)] = obj
    return obj


def C(path: str, /, *args: Any, **kwargs: Any) -> Any:
    """A recorded object rebuilt by calling its class (or factory) `module:qualname`; the call
    waits for G(...) when an argument is a reference not yet joined up (a bound method of an
    object that holds it: `C('builtins:getattr', R(1), 'method')` inside object 1)."""
    function = named(path)
    if _waits(args, kwargs):
        return _Call(function, args, kwargs)
    return function(*args, **kwargs)


def O(path: str, /, **fields: Any) -> Any:  # noqa: E743 - short on purpose
    """A recorded object rebuilt from its fields without calling `__init__`: an instance of
    `module:qualname` whose `__dict__` / `__slots__` entries are `fields`."""
    kind = named(path)
    obj = kind.__new__(kind)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


# builtin classes a class of its own may extend whose content S(...) writes out (the first of
# them in the class's MRO): a str, list or dict subclass is its content plus its fields
_CONTENT_BASES = (
    collections.OrderedDict,
    dict,
    list,
    set,
    frozenset,
    tuple,
    str,
    bytes,
    int,
    float,
)
_IMMUTABLE_BASES = (frozenset, tuple, str, bytes, int, float)


def content_base(kind: type) -> type | None:
    """The builtin class `kind` extends whose content S(...) rebuilds, or None."""
    for base in kind.__mro__[1:]:
        if base in _CONTENT_BASES:
            return base
    return None


def S(path: str, content: Any, /, **fields: Any) -> Any:
    """A recorded object of a class that extends a builtin (a str, list or dict subclass),
    rebuilt as a pickle rebuilds it, without calling its own `__new__` or `__init__`: made by
    the builtin base from `content` (items set with the base's own methods, so an overridden
    `__setitem__` or `append` does not run), then its fields set."""
    kind = named(path)
    base: Any = content_base(kind)
    if base is None:
        raise TypeError(f"{path} extends no builtin class whose content can be written")
    if base in _IMMUTABLE_BASES:
        obj = base.__new__(kind, content)
    else:
        obj = base.__new__(kind)
        if base is list:
            list.extend(obj, content)
        elif base is set:
            set.update(obj, content)
        else:
            for key, item in content.items():
                base.__setitem__(obj, key, item)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def F(obj: Any, /, **fields: Any) -> Any:
    """`obj` (made by a call, as a pickle makes it) with the fields a pickle sets on it: an
    exception's attributes beside its args."""
    if isinstance(obj, _Call):  # (made once G(...) has joined the call's references up)
        return _Call(F, (obj,), fields)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def E(path: str, name: str) -> Any:
    """A member of the enum `module:qualname`."""
    return named(path)[name]


def M(pattern: Any, method: str, string: Any, pos: int, endpos: int) -> Any:
    """A recorded regular-expression match, found again: `pattern.method(string, pos, endpos)`
    (method: match, search or fullmatch)."""
    return getattr(pattern, method)(string, pos, endpos)


def T(path: str, method: str, /, **fields: Any) -> Any:
    """A unittest.TestCase helper rebuilt: the class instantiated for `method`, with the
    attributes its test had set (not the runner's internals)."""
    obj = named(path)(method)
    for name, value in fields.items():
        setattr(obj, name, value)
    return obj


# Values whose objects point at each other (a parse tree whose nodes know their parent) or
# share a member are written with named references: `N(1, O(...))` is object 1, `R(1)` a
# reference to it wherever it appears again (inside itself for a cycle), and `G(...)` around
# the whole value joins the references up once it is built. What is shared stays shared and
# a cycle stays a cycle, as in a pickle.
_LABELLED: dict[int, Any] = {}  # N's objects, by label, until G joins the value up


class _Ref:
    """A reference to labelled object `label` (R), replaced by the object itself in G."""

    __slots__ = ("label",)

    def __init__(self, label: int) -> None:
        self.label = label

    def __repr__(self) -> str:
        return f"R({self.label})"


class _Call:
    """A call of C(...) or F(...) made once G(...) has joined its arguments up: one of them is
    a reference to an object still being built (R), which no function can use yet."""

    __slots__ = ("args", "function", "kwargs")

    def __init__(self, function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.function = function
        self.args = args
        self.kwargs = kwargs


def _waits(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(isinstance(a, _Ref | _Call) for a in (*args, *kwargs.values()))


def N(label: int, value: Any) -> Any:
    """`value`, known as object `label` to the references R(label) of the same G(...)."""
    _LABELLED[label] = value
    return value


def R(label: int) -> Any:
    """A reference to object `label` of the enclosing G(...) (made N(label, ...)): the object
    itself once N has made it (what is shared, met again), else a reference G joins up (a
    cycle: R inside the N of its own label). (The object itself, so that a constructor given
    the value sees it whole: tomlkit's Table reads `.key` of each key of its container, and
    got a reference.)"""
    if label in _LABELLED:
        return _LABELLED[label]
    return _Ref(label)


def G(value: Any) -> Any:
    """A value with named references (N, R), joined up: every R(label) in it (in lists, dicts,
    sets, tuples and objects' fields) becomes the object N made with that label."""
    labelled = dict(_LABELLED)
    _LABELLED.clear()
    missing = [label for label in _refs_in(value, set()) if label not in labelled]
    if missing:
        raise ValueError(f"R({missing[0]}) refers to no N({missing[0]}, ...) of its value")
    return _join(value, labelled, {})


def _refs_in(value: Any, seen: set[int]) -> list[int]:
    if isinstance(value, _Ref):
        return [value.label]
    if id(value) in seen:
        return []
    seen.add(id(value))
    found = []
    for item in _members(value):
        found += _refs_in(item, seen)
    return found


def _members(value: Any) -> list[Any]:
    if isinstance(value, _Call):
        return [*value.args, *value.kwargs.values()]
    if isinstance(value, MethodType):
        return [value.__self__]
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset | collections.deque):
        return list(value)
    if isinstance(value, type) or value is None or type(value) in _PLAIN:
        return []
    return list((state(value) or {}).values())


def _join(value: Any, labelled: dict[int, Any], done: dict[int, Any]) -> Any:
    """`value` with its references replaced (in place where it can be changed in place), and
    the calls that waited for them made."""
    if isinstance(value, _Ref):
        return _join(labelled[value.label], labelled, done)
    key = id(value)
    if key in done:
        return done[key]
    done[key] = value
    if isinstance(value, _Call):
        args = tuple(_join(a, labelled, done) for a in value.args)
        kwargs = {k: _join(v, labelled, done) for k, v in value.kwargs.items()}
        made = value.function(*args, **kwargs)
        done[key] = made
        return made
    if isinstance(value, MethodType):  # (its object is joined in place)
        _join(value.__self__, labelled, done)
    elif isinstance(value, dict | list | collections.deque | set):
        _join_content(value, labelled, done)
        if type(value).__module__ not in ("builtins", "collections"):
            _join_fields(value, labelled, done)  # (a subclass's own fields, beside its content)
    elif isinstance(value, tuple | frozenset):
        items = [_join(item, labelled, done) for item in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            kind: Any = type(value)
            made = kind._make(items) if hasattr(value, "_fields") else kind(items)
            done[key] = made
            return made
    elif not (isinstance(value, type) or value is None or type(value) in _PLAIN):
        _join_fields(value, labelled, done)
    return value


def _join_content(value: Any, labelled: dict[int, Any], done: dict[int, Any]) -> None:
    """A container's items joined up in place, with its builtin base's own methods, as S(...)
    wrote them (tomlkit's Container and Table, dict subclasses, convert what their own
    `__setitem__` is given, and failed on a reference not yet joined up)."""
    if isinstance(value, dict):
        items = [(_join(k, labelled, done), _join(v, labelled, done)) for k, v in value.items()]
        mapping: Any = _builtin_base(value, (collections.OrderedDict, dict))
        mapping.clear(value)
        for k, v in items:
            mapping.__setitem__(value, k, v)
    elif isinstance(value, list | collections.deque):
        sequence: Any = _builtin_base(value, (collections.deque, list))
        for index, item in enumerate(list(value)):
            sequence.__setitem__(value, index, _join(item, labelled, done))
    else:
        items = [_join(item, labelled, done) for item in value]
        set.clear(value)
        set.update(value, items)


def _join_fields(value: Any, labelled: dict[int, Any], done: dict[int, Any]) -> None:
    for name, item in (state(value) or {}).items():
        joined = _join(item, labelled, done)
        if joined is not item:
            object.__setattr__(value, name, joined)


def _builtin_base(value: Any, bases: tuple[type, ...]) -> type:
    """The first of `bases` in the MRO of `value`'s class (its builtin container class)."""
    return next(base for base in type(value).__mro__ if base in bases)


def import_paths(paths: list[str]) -> None:
    """Put the workspace directories the recorded test run imported from on sys.path (pytest
    imports a test module without __init__.py under its bare name, and recorded values may
    refer to it)."""
    for relative in reversed(paths):
        for base in (WORKSPACE, Path.cwd()):
            full = base / relative
            if full.is_dir() and str(full) not in sys.path:
                sys.path.insert(0, str(full))
                break


def materialize(value: Any) -> Any:
    """A fresh copy of a recorded value (so one test's mutations never reach another); the
    module-level objects it names stay themselves (code compares them with `is`)."""
    if isinstance(value, P):
        return value.load()
    return copy.deepcopy(value, dict(_NAMED))


# Values the standard pickle does not keep as they are, and how they are kept (`dumps`):
# - a module-level singleton (a sentinel compared with `is`, sqlparse's token types: a tuple
#   class answering any attribute, so unpickling a copy asks it for `__setstate__` and calls the
#   new token type it gets back) is named: it unpickles as the module's own object;
# - a module, by its name;
# - a regular-expression match (`re`, or the `regex` package's), by the pattern method that
#   finds it again (match, search or fullmatch over the same string, pos and endpos).
# Every reduction uses the standard library only, so a pickle loads without this module.

_SHARED_DEPTH = 8  # attribute hops from a module global to a singleton (Token.Keyword.DML)
_SHARED_REBUILDS = 20  # index rebuilds per module when a singleton was made after it was read
_shared: dict[str, dict[int, tuple[Any, str]]] = {}
_shared_kinds: dict[str, set[type]] = {}
_shared_rebuilds: dict[str, int] = {}


def _plain_object(value: Any) -> bool:
    """Whether `value` is an instance of a class of its own (not a builtin value, a class, a
    module or a function: those pickle by value or by name already)."""
    kind = type(value)
    return not (
        kind.__module__ == "builtins"
        or isinstance(value, type | ModuleType)
        or inspect.isroutine(value)
    )


def _index_shared(module_name: str) -> dict[int, tuple[Any, str]]:
    """Every instance of a class of its own that module `module_name` holds as a global, or as
    an attribute (hop by hop, of the same class) of one: id -> (object, dotted path). Breadth
    first, public names first, so a singleton gets its shortest name."""
    module = sys.modules.get(module_name)
    found: dict[int, tuple[Any, str]] = {}
    if module is None:
        return found
    items = sorted(list(vars(module).items()), key=lambda item: item[0].startswith("_"))
    queue = [(name, value, 0) for name, value in items if _plain_object(value)]
    while queue:
        path, value, depth = queue.pop(0)
        if id(value) in found:
            continue
        found[id(value)] = (value, path)
        try:
            own = dict(vars(value)) if depth < _SHARED_DEPTH else {}
        except TypeError:
            own = {}
        queue.extend(
            (f"{path}.{name}", item, depth + 1)
            for name, item in own.items()
            if type(item) is type(value) and name.isidentifier()
        )
    _shared[module_name] = found
    _shared_kinds[module_name] = {type(value) for value, _ in found.values()}
    return found


_bare: dict[int, tuple[Any, str]] | None = None  # `object()` sentinels of every module


def _bare_sentinel(value: Any) -> str | None:
    """`module:name` of a bare `object()` a module holds as a global (a marker compared with
    `is`: sqlparse's PROCESS_AS_KEYWORD); its class tells nothing of where it lives, so every
    loaded module is read (once, and again a bounded number of times on a miss)."""
    global _bare
    for _ in range(2):
        if _bare is None:
            _bare = {}
            for module_name, module in list(sys.modules.items()):
                try:
                    items = list(vars(module).items())
                except TypeError:
                    continue
                for name, item in items:
                    if type(item) is object and id(item) not in _bare:
                        _bare[id(item)] = (item, f"{module_name}:{name}")
        hit = _bare.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        if _shared_rebuilds.get("", 0) >= _SHARED_REBUILDS:
            return None
        _shared_rebuilds[""] = _shared_rebuilds.get("", 0) + 1
        _bare = None
    return None


def shared_name(value: Any) -> str | None:
    """`module:path` of a module-level singleton (looked for in the module of its class; a bare
    `object()` in every module), or None for any other value."""
    if type(value) is object:
        return _bare_sentinel(value)
    if not _plain_object(value):
        return None
    module = type(value).__module__
    if not isinstance(module, str) or module == "__main__":
        return None
    index = _shared.get(module)
    if index is None:
        index = _index_shared(module)
    hit = index.get(id(value))
    rebuilds = _shared_rebuilds.get(module, 0)
    if hit is None and type(value) in _shared_kinds.get(module, ()) and rebuilds < _SHARED_REBUILDS:
        # one of a class that has singletons, made after the index was read (a token type
        # made on first use): read the module again, a bounded number of times
        _shared_rebuilds[module] = rebuilds + 1
        hit = _index_shared(module).get(id(value))
    if hit is None or hit[0] is not value or not identity_object(value, hit[1]):
        return None
    return f"{module}:{hit[1]}"


def identity_object(value: Any, path: str = "") -> bool:
    """Whether a module-level object (held at `path` in its module, when known) is what its
    identity says: a marker with no state of its own (`object()`, a `_Missing()` sentinel) or
    an immutable value (a token type, a tuple subclass). A module global with state (ply keeps
    the last lexer it built as `lex.lexer`) is not: it is copied like any value, never named
    (it may not even exist when a harness is imported, and a call changes it). A root marker
    whose only state is a tuple that names itself is one too: glom's `T`, `S` and `A`
    (`T.__ops__ == (T,)`) are keys of every glom scope and compared with `is`; a copy of `T`
    is another root that nothing knows (its scope lookups raise KeyError, its repr too). So is
    a sentinel whose state is only atoms, one of them the name it is held under: boltons'
    `make_sentinel("LAST_CHILD_SCOPE")`, the keys of glom's scopes (`LAST_CHILD_SCOPE in
    scope` is False in a copy)."""
    if type(value) is object or isinstance(value, _IMMUTABLE_BASES):
        return True
    fields = state(value)
    if fields is None:
        return False
    if path and _names_itself(fields, path.rpartition(".")[2]):
        return True
    return not fields or all(_rooted_in(item, value) for item in fields.values())


def _names_itself(fields: dict[str, Any], name: str) -> bool:
    """Whether a state of atoms only holds `name` (leading underscores and case aside)."""
    own = name.lstrip("_").lower()
    items = list(fields.values())
    return (
        bool(own)
        and all(isinstance(item, str | int | NoneType) for item in items)
        and any(isinstance(item, str) and item.lstrip("_").lower() == own for item in items)
    )


def _rooted_in(item: Any, value: Any) -> bool:
    """Whether `item` is a tuple of atoms that holds `value` itself (a root's own path)."""
    return (
        type(item) is tuple
        and any(part is value for part in item)
        and all(part is value or isinstance(part, str | int | NoneType) for part in item)
    )


def _is_match(value: Any) -> bool:
    kind = type(value)
    return kind.__name__ == "Match" and all(
        hasattr(kind, name) for name in ("re", "string", "pos", "endpos", "regs")
    )


def _match_reduction(value: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """(pattern.method, (string, pos, endpos)) that finds `value` again, or None."""
    for method in ("match", "search", "fullmatch"):
        try:
            found = getattr(value.re, method)(value.string, value.pos, value.endpos)
        except Exception:
            continue
        if found is not None and found.regs == value.regs:
            return getattr(value.re, method), (value.string, value.pos, value.endpos)
    return None


_no_reduction: set[type] = set()  # classes of which no instance is named or found again


def reduction(value: Any) -> Any:
    """How `dumps` keeps a value the standard pickle would copy wrongly or refuse (a reduce
    tuple), or NotImplemented for the standard way."""
    kind = type(value)
    if kind in _no_reduction:  # (asked for every object pickled: the common answer is quick)
        return NotImplemented
    if isinstance(value, ModuleType):
        if sys.modules.get(value.__name__) is value:
            return importlib.import_module, (value.__name__,)
        return NotImplemented
    if _is_match(value):
        found = _match_reduction(value)
        return NotImplemented if found is None else found
    name = shared_name(value)
    if name is None:
        module = kind.__module__
        if kind is not object and (
            not _plain_object(value)
            or (module in _shared and kind not in _shared_kinds.get(module, ()))
        ):
            _no_reduction.add(kind)
        return NotImplemented
    module, _, path = name.partition(":")
    return operator.attrgetter(path), (sys.modules[module],)


class Pickler(pickle.Pickler):
    """The standard pickler, with `reduction` first."""

    def reducer_override(self, obj: Any) -> Any:
        return reduction(obj)


class TooBig(Exception):
    """A pickle went over its size limit (it was stopped there)."""


class Bounded(io.BytesIO):
    """A pickle's output that stops the pickler once it goes over `limit` bytes: a value too
    big to keep costs about the limit's worth of pickling, not its own size (the pickler
    writes a frame, 64 kB at most, at a time)."""

    def __init__(self, limit: int | None) -> None:
        super().__init__()
        self.limit = limit

    def write(self, data: Any) -> int:
        if self.limit is not None and self.tell() + len(data) > self.limit:
            raise TooBig(f"over {self.limit} bytes")
        return super().write(data)


def dumps(value: Any, protocol: int = 4, limit: int | None = None) -> bytes:
    """The pickle of `value` (module-level singletons named, matches found again); TooBig as
    soon as it is over `limit` bytes."""
    out = Bounded(limit)
    Pickler(out, protocol=protocol).dump(value)
    return out.getvalue()


def resolve(root: Any, qualname: str) -> Any:
    """The plain function at `qualname` under a module or class: staticmethod, classmethod and
    property wrappers are taken off, so a method is called with its `self`/`cls` explicitly."""
    obj = root
    for part in qualname.split("."):
        obj = inspect.getattr_static(obj, part)
        if isinstance(obj, staticmethod | classmethod):
            obj = obj.__func__
        elif isinstance(obj, property):
            obj = obj.fget
    return obj


def load_candidate(target: dict[str, str]) -> Any:
    """The implementation under test: the workspace's, unless REPOSIM_CANDIDATE names another."""
    override = os.environ.get(CANDIDATE_VARIABLE, "").strip()
    module, _, qualname = override.partition(":") if override else ("", "", "")
    module = module or target["module"]
    qualname = qualname or target["qualname"]
    return resolve(importlib.import_module(module), qualname)


def load_reference(target: dict[str, str]) -> Any:
    """The reference implementation, from the snapshot taken when the harness was made.

    The snapshot is imported as a sibling module of the original (`pkg.mod__reposim_reference`),
    so its relative imports resolve as the original's do.
    """
    path = REFERENCE_DIR / target["path"]
    name = f"{target['module']}__reposim_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no reference snapshot at {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return resolve(sys.modules[name], target["qualname"])


_PLAIN = (type(None), bool, int, str, bytes, complex)
_ITER_LIMIT = 10_000  # items read from a lazy result when comparing it
_MISSING = object()
_DUMP_ITEMS = 24  # items, entries or fields shown per level of a dump
_DUMP_CHARS = 4000  # characters one object's dump is cut to


def _own_eq(kind: type) -> bool:
    return any("__eq__" in vars(k) for k in kind.__mro__[:-1])


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, not written in C


# bases written in C whose content `same` compares item by item
_SEEN_BASES = frozenset({object, list, tuple, dict, set, frozenset, collections.OrderedDict})


def _hidden_state(kind: type) -> bool:
    """Whether instances may keep state Python code cannot read: a base written in C other
    than the containers compared item by item."""
    return any(not k.__flags__ & _HEAPTYPE and k not in _SEEN_BASES for k in kind.__mro__)


def _is_pattern(value: Any) -> bool:
    kind = type(value)
    return kind.__name__ == "Pattern" and all(
        hasattr(kind, name) for name in ("pattern", "flags", "groupindex", "match")
    )


def state(value: Any) -> dict[str, Any] | None:
    """An object's own state: its `__dict__` and every `__slots__` entry of every class in its
    MRO (unset slots left out), or None for an object that keeps none where Python code can see
    it (a builtin or C type: compared with ==)."""
    found: dict[str, Any] = {}
    has_state = False
    for kind in type(value).__mro__:
        slots = vars(kind).get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for name in slots:
            if name in ("__dict__", "__weakref__"):
                continue
            has_state = True
            attribute = name
            if name.startswith("__") and not name.endswith("__"):
                attribute = f"_{kind.__name__.lstrip('_')}{name}"
            # the slot itself: an unset one is left out, never asked of a class's __getattr__
            with contextlib.suppress(AttributeError, KeyError):
                found[attribute] = vars(kind)[attribute].__get__(value, kind)
    instance_dict = getattr(value, "__dict__", None)
    if isinstance(instance_dict, dict):
        has_state = True
        found.update(instance_dict)
    if _is_testcase(value):
        found = unittest_state(value, found)
    return found if has_state else None


_TESTCASE_KEYS: frozenset[str] | None = None


def _is_testcase(value: Any) -> bool:
    unittest = sys.modules.get("unittest")
    return unittest is not None and isinstance(value, unittest.TestCase)


def unittest_state(value: Any, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """A TestCase's own state: what its tests set on it, not what unittest and the runner
    keep there (the outcome, cleanups, pytest's wrapper of the test method)."""
    global _TESTCASE_KEYS
    if _TESTCASE_KEYS is None:
        import unittest

        _TESTCASE_KEYS = frozenset(vars(unittest.TestCase()))
    method = getattr(value, "_testMethodName", "runTest")
    return {
        k: v
        for k, v in (vars(value) if fields is None else fields).items()
        if k not in _TESTCASE_KEYS
        and k != method
        and not (inspect.ismethod(v) and v.__self__ is value)
    }


def _same_kind(a: type, e: type) -> bool:
    """The same class, or two copies of one class defined in a function (a class pickled by
    value comes back as a new class object)."""
    if a is e:
        return True
    return (
        "<locals>" in e.__qualname__
        and a.__qualname__ == e.__qualname__
        and a.__module__ == e.__module__
    )


class _Pairs:
    """The objects one comparison has paired. An object of a class on the actual side is
    paired with one object on the expected side for the whole comparison: met again, it must
    meet the same one. Two look-alike tokens of one statement (equal fields, the same parent)
    are then told apart, where pairing the wrong token with the right one at the top and with
    itself inside the parent's token list would find them equal. The other way is free: two
    actual objects may meet one expected object, since a harness rebuilds each argument on its
    own and a result that mixes them holds two copies of what the reference shared (boolean.py's
    expressions all point at their algebra's one TRUE). Immutable values and builtin containers
    are compared as values (a harness writes one datetime held twice as two; a literal does not
    keep which lists were one list). A pair already met counts as equal: cycles are safe."""

    __slots__ = ("ids", "kept", "met", "paired")

    def __init__(self) -> None:
        self.paired: dict[int, int] = {}  # id(actual) -> id(expected), objects of classes
        self.met: set[tuple[int, int]] = set()  # values being or already compared
        # id(actual) -> id(expected) of every pair first met (values too): an `id()` kept as
        # a dict key (glom's _ArgValuator caches by id(spec)) is the other side's id there
        self.ids: dict[int, int] = {}
        # the objects themselves: a temporary (the items read from an iterator) freed while
        # the comparison goes on would free its id for another object
        self.kept: list[Any] = []

    def meet(self, actual: Any, expected: Any) -> bool | None:
        """True when the pair was met before (equal so far), False when the actual object is
        already paired with another, None when it is new (and now paired)."""
        if _by_value(expected):
            pair = (id(actual), id(expected))
            if pair in self.met:
                return True
            self.met.add(pair)
        else:
            before = self.paired.get(id(actual))
            if before is not None:
                return before == id(expected)
            self.paired[id(actual)] = id(expected)
        self.ids.setdefault(id(actual), id(expected))
        self.kept.append((actual, expected))
        return None

    def same_key(self, actual: Any, expected: Any) -> bool:
        """Two plain dict keys are one: equal, or the ids of two objects met as a pair."""
        if actual == expected:
            return True
        return type(actual) is int and type(expected) is int and self.ids.get(actual) == expected

    # (quoted: the R2E export runs this module without postponed annotations)
    def trial(self) -> "_Pairs":  # noqa: UP037
        """A copy to try a pairing on (a set's items), kept only when it holds."""
        copied = type(self)()
        copied.paired, copied.met, copied.kept = dict(self.paired), set(self.met), self.kept
        copied.ids = dict(self.ids)
        return copied

    def adopt(self, trial: "_Pairs") -> None:  # noqa: UP037
        self.paired, self.met, self.ids = trial.paired, trial.met, trial.ids


_NO_IDENTITY = (tuple, frozenset, float, int, str, bytes, bool, complex, type(None))
_VALUE_MODULES = ("decimal", "fractions", "datetime", "pathlib", "uuid")


def immutable_value(value: Any) -> bool:
    """A value whose identity nothing observes, which a harness writes again wherever it is
    held (one datetime in two events is two equal datetimes there): a number, a string, a
    tuple, a date, a path, a class, a function, a module, an enum member, a pattern or a
    match."""
    return (
        isinstance(value, _NO_IDENTITY)
        or type(value).__module__ in _VALUE_MODULES
        or isinstance(value, type | ModuleType | Enum)
        or inspect.isroutine(value)
        or _is_pattern(value)
        or _is_match(value)
    )


_VALUE_CONTAINERS = (
    list,
    dict,
    set,
    collections.OrderedDict,
    collections.defaultdict,
    collections.Counter,
    collections.deque,
)


def _by_value(value: Any) -> bool:
    """Compared without one-to-one pairing: an immutable value, or a builtin container (what
    it holds is paired)."""
    return type(value) in _VALUE_CONTAINERS or immutable_value(value)


def same(actual: Any, expected: Any, _pairs: _Pairs | None = None) -> bool:
    """Behavioural equality, by structure: the same type, then the same value. Floats to 1e-9;
    lists, tuples and dicts item by item; sets and dict keys of objects matched structurally;
    iterators by what they yield (bounded); objects by their `__dict__` and `__slots__` over
    the whole MRO (and their own `__eq__` when they define one, which must agree). An actual
    object of a class is paired with one expected object over the whole comparison (one
    object in two places is not two equal objects, and a look-alike at another place of the
    graph is not the object; see _Pairs); reference cycles are safe."""
    memo = _Pairs() if _pairs is None else _pairs
    if not _same_kind(type(actual), type(expected)):
        return False
    if isinstance(expected, _PLAIN):
        return bool(actual == expected)
    if isinstance(expected, float):
        if math.isnan(expected):
            return math.isnan(actual)
        return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, decimal.Decimal):
        # (== ignores the exponent, 12 equals 12.0, and a NaN equals nothing) its sign, digits
        # and exponent: what quantize or a number of places decides
        return bool(actual.as_tuple() == expected.as_tuple())
    if actual is expected:
        return True
    if _singleton(expected) or _singleton(actual):
        # a module-level identity object (glom's roots T and S, a sentinel) is what its
        # identity says: two of them alike in structure (`T.__ops__ == (T,)`, `S.__ops__ ==
        # (S,)`) are still two things, and a copy of one is never made (named, kept as is)
        return False
    met = memo.meet(actual, expected)
    if met is not None:
        return met
    if type(expected) in _DICT_VIEWS:  # (dict_values has no ==: two copies never equal)
        return same(list(actual), list(expected), memo)
    if isinstance(expected, Iterator) and not isinstance(expected, Sequence):
        if _live[0]:  # a live object: reading it would take items from the test (a lexer)
            return _same_live_iterator(actual, expected, memo)
        # a lazy result (a generator, map, filter, a custom iterator): compare what it yields
        return same(list(islice(actual, _ITER_LIMIT)), list(islice(expected, _ITER_LIMIT)), memo)
    if isinstance(expected, list | tuple):
        if len(actual) != len(expected):
            return False
        if not all(same(a, e, memo) for a, e in zip(actual, expected, strict=True)):
            return False
        if type(expected) in (list, tuple):
            return True
    elif isinstance(expected, dict):
        if not _same_dict(actual, expected, memo):
            return False
        if type(expected) is dict:
            return True
    elif isinstance(expected, set | frozenset):
        if not _matched(list(actual), list(expected), memo):
            return False
        if type(expected) in (set, frozenset):
            return True
    if isinstance(expected, BaseException):
        return same(actual.args, expected.args, memo) and _same_state(actual, expected, memo)
    if _is_match(expected):  # no state Python sees, and no __eq__: what it matched, where
        return all(
            same(getattr(actual, name), getattr(expected, name), memo)
            for name in ("re", "string", "pos", "endpos", "regs")
        )
    if _is_pattern(expected):  # a compiled pattern (the `regex` package's has no __eq__)
        return bool(actual.pattern == expected.pattern and actual.flags == expected.flags)
    if isinstance(expected, datetime.datetime | datetime.time):
        # (== compares instants: 15:20 in one zone equals 09:20 in another) the fields and the
        # zone, as a person reads them
        if not (
            actual.replace(tzinfo=None) == expected.replace(tzinfo=None)
            and actual.fold == expected.fold
            and same(actual.tzinfo, expected.tzinfo, memo)
        ):
            return False
        return state(expected) is None or _same_state(actual, expected, memo)
    if type(expected) is datetime.timezone:  # (== compares the offsets alone, not the names)
        return bool(
            actual.utcoffset(None) == expected.utcoffset(None)
            and actual.tzname(None) == expected.tzname(None)
        )
    if isinstance(expected, MethodType):  # (its == asks for the very same `self`)
        return same(actual.__func__, expected.__func__, memo) and same(
            actual.__self__, expected.__self__, memo
        )
    if _bound_builtin(expected):  # (a pattern's `match`: its name says nothing of the pattern)
        return _name(actual) == _name(expected) and same(actual.__self__, expected.__self__, memo)
    if isinstance(expected, type | ModuleType) or (callable(expected) and not state(expected)):
        return _name(actual) == _name(expected)
    kind = type(expected)
    if _own_eq(kind) and (_hidden_state(kind) or state(expected) is None):
        # its __eq__ sees state this comparator cannot; where all its state is in __dict__ and
        # __slots__ the structure decides (an __eq__ comparing members by identity, as one
        # holding a `regex` pattern does, would call two equal copies different)
        try:
            if not bool(actual == expected):
                return False
        except Exception:
            return False
    return _same_state(actual, expected, memo)


_DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
_live = [False]  # comparing live objects of a test that goes on (a check in situ)


@contextlib.contextmanager
def live_values() -> Iterator[None]:
    """Compare values a test still holds (a check in situ; the tracer checking that an
    expression rebuilds an argument): an iterator in them (a lexer the parse is still
    reading) is compared without taking items from it."""
    before = _live[0]
    _live[0] = True
    try:
        yield
    finally:
        _live[0] = before


def _same_live_iterator(actual: Any, expected: Any, memo: _Pairs) -> bool:
    """Two iterators of a test that goes on, compared without taking items from them: by
    their fields when Python sees some, else by what copies of them yield (and as equal when
    they cannot be copied: a generator; nothing then tells them apart)."""
    if state(expected) is not None:
        return _same_state(actual, expected, memo)
    try:
        mine, theirs = copy.deepcopy(actual), copy.deepcopy(expected)
    except Exception:
        return True
    return same(list(islice(mine, _ITER_LIMIT)), list(islice(theirs, _ITER_LIMIT)), memo)


def _bound_builtin(value: Any) -> bool:
    """A method written in C bound to an object (`pattern.match`, `items.append`), not a
    module's function (`len`)."""
    owner = getattr(value, "__self__", None)
    return isinstance(value, BuiltinMethodType) and not (
        owner is None or isinstance(owner, ModuleType)
    )


def _name(value: Any) -> str:
    module = getattr(value, "__module__", None) or getattr(value, "__name__", "")
    return f"{module}.{getattr(value, '__qualname__', '')}"


def _same_state(actual: Any, expected: Any, memo: _Pairs) -> bool:
    then = state(expected)
    if then is None:
        if _own_eq(type(expected)):
            return True  # __eq__ said so above
        try:
            return bool(actual == expected)
        except Exception:
            return False
    now = state(actual)
    if now is None or set(now) != set(then):
        return False
    return all(same(now[k], then[k], memo) for k in then)


def _plain_key(key: Any) -> bool:
    return isinstance(key, (*_PLAIN, float)) or (
        type(key) is tuple and all(_plain_key(k) for k in key)
    )


def _same_dict(actual: Any, expected: Any, memo: _Pairs) -> bool:
    if len(actual) != len(expected):
        return False
    if all(_plain_key(k) for k in expected):
        keys = list(actual)
        if keys == list(expected):
            return all(same(actual[k], expected[k], memo) for k in expected)
        # (an id kept as a key: the other side's object has another) the keys pair up in order
        return all(memo.same_key(a, e) for a, e in zip(keys, expected, strict=True)) and all(
            same(actual[a], expected[e], memo) for a, e in zip(keys, expected, strict=True)
        )
    return _matched(list(actual.items()), list(expected.items()), memo)


def _matched(actual: list[Any], expected: list[Any], memo: _Pairs) -> bool:
    """Every expected item has its own structurally equal actual item (sets, dict items)."""
    if len(actual) != len(expected):
        return False
    left = list(actual)
    for item in expected:
        for index, candidate in enumerate(left):
            trial = memo.trial()
            if same(candidate, item, trial):
                memo.adopt(trial)
                del left[index]
                break
        else:
            return False
    return True


def _singleton(value: Any) -> bool:
    """Whether `value` is a module-level identity object `shared_name` names."""
    return (
        _plain_object(value)
        and not isinstance(value, _IMMUTABLE_BASES)
        and (shared_name(value) is not None)
    )


def dump(value: Any, depth: int = 4, _seen: set[int] | None = None) -> str:
    """A structural, readable form of a value: `Class(field=value, ...)` nested (`__dict__`
    and `__slots__`), literals as repr, `<cycle Class>` where a reference loops back; no
    memory addresses. What a person checks a pickled value by, and what the comparator's
    self-check tells results apart by."""
    seen = set() if _seen is None else _seen
    if isinstance(value, (*_PLAIN, float)):
        return repr(value)
    if _singleton(value):
        return f"named({shared_name(value)!r})"
    if id(value) in seen:
        return f"<cycle {type(value).__qualname__}>"
    if depth < 0:
        return f"{type(value).__qualname__}(…)"
    seen = seen | {id(value)}
    if isinstance(value, list | tuple | set | frozenset):
        if isinstance(value, set | frozenset):
            # the first items in sorted order, not in iteration order: two equal sets built in
            # another order (a copy, a rebuilt value) iterate differently
            items = sorted(dump(v, depth - 1, seen) for v in islice(value, _ITER_LIMIT))
            del items[_DUMP_ITEMS:]
        else:
            items = [dump(v, depth - 1, seen) for v in islice(value, _DUMP_ITEMS)]
        if len(value) > _DUMP_ITEMS:
            items.append(f"… {len(value) - _DUMP_ITEMS} more")
        text = ", ".join(items)
        if type(value) is list:
            return f"[{text}]"
        if type(value) is tuple:
            return f"({text}{',' if len(items) == 1 else ''})"
        return f"{type(value).__qualname__}([{text}])" if items else f"{type(value).__qualname__}()"
    if isinstance(value, dict):
        plain = all(_plain_key(k) for k in value)
        # keys of objects are matched, not ordered: their first pairs in sorted order
        pairs = [
            f"{dump(k, depth - 1, seen)}: {dump(v, depth - 1, seen)}"
            for k, v in islice(value.items(), _DUMP_ITEMS if plain else _ITER_LIMIT)
        ]
        if not plain:
            pairs.sort()
            del pairs[_DUMP_ITEMS:]
        if len(value) > _DUMP_ITEMS:
            pairs.append(f"… {len(value) - _DUMP_ITEMS} more")
        body = "{" + ", ".join(pairs) + "}"
        return body if type(value) is dict else f"{type(value).__qualname__}({body})"
    if _bound_builtin(value):
        return f"{_name(value).lstrip('.')} of {dump(value.__self__, depth - 1, seen)}"
    if isinstance(value, type | ModuleType) or (callable(value) and not state(value)):
        return _name(value).lstrip(".")
    if isinstance(value, Enum):
        return f"{type(value).__qualname__}.{value.name}"
    fields = state(value)
    if fields is None:
        return _ADDRESS.sub("", _safe_repr(value))
    inner = ", ".join(
        f"{k}={dump(v, depth - 1, seen)}" for k, v in islice(fields.items(), _DUMP_ITEMS)
    )
    if len(fields) > _DUMP_ITEMS:
        inner += f", … {len(fields) - _DUMP_ITEMS} more"
    text = f"{type(value).__qualname__}({inner})"
    return text if len(text) <= _DUMP_CHARS else text[: _DUMP_CHARS - 2] + "…)"


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__qualname__}>"


def discriminates(values: list[Any]) -> str | None:
    """The comparator's self-check on one target's recorded results: two values whose
    structural dumps differ must compare unequal. None when it holds, else the first pair it
    cannot tell apart (the comparator is blind for this target)."""
    # an iterator is what it yields (as `same` compares it), not its internal state
    values = [
        list(islice(v, _ITER_LIMIT))
        if isinstance(v, Iterator) and not isinstance(v, Sequence)
        else v
        for v in values
    ]
    dumps = [dump(v, depth=6) for v in values]
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            if dumps[i] != dumps[j] and same(values[i], values[j]):
                return f"{dumps[i][:120]} and {dumps[j][:120]} compare equal"
    return None


def message(exc: BaseException) -> str:
    """`str(exc)`, or a text saying it failed: an exception whose `__str__` raises (glom's
    PathAccessError of an `S` path: its message builds a Path that refuses the `S` root) is
    still recorded and compared, by its kind and that text."""
    try:
        return str(exc)
    except Exception as error:
        return f"<str() failed: {type(error).__name__}>"


def describe(value: Any) -> str:
    text = _ADDRESS.sub("", _safe_repr(value))
    if text.startswith("<") and " object" in text:
        text = dump(value)
    return text if len(text) <= 300 else text[:299] + "…"


def _call(function: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[Any, Any, str, str]:
    """(result, exception, stdout, stderr) of one call, what it printed captured."""
    out, err = io.StringIO(), io.StringIO()
    result: Any = None
    raised: Exception | None = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            raised = exc
    return result, raised, out.getvalue(), err.getvalue()


def _drain(result: Any, count: int, exhausted: bool) -> tuple[list[Any], Exception | None]:
    """What a generator yields: `count` items, one more when the reference's stopped there
    (so a candidate that yields more is told apart), and the exception that ended it."""
    items: list[Any] = []
    limit = count + 1 if exhausted else count
    try:
        iterator = iter(result)
        while len(items) < limit:
            items.append(next(iterator))
    except StopIteration:
        pass
    except Exception as exc:
        return items, exc
    return items, None


@contextlib.contextmanager
def class_state(recorded: dict[str, dict[str, Any]] | None) -> Iterator[None]:
    """The class attributes the recorded test run had set (`{"module:Class": {name: value}}`,
    rebound or added since the module was imported), set from fresh copies for one call and
    put back afterwards: boolean.py's `BooleanAlgebra()` sets `TRUE`, `AND`, `OR`... on its
    expression classes, and a method building `self.__class__(...)` reads them there."""
    if not recorded:
        yield
        return
    saved: list[tuple[type, str, Any]] = []
    try:
        for path, fields in materialize(recorded).items():
            kind = named(path)
            for name, value in fields.items():
                saved.append((kind, name, vars(kind).get(name, _MISSING)))
                setattr(kind, name, value)
        yield
    finally:
        for kind, name, before in reversed(saved):
            if before is _MISSING:
                delattr(kind, name)
            else:
                setattr(kind, name, before)


def check_call(
    function: Any,
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    returns: Any = NOTHING,
    raises: tuple[str, str] | None = None,
    after: tuple[Any, ...] | None = None,
    yields: list[Any] | None = None,
    exhausted: bool = True,
    stdout: str | None = None,
    stderr: str | None = None,
    classes: dict[str, dict[str, Any]] | None = None,
    shared: Any = None,
) -> None:
    """Call `function` on fresh copies of recorded arguments and compare what it does with what
    the reference did: its return value or the exception it raised (type and message); for a
    generator the items it yielded (`yields`, all of them when `exhausted`, else the first
    ones the tests read); what it printed (`stdout`, `stderr`) when recorded; and the
    arguments' state afterwards when the reference changed them in place. `classes`: the
    class attributes the test run had set when the call was made (see class_state).
    `shared`: the arguments as one value, `(args, kwargs)`, in place of `args` and `kwargs`
    when two of them hold one object (a node and the tree it is in): copied as one, what they
    share stays one object."""
    with class_state(classes):
        if shared is not None:
            together = materialize(shared)
            call_args, call_kwargs = list(together[0]), dict(together[1])
        else:
            call_args = [materialize(a) for a in args]
            call_kwargs = {k: materialize(v) for k, v in (kwargs or {}).items()}
        result, exc, out, err = _call(function, call_args, call_kwargs)
        if yields is not None and exc is None:
            expected_items = [materialize(item) for item in yields]
            more_out, more_err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(more_out), contextlib.redirect_stderr(more_err):
                items, exc = _drain(result, len(expected_items), exhausted)
            out, err = out + more_out.getvalue(), err + more_err.getvalue()
            # item by item: each was recorded on its own, so what they share was not kept
            assert len(items) == len(expected_items) and all(
                same(item, expected) for item, expected in zip(items, expected_items, strict=True)
            ), f"yielded {describe(items)}, the reference yielded {describe(expected_items)}" + (
                "" if exhausted else " (and more)"
            )
        if exc is not None:
            if raises is None:
                raise AssertionError(
                    f"raised {type(exc).__name__}: {message(exc)} where the reference returned"
                ) from exc
            kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
            assert kind == raises[0], f"raised {kind}, the reference raised {raises[0]}"
            said = message(exc)
            assert said == raises[1], f"message {said!r}, the reference said {raises[1]!r}"
        elif yields is None:
            assert raises is None, f"returned {describe(result)}; the reference raised {raises[0]}"
            expected = materialize(returns)
            assert same(result, expected), (
                f"returned {describe(result)}, the reference returned {describe(expected)}"
            )
        else:
            assert raises is None, f"yielded to the end; the reference raised {raises[0]}"
        if stdout is not None:
            assert out == stdout, f"printed {out!r}, the reference printed {stdout!r}"
        if stderr is not None:
            assert err == stderr, f"wrote {err!r} to stderr, the reference wrote {stderr!r}"
        if after is not None:
            for position, (now, then) in enumerate(zip(call_args, after, strict=False)):
                then = materialize(then)
                assert same(now, then), (
                    f"argument {position} is {describe(now)} afterwards, "
                    f"the reference left it {describe(then)}"
                )


def check_discrimination(cases: list[dict[str, Any]]) -> None:
    """The comparator's self-check for a harness: recorded results (return values, yielded
    items) whose structural dumps differ must compare unequal; else the comparator is blind
    for this target and the harness cannot tell a right result from a wrong one."""
    values = []
    for case in cases:
        if "returns" in case:
            values.append(materialize(case["returns"]))
        elif "yields" in case:
            values.append([materialize(item) for item in case["yields"]])
    blind = discriminates(values)
    assert blind is None, f"the comparator is blind for this target: {blind}"


# -- checks in situ ---------------------------------------------------------------------------
#
# A call whose arguments cannot be kept (a parser holding its LR tables, an object holding a
# lambda) is checked where it happens: the repository's test that made it runs again, in this
# process, with the target's live function swapped for a trampoline; every call goes to
# `candidate`, and the calls the harness names (the k-th call of the target in that test) are
# also made on the reference, with a deep copy of the same live arguments taken just before
# (module-level objects stay themselves), and compared: the result or the exception, and the
# arguments' state afterwards. The test continues with what the candidate did, so the test's
# own assertions judge it too. Nothing is stored: the expected values are the reference's, live.

SUITE_FLAGS = ["-q", "-p", "no:cacheprovider", "-p", "no:cov", "-p", "no:randomly"]
SUITE_FLAGS += ["-p", "no:xdist", "-p", "no:reposim_tracer", "-p", "no:warnings"]
_DISPATCH = "__reposim_in_situ__"
_in_situ_runs: dict[str, tuple[Any, Any, dict[str, Any]]] = {}  # test -> (who, code, outcome)
# Set by the mutant runner for its reach pass, which only asks which of the target's lines each
# harness test runs: a check in situ then runs the repository's test as it is (the target's
# own code, no trampoline, no copies, no reference calls; those lines are the ones a mutant's
# run reaches) and checks only that it passes. Counted, so the runner knows which harness
# tests did (their cost is taken from the first run on the reference, which did the checks).
_reach_only = [False]
_reach_checks = [0]
_REACHED = object()  # the `who` of a repository test's run in the reach pass


def _live_function(target: dict[str, str]) -> Any:
    """The function object whose code is the target's (decorator wrappers followed down)."""
    obj: Any = resolve(importlib.import_module(target["module"]), target["qualname"])
    for _ in range(10):
        if inspect.isfunction(obj) and obj.__code__.co_qualname == target["qualname"]:
            return obj
        obj = getattr(obj, "__wrapped__", None)
    raise LookupError(f"no plain function at {target['module']}:{target['qualname']}")


def _find_code(code: Any, qualname: str) -> Any:
    if code.co_qualname == qualname:
        return code
    for const in code.co_consts:
        if inspect.iscode(const):
            found = _find_code(const, qualname)
            if found is not None:
                return found
    return None


def _renamed(code: Any, filename: str) -> Any:
    """`code` (and the code nested in it) under another file name: coverage.py measures only
    the target's file, so the calls that are not compared do not count as covered."""
    consts = tuple(_renamed(c, filename) if inspect.iscode(c) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _as_function(code: Any, live: Any) -> Any:
    made = type(live)(code, live.__globals__, live.__name__, live.__defaults__, live.__closure__)
    made.__kwdefaults__ = live.__kwdefaults__
    return made


_reference_codes: dict[Path, Any] = {}


def _reference_function(target: dict[str, str], live: Any) -> Any:
    """The reference's code of the target, run with the live module's globals (its classes and
    singletons are the ones the test uses); the reference module when the closure differs."""
    path = REFERENCE_DIR / target["path"]
    module = _reference_codes.get(path)
    if module is None:
        module = _reference_codes[path] = compile(
            path.read_text(encoding="utf-8"), str(path), "exec"
        )
    code = _find_code(module, live.__qualname__)
    if code is None or code.co_freevars != live.__code__.co_freevars:
        return load_reference(target)
    return _as_function(code, live)


def _trampoline(code: Any) -> Any:
    """A code object with `code`'s parameters and free variables whose body hands the call to
    the module global `__reposim_in_situ__` (callers that read the signature, as ply reads a
    grammar action's, see the same one)."""
    names = code.co_varnames
    count, posonly, kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    positional = list(names[:count])
    keywords = list(names[count : count + kwonly])
    index = count + kwonly
    star = names[index] if code.co_flags & inspect.CO_VARARGS else None
    index += star is not None
    double = names[index] if code.co_flags & inspect.CO_VARKEYWORDS else None
    params = positional[:posonly] + (["/"] if posonly else []) + positional[posonly:]
    params += [f"*{star}"] if star else (["*"] if keywords else [])
    params += keywords + ([f"**{double}"] if double else [])
    args = ", ".join([*positional, *([f"*{star}"] if star else [])])
    kwargs = ", ".join([*(f"{k!r}: {k}" for k in keywords), *([f"**{double}"] if double else [])])
    free = list(code.co_freevars)
    source = "def outer():\n"
    source += f"    {' = '.join([*free, 'None'])}\n" if free else ""
    source += f"    def inner({', '.join(params)}):\n"
    source += f"        {', '.join(free)}\n" if free else ""
    source += f"        return {_DISPATCH}(({args}{',' if args else ''}), {{{kwargs}}})\n"
    source += "    return inner\n"
    made = _find_code(compile(source, code.co_filename, "exec"), "outer.<locals>.inner")
    if made.co_freevars != code.co_freevars:
        raise LookupError("the target's free variables cannot be matched")
    return made.replace(
        co_name=code.co_name, co_qualname=code.co_qualname, co_firstlineno=code.co_firstlineno
    )


def _kept_as_is(package: str) -> dict[int, Any]:
    """A deep copy's memo that keeps modules themselves, and the module-level singletons of
    the target's own package whose identity is what they are (`identity_object`: a marker,
    a token type compared with `is`). Not an object with state of its
    own, even a module-level one (ply keeps the last lexer it built as a module global;
    a test module, its shared parser): the call changes it, and the reference must change a
    copy of it, never the live one (else the two calls' changes cancel out, or add up)."""
    memo: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        memo[id(module)] = module
        if name == package or name.startswith(package + "."):
            for obj, path in _index_shared(name).values():
                if identity_object(obj, path):
                    memo[id(obj)] = obj
    memo.update(_NAMED)
    return memo


class _InSitu:
    """The trampoline's other half: counts the target's calls in one test and checks those
    asked for against the reference."""

    def __init__(
        self, candidate: Any, quiet: Any, reference: Any, calls: set[int], package: str = ""
    ) -> None:
        self.candidate, self.quiet, self.reference = candidate, quiet, reference
        self.package = package
        self.calls = calls
        self.count = 0
        self.inside_reference = 0
        self.differences: dict[int, str] = {}
        self.checked: set[int] = set()
        self.memo: dict[int, Any] | None = None  # made at the first check: the test's module
        # (and its module-level parser) is imported by then

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.inside_reference:  # the reference's own calls of the target stay the reference's
            return self.reference(*args, **kwargs)
        self.count += 1
        number = self.count
        if number not in self.calls:
            return self.quiet(*args, **kwargs)
        try:
            copied_args, copied_kwargs = self.copy((args, kwargs))
        except Exception as exc:
            self.differences[number] = f"its arguments cannot be copied ({type(exc).__name__})"
            return self.quiet(*args, **kwargs)
        self.checked.add(number)
        result: Any = None
        raised: Exception | None = None
        try:
            result = self.candidate(*args, **kwargs)
        except Exception as exc:
            raised = exc
        self.inside_reference += 1
        try:
            expected = self.reference(*copied_args, **copied_kwargs)
            expected_raised: Exception | None = None
        except Exception as exc:
            expected, expected_raised = None, exc
        finally:
            self.inside_reference -= 1
        difference = _difference(
            result, raised, expected, expected_raised, (args, kwargs), (copied_args, copied_kwargs)
        )
        if difference:
            self.differences[number] = difference
        if raised is not None:
            raise raised
        return result

    def copy(self, value: Any) -> Any:
        """A deep copy of `value` in which what cannot be copied (a lock, an open file, a
        generator) stays itself, shared by both calls: the object a copy fails on (found in
        the failing `deepcopy` frame) joins the objects kept as they are, and it is tried
        again, a bounded number of times."""
        if self.memo is None:
            self.memo = _kept_as_is(self.package)
        for _ in range(_COPY_TRIES):
            try:
                return copy.deepcopy(value, dict(self.memo))
            except Exception as exc:
                failed = _uncopied(exc)
                if failed is None or id(failed) in self.memo:
                    raise
                self.memo[id(failed)] = failed
        return copy.deepcopy(value, dict(self.memo))


_COPY_TRIES = 20


def _uncopied(exc: BaseException) -> Any:
    """The object the innermost `copy.deepcopy` call was copying when `exc` was raised."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is copy.deepcopy.__code__:
            found = tb.tb_frame.f_locals.get("x")
        tb = tb.tb_next
    return found


def _kind(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _difference(
    result: Any,
    raised: Exception | None,
    expected: Any,
    expected_raised: Exception | None,
    after: tuple[tuple[Any, ...], dict[str, Any]],
    expected_after: tuple[tuple[Any, ...], dict[str, Any]],
) -> str:
    """How the candidate's call differed from the reference's, or "" when it did not (live
    objects: an iterator is never read)."""
    with live_values():
        return _outcome_difference(result, raised, expected, expected_raised) or (
            _state_difference(after, expected_after)
        )


def _outcome_difference(
    result: Any, raised: Exception | None, expected: Any, expected_raised: Exception | None
) -> str:
    if expected_raised is not None:
        if raised is None:
            return f"returned {describe(result)}; the reference raised {_kind(expected_raised)}"
        said, expected_said = message(raised), message(expected_raised)
        if _kind(raised) != _kind(expected_raised) or said != expected_said:
            return (
                f"raised {_kind(raised)}: {said}; the reference raised "
                f"{_kind(expected_raised)}: {expected_said}"
            )
    elif raised is not None:
        return (
            f"raised {_kind(raised)}: {message(raised)}; the reference returned "
            f"{describe(expected)}"
        )
    elif not same(result, expected):
        return f"returned {describe(result)}, the reference returned {describe(expected)}"
    return ""


def _state_difference(
    after: tuple[tuple[Any, ...], dict[str, Any]],
    expected_after: tuple[tuple[Any, ...], dict[str, Any]],
) -> str:
    named = [*(f"argument {i}" for i in range(len(after[0]))), *after[1]]
    values = [*after[0], *after[1].values()]
    expected_values = [*expected_after[0], *expected_after[1].values()]
    # one comparison over all the arguments (they were copied together): an object two of
    # them share is one object on both sides, and an id one keeps names the other's object
    memo = _Pairs()
    for name, now, then in zip(named, values, expected_values, strict=True):
        if not same(now, then, memo):
            where, now, then = _first_difference(name, now, then)
            return f"{where} is {describe(now)} afterwards, the reference left it {describe(then)}"
    return ""


def _first_difference(path: str, now: Any, then: Any, depth: int = 8) -> tuple[str, Any, Any]:
    """Where two values that compare unequal first differ (`argument 0.lexer.lineno`), and the
    two values there: what a person reads a failed check by."""
    for _ in range(depth):
        pairs: list[tuple[str, Any, Any]] = []
        if type(now) is type(then) and isinstance(then, list | tuple) and len(now) == len(then):
            pairs = [(f"{path}[{i}]", a, b) for i, (a, b) in enumerate(zip(now, then, strict=True))]
        elif type(now) is type(then) and isinstance(then, dict) and list(now) == list(then):
            pairs = [(f"{path}[{k!r}]", now[k], then[k]) for k in then]
        elif not isinstance(then, _PLAIN):
            mine, theirs = state(now), state(then)
            if mine is not None and theirs is not None and set(mine) == set(theirs):
                pairs = [(f"{path}.{k}", mine[k], theirs[k]) for k in theirs]
        # plain values first, then objects, then containers; a bound method differs wherever
        # its object does: looked at last
        pairs.sort(
            key=lambda pair: (
                isinstance(pair[2], MethodType),
                isinstance(pair[2], list | tuple | dict | set),
                not isinstance(pair[2], (*_PLAIN, float)),
            )
        )
        found = next(((p, a, b) for p, a, b in pairs if not same(a, b)), None)
        if found is None:
            break
        path, now, then = found
    return path, now, then


class _Outcome:
    """A pytest plugin noting whether the repository's test passed, and why not."""

    def __init__(self) -> None:
        self.ran = False
        self.failure = ""

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call":
            self.ran = True
        if report.failed and not self.failure:
            text = str(report.longrepr).strip().splitlines()
            self.failure = f"{report.when}: {text[-1] if text else 'failed'}"[:300]


def remember_rewrites() -> None:
    """Keep pytest's assertion rewriting of a file for the rest of this process: the same
    file, unchanged, is rewritten once however often it is imported. A check in situ imports
    the repository's test module afresh for every run (_forget_module_of), and pytest caches a
    rewrite only in a .pyc file, which it does not write under PYTHONDONTWRITEBYTECODE (set on
    this machine and in CI): boolean.py's 1,700-line test module was rewritten again for each
    of its checks in situ, on the reference and for every mutant. The rewritten code depends
    only on the file and the project's configuration, which do not change within a run."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    original = getattr(rewrite, "_rewrite_test", None)
    if original is None or getattr(original, "remembered", False):
        return
    kept: dict[tuple[str, int, int], Any] = {}

    def remembered(fn: Any, config: Any) -> Any:
        try:
            stat = Path(fn).stat()
        except OSError:
            return original(fn, config)
        key = (str(fn), stat.st_mtime_ns, stat.st_size)
        if key not in kept:
            kept[key] = original(fn, config)
        return kept[key]

    remembered.remembered = True  # type: ignore[attr-defined]
    rewrite._rewrite_test = remembered


def _run_in_situ(
    target: dict[str, str], candidate: Any, test: str, calls: set[int]
) -> dict[str, Any]:
    """One run of the repository's test `test` with the target swapped for `candidate`."""
    live = _live_function(target)
    before = live.__code__
    if candidate is live:
        code = before
        checked, quiet = _as_function(code, live), _as_function(_renamed(code, "<in situ>"), live)
    else:  # another implementation (REPOSIM_CANDIDATE)
        checked = quiet = candidate
    package = target["module"].split(".")[0]
    dispatch = _InSitu(checked, quiet, _reference_function(target, live), calls, package)
    module_globals = live.__globals__
    module_globals[_DISPATCH] = dispatch
    live.__code__ = _trampoline(before)
    try:
        outcome = _pytest_run(test)
    finally:
        live.__code__ = before
        module_globals.pop(_DISPATCH, None)
    if not outcome.ran and not outcome.failure:
        outcome.failure = "the test did not run"
    return {
        "failure": outcome.failure,
        "count": dispatch.count,
        "differences": dispatch.differences,
        "checked": dispatch.checked,
    }


def _pytest_run(test: str) -> _Outcome:
    """One quiet pytest run of the repository's test `test`, its module imported afresh."""
    import pytest

    remember_rewrites()
    outcome = _Outcome()
    _forget_module_of(test)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main([test, *SUITE_FLAGS], plugins=[outcome])
    return outcome


def _forget_module_of(test: str) -> None:
    """Drop the test's module from sys.modules, so the run imports it afresh: what it made at
    import (a module-level parser the test reads to its end) is new for each run, as when the
    test runs alone."""
    path = (Path.cwd() / test.split("::")[0]).resolve()
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str) and filename.endswith(path.name):
            with contextlib.suppress(OSError):
                if Path(filename).resolve() == path:
                    del sys.modules[name]


def check_in_situ(
    candidate: Any, target: dict[str, str], cases: list[dict[str, Any]], *, test: str, call: int
) -> None:
    """The repository's test `test` run with `candidate` in the target's place: its `call`-th
    call of the target must do what the reference does on a copy of the same arguments, and
    the test itself must pass. One run of each test serves all its cases (per candidate)."""
    if _reach_only[0]:
        _reach_checks[0] += 1
        reached = _in_situ_runs.get(test)
        if reached is None or reached[0] is not _REACHED:
            plain = _pytest_run(test)
            failure = plain.failure or ("" if plain.ran else "the test did not run")
            reached = (_REACHED, _REACHED, {"failure": failure})
            _in_situ_runs[test] = reached
        assert not reached[2]["failure"], f"the repository's test fails: {reached[2]['failure']}"
        return
    who = candidate if candidate is not _live_function(target) else candidate.__code__
    kept = _in_situ_runs.get(test)
    if kept is None or kept[0] is not who:
        calls = {int(c["call"]) for c in cases if c["test"] == test}
        kept = (who, who, _run_in_situ(target, candidate, test, calls))
        _in_situ_runs[test] = kept
    outcome = kept[2]
    assert not outcome["failure"], f"the repository's test fails: {outcome['failure']}"
    difference = outcome["differences"].get(call)
    assert difference is None, f"call {call} of the target in {test}: {difference}"
    assert call in outcome["checked"], (
        f"the test made {outcome['count']} call(s) of the target, not the {call}th"
    )
