"""What the traced run spends on values it cannot keep: bounded by the size limit, not by the
value's size (a parser's production object holds the whole parser and its tables; pickling it
whole for every call, only to find it too big, made the traced run of pycparser's suite take
over 30 minutes)."""

from __future__ import annotations

import importlib
import sys
import threading
from collections import ChainMap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from simulator.harness.runtime.reposim_tracer import Recorder, Unencodable, _support, encode


class Counted:
    """An object only a pickle keeps (its class makes instances its own way), counting how
    often the pickler reduced one."""

    reduced = 0

    def __new__(cls, n: int) -> Counted:
        made = super().__new__(cls)
        made.n = n
        return made

    def __reduce__(self) -> Any:
        Counted.reduced += 1
        return (Counted, (self.n,), (self.n,))  # (a state no constructor expression sets)

    def __setstate__(self, state: tuple[int]) -> None:
        self.n = state[0]


def test_a_value_over_the_size_limit_is_given_up_after_about_the_limit_not_the_whole_value() -> (
    None
):
    value = [Counted(i) for i in range(200_000)]  # a pickle of ~2 MB
    Counted.reduced = 0
    with pytest.raises(Unencodable, match="too big"):
        encode(value, 20_000)
    # about 20 kB of pickle is some thousands of objects (the pickler writes a frame at a
    # time, 64 kB at most); the whole value is 200,000
    assert Counted.reduced < 20_000
    # under the limit it is kept, all of it
    Counted.reduced = 0
    small = encode(value[:100], 20_000)
    assert "p" in small and Counted.reduced >= 100


def _traced_module(
    root: Path, name: str, source: str, function: str
) -> tuple[Any, Recorder, dict[str, str]]:
    """(the module written from `source` and imported, a recorder watching its `function`, the
    target's spec)."""
    (root / f"{name}.py").write_text(source)
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(name)
    finally:
        sys.path.remove(str(root))
    target = {"id": f"{name}.py::{function}", "path": f"{name}.py", "qualname": function}
    return module, Recorder({"root": str(root), "targets": [target]}), target


@contextmanager
def tracing(recorder: Recorder) -> Iterator[None]:
    """`recorder` traces the calls made in the block, as the pytest plugin has it do in a test."""
    sys.settrace(recorder.make_global_trace())
    try:
        yield
    finally:
        sys.settrace(None)


BIG = '''
def size_of(parser, text):
    """What a grammar action looks like: the parser (huge) and a small value."""
    return len(text)
'''


def test_an_object_found_too_big_is_not_pickled_again_in_the_same_test(tmp_path: Path) -> None:
    actions, recorder, target = _traced_module(tmp_path, "actions", BIG, "size_of")
    parser = [Counted(i) for i in range(20_000)]  # over the limit whatever is kept of it
    for test in ("test_one", "test_two"):
        recorder.test = test  # (what the plugin sets before every test)
        Counted.reduced = 0
        with tracing(recorder):
            for n in range(50):
                actions.size_of(parser, "x" * n)
        # pickled once in the test, not once per call (50 calls: about 50 times as much)
        assert 0 < Counted.reduced < 15_000
    # not dropped: checked in situ, a share of each test's calls (the rest add no arcs)
    assert recorder.dropped[target["id"]] == {}
    pool = recorder.pool[target["id"]]
    assert len(pool) == 2 * recorder.PER_TEST
    assert {c["in_situ"]["why"] for c in pool} == {"an argument: too big"}


class Pair:
    """An object a constructor expression keeps (its own reduction, plain arguments)."""

    built = 0

    def __new__(cls, n: int) -> Pair:  # (made its own way: only its reduction rebuilds it)
        made = super().__new__(cls)
        made.n = n
        return made

    def __reduce__(self) -> Any:
        Pair.built += 1
        return (Pair, (self.n,))


def test_a_constructor_expression_over_the_size_limit_is_given_up_at_the_limit() -> None:
    value = [Pair(i) for i in range(200_000)]  # an expression of ~10 MB
    Pair.built = 0
    with pytest.raises(Unencodable, match="too big"):
        encode(value, 20_000)
    assert Pair.built < 2_000  # about 20 kB of `C('...:Pair', n)`, not all 200,000


STEPS = '''
def step(box, n):
    """What a token-list method looks like: called many times a test on the same object."""
    if n >= 150:
        return -n
    return n
'''


def _stepped(root: Path, name: str, box: object) -> tuple[Recorder, dict[str, str]]:
    """STEPS written as module `name`, and its step(box, n) called for n in 0..199 in the test
    "test_steps", traced: the recorder and the target's spec."""
    steps, recorder, target = _traced_module(root, name, STEPS, "step")
    recorder.test = "test_steps"
    with tracing(recorder):
        for n in range(200):
            steps.step(box, n)
    return recorder, target


def test_calls_that_cannot_be_kept_are_not_encoded(tmp_path: Path) -> None:
    """Once a test has given a target its share of calls, a call is kept only for new arcs:
    the calls after that are traced for their arcs alone (and their arguments pickled, not
    encoded); the one with new arcs is kept from that pickle. When its arguments do not
    pickle (a lock), it makes the next calls of the target in that test encoded again."""
    recorder, target = _stepped(tmp_path, "steps", [Pair(i) for i in range(50)])
    # encoded on the way in: the test's share (12) only
    assert recorder.encoded[(target["id"], "test_steps")] == 12
    chosen = recorder.choose(target["id"])
    assert {"-150"} <= {c["returns"]["r"] for c in chosen}  # the other branch, its first call
    assert len(chosen) == 13

    recorder, target = _stepped(tmp_path, "locked_steps", [threading.Lock()])
    # (each call is checked in situ: a lock is kept by no pickle) the share, then the call
    # after the first with new arcs (n=151)
    assert recorder.encoded[(target["id"], "test_steps")] <= 14
    chosen = recorder.choose(target["id"])
    assert 151 in {c["in_situ"]["call"] - 1 for c in chosen}


SCOPED = '''
def step(scope, n):
    """What glom's arg_val looks like: every step of a spec gets the scope, a ChainMap whose
    maps hold the scopes above it."""
    return n + 1
'''


class Leaf:
    """A value at the bottom of a scope chain that no pickle keeps, counting how often it was
    shown."""

    shown = 0

    def __repr__(self) -> str:
        Leaf.shown += 1
        return "Leaf()"

    def __reduce__(self) -> Any:
        raise TypeError("a Leaf is not kept")


def test_an_argument_checked_in_situ_is_shown_without_its_whole_repr(tmp_path: Path) -> None:
    """A call checked in situ shows its arguments as they were (live_form); reprlib cuts what
    it knows, but a ChainMap's own repr shows every map in full before reprlib cuts the text.
    glom's scopes chain ChainMaps (each new child holds its parent): one call's repr grew
    with the depth of the spec, and glom's suite under the tracer did not finish in 1,800 s."""
    steps, recorder, target = _traced_module(tmp_path, "scoped", SCOPED, "step")
    scope: Any = ChainMap({"vars": {"inner": {"leaf": Leaf()}}})
    for depth in range(8):  # each map holds the scope above twice: ~3**8 leaves in a repr
        scope = scope.new_child({"parent": scope, "last": scope, "depth": depth})
    Leaf.shown = 0
    recorder.test = "test_scopes"
    with tracing(recorder):
        for n in range(3):
            steps.step(scope, n)
    pool = recorder.pool[target["id"]]
    assert pool, recorder.dropped
    shown = pool[0]["in_situ"]["shown"][0]
    assert shown.startswith("ChainMap({") and len(shown) <= 160, shown
    assert Leaf.shown == 0  # (the repr before showed the leaf thousands of times)


def test_a_test_module_imported_afresh_is_rewritten_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check in situ imports the repository's test module afresh for every run (on the
    reference, then for each mutant); pytest keeps its assertion rewriting only in a .pyc file,
    which it does not write under PYTHONDONTWRITEBYTECODE. The support module keeps it in the
    process instead: boolean.py's test module took 1.6 s a run rewritten every time, 0.3 s
    kept (load ~13)."""
    module = tmp_path / "test_kept.py"
    module.write_text("def test_sum():\n    assert 1 + 1 == 2\n")
    from _pytest.assertion import rewrite

    rewritten: list[str] = []
    original = rewrite._rewrite_test

    def counted(fn: Any, config: Any) -> Any:
        rewritten.append(Path(fn).name)
        return original(fn, config)

    monkeypatch.setattr(rewrite, "_rewrite_test", counted)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # (as harness runs are made)
    _support().remember_rewrites()

    def run_afresh() -> int:
        sys.modules.pop("test_kept", None)  # (what _forget_module_of does)
        return int(pytest.main([str(module), "-q", "-p", "no:cacheprovider"]))

    assert [run_afresh() for _ in range(3)] == [0, 0, 0]
    assert rewritten.count("test_kept.py") == 1
    module.write_text("def test_sum():\n    assert 1 + 1 == 3\n")  # a changed file: again
    assert run_afresh() == 1
    assert rewritten.count("test_kept.py") == 2


class Text(str):
    """What tomlkit's `Source` looks like: a string that carries a state of its own (its
    parser's position, and its characters yet to read), far over the size limit."""

    def __new__(cls, text: str, rest: list[Counted]) -> Text:
        made = super().__new__(cls, text)
        made.rest = rest
        return made


def test_a_string_carrying_a_state_too_big_is_not_pickled_again_in_the_same_test(
    tmp_path: Path,
) -> None:
    """A str subclass counts as an immutable value (no identity to keep), so it was never
    remembered as too big: tomlkit's `Source.consume`, called ~12,000 times in its suite with
    the document as `self`, had each call's arguments pickled as far as the limit, only to be
    found too big again — 44 of the 61 CPU seconds of its spec tests under the tracer."""
    box = Text("a = 1", [Counted(i) for i in range(20_000)])
    for test in ("test_one", "test_two"):
        Counted.reduced = 0
        recorder, target = _stepped(tmp_path, f"text_steps_{test}", box)
        # about one pickle as far as the limit per test (200 calls: ~200 times as much)
        assert 0 < Counted.reduced < 15_000
        # its calls still come to the pool, checked in situ: the test's share, then the call
        # after the first with new arcs (n=151), as for any argument no pickle keeps
        chosen = recorder.choose(target["id"])
        assert 151 in {c["in_situ"]["call"] - 1 for c in chosen}
