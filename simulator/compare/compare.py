"""Runs of one task compared step by step: which steps line up, where they first part, and what
differs at the end (steps only some runs took, edits that differ, tests whose outcome differs).

Two or more runs are aligned progressively: the first run's steps are the first rows; each
further run is aligned (simulator.compare.align) against the rows so far by their action keys,
its unmatched steps becoming rows of their own where they fall. A row is `same` when every run
has the step and its outcome digest, `differs` when every run took the action but an outcome or
an edit's result differs, and `partial` when only some runs took it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from simulator.compare.align import align
from simulator.compare.runs import Run, Step, read_run


class RowState(StrEnum):
    SAME = "same"
    DIFFERS = "differs"
    PARTIAL = "partial"


@dataclass
class Row:
    """One aligned step: each run's step there, or None where that run took no such step."""

    cells: list[Step | None]
    state: RowState = RowState.PARTIAL

    @property
    def key(self) -> str:
        return next(step.key for step in self.cells if step is not None)


def _state(row: Row, runs: list[Run]) -> RowState:
    if any(step is None for step in row.cells):
        return RowState.PARTIAL
    steps = [step for step in row.cells if step is not None]
    if len({step.digest for step in steps}) == 1:
        return RowState.SAME
    outcomes = {step.outcome(run.normalise) for step, run in zip(steps, runs, strict=True)}
    return RowState.SAME if len(outcomes) == 1 else RowState.DIFFERS


@dataclass
class TestDivergence:
    test: str
    outcomes: list[str | None]
    """Each run's outcome in its last test run (None: not run)."""


@dataclass
class Comparison:
    runs: list[Run]
    rows: list[Row]
    first_divergence: int | None
    """The index of the first row that is not `same` (None: the runs agree throughout)."""
    only_in: list[list[Step]] = field(default_factory=list)
    """For each run, the steps no other run took."""
    differing: list[Row] = field(default_factory=list)
    """Rows where every run took the action with a different outcome."""
    files: dict[str, list[str | None]] = field(default_factory=dict)
    """Files whose final content differs between runs: path -> each run's sha256 (None:
    untouched or deleted)."""
    tests: list[TestDivergence] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return self.first_divergence is None and not self.files and not self.tests

    def as_dict(self) -> dict[str, Any]:
        """The alignment and summary as JSON (`--json` of compare and of replay A B)."""
        return {
            "runs": [{"file": str(run.path), "steps": len(run.steps)} for run in self.runs],
            "first_divergence": self.first_divergence,
            "rows": [
                {
                    "state": str(row.state),
                    "steps": [
                        None
                        if step is None
                        else {
                            "index": step.index,
                            "seq": step.seq,
                            "action": step.text,
                            "outcome": step.observation,
                        }
                        for step in row.cells
                    ],
                }
                for row in self.rows
            ],
            "only_in": [[step.index for step in steps] for steps in self.only_in],
            "files": self.files,
            "tests": {t.test: t.outcomes for t in self.tests},
        }


def align_runs(runs: list[Run]) -> list[Row]:
    if not runs:
        return []
    rows = [Row([step]) for step in runs[0].steps]
    for column, run in enumerate(runs[1:], start=1):
        pairs = align([row.key for row in rows], [step.key for step in run.steps])
        merged: list[Row] = []
        for ri, si in pairs:
            if ri is not None:
                row = rows[ri]
                row.cells.append(run.steps[si] if si is not None else None)
                merged.append(row)
            else:
                assert si is not None
                merged.append(Row([None] * column + [run.steps[si]]))
        rows = merged
    return rows


def compare_runs(runs: list[Run]) -> Comparison:
    rows = align_runs(runs)
    for row in rows:
        row.state = _state(row, runs)
    first = next((i for i, row in enumerate(rows) if row.state != RowState.SAME), None)
    only_in: list[list[Step]] = [[] for _ in runs]
    for row in rows:
        present = [i for i, step in enumerate(row.cells) if step is not None]
        if len(present) == 1:
            step = row.cells[present[0]]
            assert step is not None
            only_in[present[0]].append(step)
    finals = [run.files_after(len(run.steps) - 1) for run in runs]
    files = {
        path: [final.get(path) for final in finals]
        for path in sorted({p for final in finals for p in final})
        if len({final.get(path) for final in finals}) > 1
    }
    last_tests = [run.last_tests() for run in runs]
    tests = [
        TestDivergence(test, [outcomes.get(test) for outcomes in last_tests])
        for test in sorted({t for outcomes in last_tests for t in outcomes})
        if len({outcomes.get(test) for outcomes in last_tests}) > 1
    ]
    return Comparison(
        runs=runs,
        rows=rows,
        first_divergence=first,
        only_in=only_in,
        differing=[row for row in rows if row.state == RowState.DIFFERS],
        files=files,
        tests=tests,
    )


def compare_files(paths: list[Path | str]) -> Comparison:
    """Read each trajectory (any format RepoSim reads) and compare them; TrajectoryError (one
    sentence) for a file that cannot be read."""
    return compare_runs([read_run(path) for path in paths])
