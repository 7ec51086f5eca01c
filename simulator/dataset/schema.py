"""The problem record: one target function turned into a code-generation problem.

Serialised as one JSON object per line, `reposim.problem/1`, documented in
docs/dataset.md. A problem carries where it comes from (repository, commit, target), what a
model sees (context, signature, docstring), how it is checked (the harness and its validation
figures) and where a person's review of it stands (curation), so that curation travels with
the data and an export re-imports to the same problems.
"""

from __future__ import annotations

import time
from dataclasses import Field, asdict, dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Self

from simulator import __version__

SCHEMA = "reposim.problem/1"


class CurationState(StrEnum):
    NONE = "none"  # a target, no harness yet
    GENERATED = "generated"  # a harness exists, not (yet) valid
    VALID = "valid"  # the harness passed validation's thresholds
    ACCEPTED = "accepted"  # a person accepted it as benchmark data
    REJECTED = "rejected"  # a person (or the validator) turned it down, with reasons
    EDITED = "edited"  # a person changed the harness; it needs validating again


@dataclass
class CurationEntry:
    state: CurationState
    by: str  # "reposim" or a person's name
    reason: str = ""
    at: float = field(default_factory=time.time)


@dataclass
class Curation:
    state: CurationState = CurationState.NONE
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    history: list[CurationEntry] = field(default_factory=list)
    # surviving mutants a person judged equivalent to the target (each a mutant summary: id,
    # operator, line, description, diff); the mutation score leaves them out
    equivalent: list[dict[str, Any]] = field(default_factory=list)

    def mark(self, state: CurationState, *, by: str = "reposim", reason: str = "") -> None:
        """Move to `state`. `reasons` say why the problem is in its current state, so an
        earlier state's reasons (a coverage shortfall since fixed) leave them; the history
        keeps every change with its reason."""
        self.state = state
        self.reasons = [reason] if reason else []
        self.history.append(CurationEntry(state, by, reason))

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": str(self.state),
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "history": [
                {"state": str(e.state), "by": e.by, "reason": e.reason, "at": e.at}
                for e in self.history
            ],
            "equivalent": [dict(m) for m in self.equivalent],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Curation:
        return cls(
            CurationState(data.get("state", "none")),
            list(data.get("reasons") or []),
            list(data.get("notes") or []),
            [
                CurationEntry(
                    CurationState(e["state"]), str(e["by"]), str(e.get("reason", "")), e["at"]
                )
                for e in data.get("history") or []
            ],
            [dict(m) for m in data.get("equivalent") or []],
        )


class _PlainRecord:
    """A dataclass whose fields are plain JSON values: written as they are, read back keeping
    only the fields it knows (a newer writer's extra keys are left out)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Validation(_PlainRecord):
    """What validating a harness on the reference found."""

    runs: int = 0
    tests: int = 0
    passed: bool = False  # every test passed in every run
    failing: list[str] = field(default_factory=list)  # failed in every run
    flaky: list[str] = field(default_factory=list)  # passed in some runs only
    coverage: dict[str, Any] | None = None  # BranchCoverage.as_dict()
    mutation: dict[str, Any] | None = None  # {"total", "killed", "score", "survivors"}
    verdict: str = "invalid"  # valid | invalid
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""  # the end of the first run's output when something failed
    # the harness was edited after these figures were taken: they describe the text before the
    # edit until it is validated again (kept so a person still sees what the edit started from)
    stale: bool = False

    @property
    def coverage_rate(self) -> float | None:
        return float(self.coverage["rate"]) if self.coverage else None

    @property
    def mutation_score(self) -> float | None:
        if not self.mutation or not self.mutation.get("total"):
            return None
        if self.mutation.get("score") is None:  # the mutants could not run (its "error")
            return None
        return float(self.mutation["score"])


@dataclass
class Harness(_PlainRecord):
    generator: str  # traced | model | edited
    text: str
    format: str = "reposim.harness/1"
    path: str = ""  # where it lives in a workspace
    cases: int = 0  # recorded calls (traced) or test functions
    rounds: int = 0  # generate-execute rounds it took (model)
    notes: list[str] = field(default_factory=list)  # what was dropped and why
    # the repository's tests that call the target (traced): suite parity runs them on mutants
    suite_tests: list[str] = field(default_factory=list)


@dataclass
class Problem:
    id: str  # "<repo name>@<short commit>:<target id>"
    repo: dict[str, Any]  # {"name", "source", "commit"}
    target: dict[str, Any]  # Target.as_dict()
    module: str  # the dotted module the target is imported from
    harness: Harness | None = None
    validation: Validation | None = None
    curation: Curation = field(default_factory=Curation)
    created: float = field(default_factory=time.time)
    reposim_version: str = __version__

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "id": self.id,
            "repo": self.repo,
            "target": self.target,
            "module": self.module,
            "harness": self.harness.as_dict() if self.harness else None,
            "validation": self.validation.as_dict() if self.validation else None,
            "curation": self.curation.as_dict(),
            "created": self.created,
            "reposim_version": self.reposim_version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} record (schema {data.get('schema')!r})")
        harness = data.get("harness")
        validation = data.get("validation")
        return cls(
            id=str(data["id"]),
            repo=dict(data["repo"]),
            target=dict(data["target"]),
            module=str(data.get("module") or ""),
            harness=Harness.from_dict(harness) if harness else None,
            validation=Validation.from_dict(validation) if validation else None,
            curation=Curation.from_dict(data.get("curation") or {}),
            created=float(data.get("created") or 0.0),
            reposim_version=str(data.get("reposim_version") or ""),
        )
