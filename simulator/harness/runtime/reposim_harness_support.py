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
import copy
import importlib
import importlib.util
import inspect
import math
import os
import pickle
import sys
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

CANDIDATE_VARIABLE = "REPOSIM_CANDIDATE"
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "reference"
WORKSPACE = Path(__file__).resolve().parent.parent.parent  # .reposim/harness/ -> the workspace


class P:
    """A recorded value that is not a Python literal, kept as a base64 pickle."""

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
    """A fresh copy of a recorded value (so one test's mutations never reach another)."""
    if isinstance(value, P):
        return value.load()
    return copy.deepcopy(value)


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


def same(actual: Any, expected: Any) -> bool:
    """Behavioural equality: same type, then equal value; floats to 1e-9; objects without their
    own __eq__ by their attributes."""
    if type(actual) is not type(expected):
        return False
    if isinstance(expected, Iterator) and not isinstance(expected, Sequence):
        # a lazy result (map, filter, a custom iterator): compare what it yields
        limit = 100_000
        return same(list(islice(actual, limit)), list(islice(expected, limit)))
    if isinstance(expected, float):
        if math.isnan(expected):
            return math.isnan(actual)
        return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(
            same(a, e) for a, e in zip(actual, expected, strict=True)
        )
    if isinstance(expected, dict):
        return list(actual) == list(expected) and all(
            same(actual[k], expected[k]) for k in expected
        )
    if isinstance(expected, BaseException):
        return bool(actual.args == expected.args)
    own_eq = type(expected).__dict__.get("__eq__") or any(
        "__eq__" in vars(k) for k in type(expected).__mro__[1:-1]
    )
    if not own_eq and hasattr(expected, "__dict__"):
        return same(vars(actual), vars(expected))
    try:
        return bool(actual == expected)
    except Exception:
        return False


def describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:299] + "…"


def check_call(
    function: Any,
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    returns: Any = NOTHING,
    raises: tuple[str, str] | None = None,
    after: tuple[Any, ...] | None = None,
) -> None:
    """Call `function` on fresh copies of recorded arguments and compare what it does with what
    the reference did: its return value or the exception it raised (type and message), and the
    arguments' state afterwards when the reference changed them in place."""
    call_args = [materialize(a) for a in args]
    call_kwargs = {k: materialize(v) for k, v in (kwargs or {}).items()}
    try:
        result = function(*call_args, **call_kwargs)
    except Exception as exc:
        if raises is None:
            raise AssertionError(
                f"raised {type(exc).__name__}: {exc} where the reference returned"
            ) from exc
        kind = f"{type(exc).__module__}.{type(exc).__qualname__}"
        assert kind == raises[0], f"raised {kind}, the reference raised {raises[0]}"
        assert str(exc) == raises[1], f"message {str(exc)!r}, the reference said {raises[1]!r}"
    else:
        assert raises is None, f"returned {describe(result)}; the reference raised {raises[0]}"
        expected = materialize(returns)
        assert same(result, expected), (
            f"returned {describe(result)}, the reference returned {describe(expected)}"
        )
    if after is not None:
        for position, (now, then) in enumerate(zip(call_args, after, strict=False)):
            then = materialize(then)
            assert same(now, then), (
                f"argument {position} is {describe(now)} afterwards, "
                f"the reference left it {describe(then)}"
            )
