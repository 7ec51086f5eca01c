"""New cases for a traced harness, derived from its recorded calls; the reference is the oracle.

    python reposim_derive.py SPEC.json OUT.json

SPEC: {"harness": path of the traced harness file, "runs": candidate calls to try at most,
"seconds": time budget, "keep": derived calls to keep at most, "max_bytes": encoding limit}.

The harness's recorded calls (`CASES`) are the seeds. Each argument of each seed is changed by
type, as EvalPlus's type-aware mutation does: an int one up, one down, 0 and negated; a float
doubled, negated and 0.0; a bool flipped; a string and a bytes shortened, emptied and
extended; a list, tuple, dict or set with its last (first) item dropped, emptied and its first
item repeated; and any value replaced by another value recorded at the same place (the same
argument of another call of the target) or of the same type elsewhere. Each candidate runs on
the workspace's target (the reference) with the seed's class state, its arcs traced; it is kept
only when it runs arcs none of the recorded calls (nor a call kept before it) ran, when a second
run on fresh copies does exactly the same (result, exception, output, arguments afterwards), when
it raised only by a `raise` of the target itself (an error deep inside from an argument of the
wrong shape says nothing of the target), and when its values can be kept as expressions. OUT:
{"calls": [tracer-shaped calls, each with "derived": what changed and "source": the seed's index
in CASES], "tried", "kept", "nondeterministic", "unkept"}.

Standard library and the harness support module only: this runs in the project's Python.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

RUNTIME = Path(__file__).resolve().parent
CALL_SECONDS = 1.0  # one candidate call at most (a changed count may loop for long)


class CallTimeout(Exception):
    """A candidate call ran past CALL_SECONDS."""


def _alarm(signum: int, frame: Any) -> None:
    raise CallTimeout()


def load_harness(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("reposim_derived_seeds", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def target_code(function: Any) -> CodeType:
    seen = 0
    while not hasattr(function, "__code__") and seen < 10:
        function = getattr(function, "__wrapped__", None)
        seen += 1
    code: CodeType = function.__code__
    return code


class Outcome:
    """What one call did: its result or exception, what it printed, its arguments afterwards,
    and the arcs of the target it ran."""

    def __init__(self) -> None:
        self.result: Any = None
        self.exception: BaseException | None = None
        self.own_raise = False  # the exception came from a `raise` of the target itself
        self.out = ""
        self.err = ""
        self.args: list[Any] = []
        self.kwargs: dict[str, Any] = {}
        self.arcs: set[tuple[int, int]] = set()
        self.timed_out = False


def run(function: Any, code: CodeType, args: list[Any], kwargs: dict[str, Any]) -> Outcome:
    outcome = Outcome()
    outcome.args, outcome.kwargs = args, kwargs
    lasts: dict[FrameType, int] = {}

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            outcome.arcs.add((lasts.get(frame, -code.co_firstlineno), frame.f_lineno))
            lasts[frame] = frame.f_lineno
        elif event == "return":
            outcome.arcs.add((lasts.pop(frame, -code.co_firstlineno), -code.co_firstlineno))
        return local

    def global_trace(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code is code else None

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    sys.settrace(global_trace)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            outcome.result = function(*args, **kwargs)
    except CallTimeout:
        outcome.timed_out = True
    except Exception as exc:
        outcome.exception = exc
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        outcome.own_raise = tb is not None and tb.tb_frame.f_code is code
    finally:
        sys.settrace(None)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    outcome.out, outcome.err = out.getvalue(), err.getvalue()
    return outcome


def same_outcome(support: Any, a: Outcome, b: Outcome) -> bool:
    """Whether two runs on fresh copies did exactly the same."""
    if a.timed_out or b.timed_out or (a.out, a.err) != (b.out, b.err) or a.arcs != b.arcs:
        return False
    if (a.exception is None) != (b.exception is None):
        return False
    if a.exception is not None and b.exception is not None:
        return type(a.exception) is type(b.exception) and str(a.exception) == str(b.exception)
    try:
        return bool(
            support.same(a.result, b.result)
            and support.dump(a.result) == support.dump(b.result)
            and support.same(a.args, b.args)
            and support.same(a.kwargs, b.kwargs)
        )
    except Exception:
        return False


_SHORT = 200  # strings and containers are extended only below this size


def changed(value: Any) -> Iterator[tuple[Any, str]]:
    """Values near `value` by its type, with a few words saying what changed."""
    kind = type(value)
    if kind is bool:
        yield (not value), "flipped"
    elif kind is int:
        for new, how in ((value + 1, "+1"), (value - 1, "-1"), (0, "0"), (-value, "negated")):
            if new != value:
                yield new, how
    elif kind is float:
        for new, how in ((value * 2, "doubled"), (-value, "negated"), (0.0, "0.0")):
            if new != value:
                yield new, how
    elif kind in (str, bytes):
        if value:
            yield value[:-1], "last character dropped"
            yield value[1:], "first character dropped"
            yield value[:0], "emptied"
        if len(value) < _SHORT:
            yield value + (value[-1:] or (" " if kind is str else b" ")), "extended"
            if value:
                yield value + value, "doubled"
    elif kind in (list, tuple):
        if value:
            yield kind(value[:-1]), "last item dropped"
            yield kind(value[1:]), "first item dropped"
            yield kind(), "emptied"
            if len(value) < _SHORT:
                yield kind([*value, value[0]]), "first item repeated at the end"
    elif kind is dict:
        if value:
            items = list(value.items())
            yield dict(items[:-1]), "last entry dropped"
            yield dict(items[1:]), "first entry dropped"
            yield {}, "emptied"
    elif kind in (set, frozenset) and value:
        items = list(value)
        yield kind(items[:-1]), "an item dropped"
        yield kind(), "emptied"


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:39] + "…"


_POOL = 40  # distinct values (by their dump) kept per kind of value to replace with
_INSIDE = 2  # levels of containers and objects' fields read for values to replace with


def _compatible(value: Any, other: Any) -> bool:
    """Whether `other` may stand where `value` was: the same type, or two objects of classes
    with a common base of the project's (a Symbol where an OR expression was: both are
    boolean.py `Expression`s, and both have its methods)."""
    a, b = type(value), type(other)
    if a is b:
        return True
    shared = [k for k in a.__mro__ if k in b.__mro__ and k is not object]
    return any(k.__module__ != "builtins" for k in shared)


def _inside(value: Any, support: Any, depth: int = 0) -> Iterator[Any]:
    """The values a recorded value holds: container items, dict keys and values, and the
    fields of objects, `_INSIDE` levels down."""
    if depth >= _INSIDE:
        return
    kind = type(value)
    if kind in (list, tuple, set, frozenset):
        items: list[Any] = list(value)
    elif kind is dict:
        items = [*value.keys(), *value.values()]
    else:
        items = list((support.state(value) or {}).values()) if _object(value) else []
    for item in items[:_SHORT]:
        yield item
        yield from _inside(item, support, depth + 1)


def _object(value: Any) -> bool:
    """An instance of a class of its own (not a function, a class or a module)."""
    return type(value).__module__ != "builtins" and not _named(value)


def _named(value: Any) -> bool:
    return isinstance(value, type | ModuleType) or inspect.isroutine(value)


def candidates(cases: dict[int, dict[str, Any]], support: Any) -> Iterator[tuple[int, str, Any]]:
    """(seed index, where, a new value): each argument of each seed changed by type; then
    replaced by another value recorded at the same place; then by a value of a compatible type
    recorded anywhere (inside other arguments too). The seeds are taken in turn, so a small
    budget still reaches every recorded call."""
    places: dict[str, list[Any]] = {}
    pool: list[Any] = []
    dumps: set[tuple[str, str]] = set()

    def pooled(value: Any) -> None:
        try:
            key = (type(value).__qualname__, support.dump(value, depth=3))
        except Exception:
            return
        if key not in dumps and sum(k[0] == key[0] for k in dumps) < _POOL:
            dumps.add(key)
            pool.append(value)

    for case in cases.values():
        for where, value in _places(case):
            places.setdefault(where, []).append(value)
            pooled(value)
            for item in _inside(value, support):
                if item is not None and not _named(item):
                    pooled(item)

    def others(where: str, value: Any) -> Iterator[tuple[str, Any]]:
        seen = support.dump(value)
        shown: set[str] = {seen}
        for other in places.get(where, []):
            text = support.dump(other)
            if text not in shown:
                shown.add(text)
                yield "replaced by another recorded there", other
        for other in pool:
            if _compatible(value, other):
                text = support.dump(other)
                if text not in shown:
                    shown.add(text)
                    yield "replaced by a value recorded elsewhere", other

    def of(index: int) -> Iterator[tuple[int, str, Any]]:
        case = cases[index]
        for where, value in _places(case):
            material = support.materialize(value)
            for new, how in changed(material):
                yield index, f"{where} {how}: {_short(material)} -> {_short(new)}", new
        streams = [(where, others(where, value)) for where, value in _places(case)]
        while streams:  # each argument in turn
            for where, stream in list(streams):
                found = next(stream, None)
                if found is None:
                    streams.remove((where, stream))
                    continue
                how, other = found
                material = support.materialize(other)
                yield index, f"{where} {how}: {_short(material)}", material

    streams = [of(i) for i in cases]
    while streams:
        for stream in list(streams):
            try:
                yield next(stream)
            except StopIteration:
                streams.remove(stream)
            except Exception:
                streams.remove(stream)


def _places(case: dict[str, Any]) -> list[tuple[str, Any]]:
    found = [(f"args[{i}]", v) for i, v in enumerate(case.get("args") or ())]
    found += [(f"kwargs[{k!r}]", v) for k, v in (case.get("kwargs") or {}).items()]
    return found


def _apart(case: dict[str, Any], support: Any) -> dict[str, Any]:
    """A case with its arguments as `args` and `kwargs`, those of a `shared` case taken from a
    copy of the value that holds them all."""
    if case.get("shared") is None:
        return case
    together = support.materialize(case["shared"])
    return {**case, "args": tuple(together[0]), "kwargs": dict(together[1])}


def _with(case: dict[str, Any], where: str, value: Any) -> tuple[list[Any], dict[str, Any]]:
    args = list(case.get("args") or ())
    kwargs = dict(case.get("kwargs") or {})
    if where.startswith("args["):
        args[int(where[5 : where.index("]")])] = value
    else:
        kwargs[where[8 : where.index("]") - 1]] = value
    return args, kwargs


def _encoded(values: list[Any], max_bytes: int) -> list[dict[str, str]] | None:
    """The values as the tracer encodes them, or None when one would be a pickle (a derived
    case is kept only when a person can read it) or cannot be kept at all."""
    tracer = importlib.import_module("reposim_tracer")
    found = []
    for value in values:
        try:
            encoded = tracer.encode(value, max_bytes)
        except Exception:
            return None
        if "r" not in encoded:
            return None
        found.append(encoded)
    return found


def derived_call(
    before: tuple[list[dict[str, str]], dict[str, dict[str, str]]],
    outcome: Outcome,
    max_bytes: int,
) -> dict[str, Any] | None:
    """A call as the tracer records one (arguments on entry, the result or the exception,
    what it printed, the arguments afterwards when it changed them), or None when its values
    cannot be kept readably."""
    tracer = importlib.import_module("reposim_tracer")
    args, kwargs = before
    call: dict[str, Any] = {"args": args, "kwargs": kwargs, "test": ""}
    if outcome.exception is not None:
        kind = type(outcome.exception)
        call["raises"] = [f"{kind.__module__}.{kind.__qualname__}", str(outcome.exception)]
    else:
        returns = _encoded([outcome.result], max_bytes)
        if returns is None:
            return None
        call["returns"] = returns[0]
    after = _encoded(outcome.args, max_bytes)
    if after is None:
        return None
    if tracer._exact(after) != tracer._exact(args):
        call["after"] = after
    if outcome.out or outcome.err:
        call["stdout"], call["stderr"] = outcome.out, outcome.err
    return call


def derive(spec: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(RUNTIME))
    support = importlib.import_module("reposim_harness_support")

    harness = load_harness(spec["harness"])
    recorded = list(getattr(harness, "CASES", []))
    plain = {i: c for i, c in enumerate(recorded) if c.get("yields") is None}
    # a case whose arguments share an object (`shared`) seeds with its arguments taken apart,
    # as they were before they were kept together: what a derived case needs of the identity
    # between them is not kept, and a derived case that then fails on the reference is dropped
    # (boolean.py's Expression.subs, whose substitutions are keyed by nodes of `self` and
    # looked up by ==, lost its one derived case, and its coverage 100% -> 75%, without them)
    seeds = {i: _apart(c, support) for i, c in plain.items()}
    function = harness.candidate
    code = target_code(function)
    max_bytes = int(spec.get("max_bytes", 20000))
    covered: set[tuple[int, int]] = set()
    for case in plain.values():
        with support.class_state(case.get("classes")):
            if case.get("shared") is not None:
                together = support.materialize(case["shared"])
                args, kwargs = list(together[0]), dict(together[1])
            else:
                args = [support.materialize(a) for a in case.get("args") or ()]
                kwargs = {k: support.materialize(v) for k, v in (case.get("kwargs") or {}).items()}
            covered |= run(function, code, args, kwargs).arcs
    report: dict[str, Any] = {"calls": [], "tried": 0, "nondeterministic": 0, "unkept": 0}
    # (CPU time: the machine's load stretches wall time, not the work done)
    deadline = time.process_time() + float(spec.get("seconds", 5.0))
    for index, where, value in candidates(seeds, support):
        if (
            report["tried"] >= int(spec.get("runs", 200))
            or len(report["calls"]) >= int(spec.get("keep", 10))
            or time.process_time() > deadline
        ):
            break
        report["tried"] += 1
        case = seeds[index]
        with support.class_state(case.get("classes")):
            args, kwargs = _with(case, where, support.materialize(value))
            encoded_args = _encoded(args, max_bytes)
            encoded_kwargs = _encoded(list(kwargs.values()), max_bytes)
            if encoded_args is None or encoded_kwargs is None:
                report["unkept"] += 1
                continue
            first = run(function, code, args, kwargs)
            if first.timed_out or not first.arcs - covered:
                continue
            if first.exception is not None and not (
                first.own_raise and isinstance(first.exception, Exception)
            ):
                continue
            again = run(function, code, *_with(case, where, support.materialize(value)))
            if not same_outcome(support, first, again):
                report["nondeterministic"] += 1
                continue
            before = (encoded_args, dict(zip(kwargs, encoded_kwargs, strict=True)))
            call = derived_call(before, first, max_bytes)
        if call is None:
            report["unkept"] += 1
            continue
        call.update(derived=where, source=index)
        covered |= first.arcs
        report["calls"].append(call)
    return report


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    report = derive(spec)
    Path(argv[2]).write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
