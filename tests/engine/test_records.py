"""Records (`@record`) compare and print as the dataclasses' generated methods do: the Record
base writes `__eq__` and `__repr__` once instead of each class compiling its own (issue 29:
that was 40% of what importing `simulator.events` cost the UI's cold start)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from simulator.events import PAYLOAD_TYPES, ExecResultPayload, TestResultPayload
from simulator.testrun import TestOutcome
from simulator.trajectory_header import RepoInfo
from simulator.wire import Record


def _as_dataclass(cls: type[Record]) -> type[Any]:
    """The same fields under the stdlib's generated `__eq__` / `__repr__` (same qualname)."""
    twin = type(cls.__name__, (cls,), {"__qualname__": cls.__qualname__})
    return dataclasses.dataclass(twin)


CASES: list[tuple[type[Record], dict[str, Any]]] = [
    (ExecResultPayload, {"exit_code": 0, "output": "ok\n", "duration": 0.5}),
    (ExecResultPayload, {"exit_code": None, "output": "", "duration": float("nan"), "cwd": "/"}),
    (
        TestResultPayload,
        {
            "command": "pytest",
            "exit_code": 1,
            "duration": 2.0,
            "structured": True,
            "timed_out": False,
            "counts": {"passed": 1},
            "tests": [TestOutcome("t::a", "passed", 0.1)],
            "output": "",
        },
    ),
    (RepoInfo, {}),
    (RepoInfo, {"source": "/r", "git": True}),
]


@pytest.mark.parametrize(("cls", "values"), CASES)
def test_a_record_prints_and_compares_as_its_dataclass_would(
    cls: type[Record], values: dict[str, Any]
) -> None:
    ours, theirs = cls(**values), _as_dataclass(cls)(**values)
    assert repr(ours) == repr(theirs)
    assert ours == cls(**values)  # with a NaN field too: the same object, as in a tuple
    first = dataclasses.fields(cls)[0].name  # type: ignore[arg-type]
    changed = dataclasses.replace(ours, **{first: "changed"})  # type: ignore[type-var]
    assert ours != changed
    assert (ours == theirs) is False  # another class, as a dataclass compares
    with pytest.raises(TypeError):
        hash(ours)  # mutable, compared by value: unhashable, as a dataclass with eq


def test_every_payload_type_is_a_record_with_the_shared_methods() -> None:
    for cls in set(PAYLOAD_TYPES.values()):
        assert cls.__eq__ is Record.__eq__ and cls.__repr__ is Record.__repr__, cls
