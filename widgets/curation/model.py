"""The curation table's rows and its filter, apart from any widget (the bench times these).

A filter is words separated by spaces, all of which must hold:
`valid` (or any curation state), `cov<80` / `cov>=50` / `mut<60` (percent), `flaky`, `noted`
(has a note), and any other word matches the function or file name (case-insensitive).
`|` (or the word `or`) separates alternatives, any of which may hold:
`valid cov<80 | flaky` is (valid and cov<80) or flaky.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from simulator.dataset.schema import CurationState, Problem
from simulator.harness.format import readable_share
from simulator.harness.workflow import reason_of

STATES = {str(s) for s in CurationState}
_COMPARE = re.compile(r"^(cov|mut)(<=|>=|<|>|=)(\d+(?:\.\d+)?)%?$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "=": operator.eq,
}


@dataclass
class Row:
    """What the table shows of one problem (kept beside it so filters never touch the record)."""

    function: str
    file: str
    state: str
    coverage: float | None  # 0..1
    mutation: float | None  # 0..1
    flaky: bool
    last_run: float | None  # seconds the last validation took
    line: int = 0  # where the target starts in its file (the file sort's second key)
    parity: float | None = None  # of the mutants the repository's tests kill, the harness's share
    readable: float | None = None  # share of the harness's cases with no pickle
    why: str = ""  # the outcome: valid, or the kind of its first reason (reason_of)
    notes: tuple[str, ...] = ()  # a person's notes, shown as ✎ beside the name
    stale: bool = False  # the figures are from before an edit of the harness

    @classmethod
    def of(cls, problem: Problem) -> Row:
        target = problem.target
        v = problem.validation
        coverage = v.coverage_rate if v else None
        mutation = v.mutation_score if v else None
        return cls(
            str(target.get("qualname") or target.get("name") or problem.id),
            str(target.get("path") or ""),
            str(problem.curation.state),
            coverage,
            mutation,
            bool(v and v.flaky),
            v.seconds if v and v.runs else None,
            int(target.get("start_line") or target.get("def_line") or 0),
            ((v.mutation or {}).get("suite") or {}).get("parity") if v else None,
            _readable(problem),
            reason_of(problem),
            tuple(problem.curation.notes),
            bool(v and v.stale),
        )

    def cells(self) -> tuple[str, ...]:
        return (
            self.function,
            self.file,
            self.state,
            _percent(self.coverage),
            _percent(self.mutation),
            "flaky" if self.flaky else "",
            f"{self.last_run:.1f}s" if self.last_run is not None else "",
            _percent(self.parity),
            _percent(self.readable),
            self.why,
        )


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.0f}%"


def _readable(problem: Problem) -> float | None:
    if problem.harness is None or problem.harness.generator != "traced":
        return None
    readable, cases = readable_share(problem.harness.text)
    return readable / cases if cases else None


COLUMNS = (
    *("function", "file", "state", "coverage", "mutation", "flaky", "last run"),
    *("parity", "no pickle", "why"),
)
SORT_KEYS: dict[str, Callable[[Row], object]] = {
    "function": lambda r: r.function,
    "file": lambda r: (r.file, r.line, r.function),
    "state": lambda r: r.state,
    "coverage": lambda r: -1.0 if r.coverage is None else r.coverage,
    "mutation": lambda r: -1.0 if r.mutation is None else r.mutation,
}


def default_export(folder: Path, repository: str) -> Path:
    """Where a repository's curation is saved when no file was named: `<repo>-problems.jsonl`
    in `folder`, or the first `<repo>-problems-N.jsonl` not taken, since decisions are saved
    as they are made and must never replace an earlier session's file unasked."""
    path = folder / f"{repository}-problems.jsonl"
    number = 1
    while path.exists():
        number += 1
        path = folder / f"{repository}-problems-{number}.jsonl"
    return path


class FilterError(ValueError):
    """A filter word that cannot be understood; the message is one clear sentence."""


def compile_filter(query: str) -> Callable[[Row], bool]:
    words = query.lower().replace("|", " | ").split()
    groups: list[list[str]] = [[]]
    for word in words:
        if word in ("|", "or"):
            groups.append([])
        else:
            groups[-1].append(word)
    alternatives = [_all_of(group) for group in groups if group]
    if not alternatives:
        return lambda r: True
    return lambda r: any(holds(r) for holds in alternatives)


def _all_of(words: list[str]) -> Callable[[Row], bool]:
    tests: list[Callable[[Row], bool]] = []
    for word in words:
        if word in STATES:
            tests.append(lambda r, w=word: r.state == w)  # type: ignore[misc]
        elif word == "flaky":
            tests.append(lambda r: r.flaky)
        elif word == "noted":
            tests.append(lambda r: bool(r.notes))
        elif match := _COMPARE.match(word):
            field, op, number = match.groups()
            compare, limit = _OPS[op], float(number) / 100

            def test(
                r: Row,
                f: str = field,
                c: Callable[[float, float], bool] = compare,
                n: float = limit,
            ) -> bool:
                value = r.coverage if f == "cov" else r.mutation
                return value is not None and c(round(value, 4), n)

            tests.append(test)
        elif word[:3] in ("cov", "mut") and any(ch in word for ch in "<>="):
            raise FilterError(f"{word!r} is not a filter: write e.g. cov<80 or mut>=60.")
        else:
            tests.append(lambda r, w=word: w in r.function.lower() or w in r.file.lower())  # type: ignore[misc]
    return lambda r: all(t(r) for t in tests)


def select(rows: list[Row], query: str, sort: str = "file") -> list[int]:
    """Indices of the rows that pass `query`, in `sort` order."""
    keep = compile_filter(query)
    chosen = [i for i, r in enumerate(rows) if keep(r)]
    key = SORT_KEYS.get(sort, SORT_KEYS["file"])
    chosen.sort(key=lambda i: key(rows[i]))  # type: ignore[arg-type,return-value]
    return chosen
