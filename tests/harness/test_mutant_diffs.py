"""Each mutant carries its change as a short unified diff, and a problem record keeps the
survivors' diffs (not their mutated files); records made before diffs were kept still load."""

from __future__ import annotations

import difflib
import json

from simulator.dataset.schema import Problem, Validation
from simulator.harness.mutate import mutants
from tests.harness.conftest import CALC

WRAPPED = '''\
def total(values, start):
    """The sum, from `start`."""
    return (
        start
        + sum(values)
    )
'''


def _apply(source: str, diff: str) -> str:
    """Apply a one-hunk unified diff (as `patch` would) and return the new text."""
    lines = source.splitlines()
    body = diff.splitlines()[3:]
    header = diff.splitlines()[2]
    start = int(header.split()[1][1:].split(",")[0])
    old = [line[1:] for line in body if line[:1] in (" ", "-")]
    new = [line[1:] for line in body if line[:1] in (" ", "+")]
    at = start - 1 if old else start
    assert lines[at : at + len(old)] == old, "the diff's context does not match the file"
    return "\n".join(lines[:at] + new + lines[at + len(old) :]) + "\n"


def test_every_mutant_diff_is_the_change_it_makes() -> None:
    found = mutants(CALC, 4, "clamp", path="shapes/calc.py")
    assert len(found) == 10
    for mutant in found:
        # one-line changes: the same diff difflib makes of the whole files, one line of context
        expected = difflib.unified_diff(
            CALC.splitlines(),
            mutant.source.splitlines(),
            "a/shapes/calc.py",
            "b/shapes/calc.py",
            n=1,
            lineterm="",
        )
        assert mutant.diff == "\n".join(expected) + "\n", mutant.description
        assert _apply(CALC, mutant.diff) == mutant.source
    boundary = next(m for m in found if m.description == "line 6: `>` -> `>=`")
    assert boundary.diff == (
        "--- a/shapes/calc.py\n"
        "+++ b/shapes/calc.py\n"
        "@@ -5,3 +5,3 @@\n"
        '     """Clamp `value` into [low, high]."""\n'
        "-    if low > high:\n"
        "+    if low >= high:\n"
        '         raise ValueError("low must not exceed high")\n'
    )


def test_a_mutant_that_joins_lines_has_a_diff_that_rebuilds_it() -> None:
    found = mutants(WRAPPED, 1, "total", path="sums.py")
    [returns_none] = [m for m in found if m.operator == "return"]
    assert returns_none.description == "line 3: returns None"
    assert returns_none.source.splitlines()[2:5] == ["    return (", "        None", "    )"]
    assert _apply(WRAPPED, returns_none.diff) == returns_none.source
    assert "-        + sum(values)" in returns_none.diff.splitlines()


def test_survivor_diffs_travel_in_the_record_and_old_records_still_load() -> None:
    [mutant, *_] = mutants(CALC, 4, "clamp", path="shapes/calc.py")
    survivor = mutant.summary()
    assert "source" not in survivor and survivor["diff"] == mutant.diff
    record = {
        "schema": "reposim.problem/1",
        "id": "calc@abc:shapes/calc.py::clamp",
        "repo": {"name": "calc"},
        "target": {"id": "shapes/calc.py::clamp"},
        "module": "shapes.calc",
        "validation": Validation(
            mutation={"total": 1, "killed": 0, "score": 0.0, "survivors": [survivor]}
        ).as_dict(),
    }
    again = Problem.from_dict(json.loads(json.dumps(Problem.from_dict(record).as_dict())))
    assert again.validation is not None and again.validation.mutation is not None
    assert again.validation.mutation["survivors"][0]["diff"] == mutant.diff

    old = json.loads(json.dumps(record))
    del old["validation"]["mutation"]["survivors"][0]["diff"]
    loaded = Problem.from_dict(old)
    assert loaded.validation is not None and loaded.validation.mutation is not None
    assert "diff" not in loaded.validation.mutation["survivors"][0]
