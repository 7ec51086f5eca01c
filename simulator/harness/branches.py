"""Branch coverage of one function, from coverage.py's arcs.

coverage.py reports branches per file; a research pipeline that restricted its report to a
function by line range inherited the file's exclusions, so a `# pragma: no cover` on a class
line excluded every method in it and each reported 100%. Here the possible arcs come from
coverage.py's own parser run on the file text with *no* exclusion rules at all, the executed
arcs from the data file of the run, and both are restricted to the target's lines (decorators
excluded, nested functions included). A branch is an arc out of a line with more than one
possible exit; the figure is executed branch arcs over possible ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coverage import CoverageData
from coverage.parser import PythonParser

Arc = tuple[int, int]


@dataclass(frozen=True)
class BranchCoverage:
    total: int  # possible branch arcs in the function
    covered: int
    lines_total: int  # statements in the function
    lines_covered: int
    missing: list[Arc] = field(default_factory=list)  # branch arcs never taken
    # per line, for a coverage gutter: the function's statements, those that never ran, and
    # the branch lines that ran but did not take every exit
    statements: list[int] = field(default_factory=list)
    missed_lines: list[int] = field(default_factory=list)
    partial_lines: list[int] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Covered branch arcs over possible ones; a function without branches counts its
        statements instead (all run: 1.0)."""
        if self.total:
            return self.covered / self.total
        return self.lines_covered / self.lines_total if self.lines_total else 0.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["missing"] = [list(arc) for arc in self.missing]
        data["rate"] = round(self.rate, 4)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BranchCoverage:
        return cls(
            int(data["total"]),
            int(data["covered"]),
            int(data["lines_total"]),
            int(data["lines_covered"]),
            [(int(a), int(b)) for a, b in data.get("missing") or []],
            [int(n) for n in data.get("statements") or []],
            [int(n) for n in data.get("missed_lines") or []],
            [int(n) for n in data.get("partial_lines") or []],
        )

    def line_marks(self) -> dict[int, str]:
        """Line number -> "covered" | "partial" | "missed" for every statement measured."""
        missed = set(self.missed_lines)
        partial = set(self.partial_lines)
        return {
            line: "missed" if line in missed else "partial" if line in partial else "covered"
            for line in self.statements
        }


def function_branches(
    source: str, first_line: int, last_line: int, executed: Iterable[Arc]
) -> BranchCoverage:
    """Branch coverage of the function whose `def` is on `first_line` and which ends on
    `last_line`, given the executed arcs."""
    parser = PythonParser(text=source, exclude=None)
    parser.parse_source()
    inside = range(first_line, last_line + 1)
    possible = {arc for arc in parser.arcs() if arc[0] in inside}
    exits = parser.exit_counts()
    branch_lines = {line for line, count in exits.items() if count > 1 and line in inside}
    ran = parser.translate_arcs(executed)
    branch_arcs = {arc for arc in possible if arc[0] in branch_lines}
    taken = branch_arcs & ran
    # the def line runs when the module (or class) is executed, not when the function is called
    statements = {line for line in parser.statements if line in inside and line != first_line}
    ran_lines = {a for a, _ in ran if a > 0} | {b for _, b in ran if b > 0}
    missed_lines = statements - ran_lines
    partial_lines = {a for a, _ in branch_arcs - taken if a in ran_lines}
    return BranchCoverage(
        total=len(branch_arcs),
        covered=len(taken),
        lines_total=len(statements),
        lines_covered=len(statements & ran_lines),
        missing=sorted(branch_arcs - taken),
        statements=sorted(statements),
        missed_lines=sorted(missed_lines),
        partial_lines=sorted(partial_lines),
    )


def executed_arcs(data_file: Path, path_suffix: str) -> set[Arc]:
    """The arcs a coverage.py data file recorded for the file whose path ends with
    `path_suffix` (data recorded in a container names files by their container paths)."""
    data = CoverageData(basename=str(data_file))
    data.read()
    suffix = "/" + path_suffix.lstrip("/")
    arcs: set[Arc] = set()
    for name in data.measured_files():
        if name.replace("\\", "/").endswith(suffix):
            arcs |= set(data.arcs(name) or ())
    return arcs
