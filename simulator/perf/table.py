"""The published table of speed-ups, as Markdown and JSON, and problems for the dataset export.

| Repo | Target API | Commit A | Commit B | Time A (s) | Time B (s) | Speedup | Opt % (std) |
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from simulator.perf.compare import CompareResult
from simulator.perf.stats import Verdict

HEADER = (
    "Repo",
    "Target API",
    "Commit A",
    "Commit B",
    "Time A (s)",
    "Time B (s)",
    "Speedup",
    "Opt % (std)",
)
PROBLEM_SCHEMA = "reposim.perf-problem/1"


@dataclass(frozen=True)
class Row:
    repo: str
    target: str
    commit_a: str
    commit_b: str
    time_a: float
    time_b: float
    speedup: float
    ci_low: float
    ci_high: float
    significant: bool
    opt_pct: float
    opt_pct_std: float
    noisy: bool
    # the call group the row's figures are of (a test's calls timed alone, or them on scaled
    # inputs), when not all the calls together; the target cell names it too
    group: str | None = None
    scaled: bool = False

    @classmethod
    def of(
        cls,
        result: CompareResult,
        *,
        label_a: str | None = None,
        label_b: str | None = None,
        group: dict[str, Any] | None = None,
    ) -> Row:
        verdict = Verdict.from_dict(group["verdict"]) if group else result.verdict
        target = result.target
        if group:
            how = "scaled inputs of " if group.get("scale") else "the calls of "
            target += f" [{how}{group['label'].removesuffix(', inputs scaled')}]"
        return cls(
            repo=Path(result.repo).name,
            target=target,
            commit_a=label_a or _label(result.rev_a, result.commit_a),
            commit_b=label_b or _label(result.rev_b, result.commit_b),
            time_a=group["time_a"] if group else result.a.mean,
            time_b=group["time_b"] if group else result.b.mean,
            speedup=verdict.speedup,
            ci_low=verdict.ci_low,
            ci_high=verdict.ci_high,
            significant=verdict.significant,
            opt_pct=verdict.opt_pct,
            opt_pct_std=verdict.opt_pct_std,
            noisy=result.noisy,
            group=group["label"] if group else None,
            scaled=bool(group and group.get("scale")),
        )

    def cells(self) -> tuple[str, ...]:
        return (
            self.repo,
            self.target,
            self.commit_a,
            self.commit_b,
            _time(self.time_a),
            _time(self.time_b),
            f"{self.speedup:.3f}",
            f"{self.opt_pct:.2f} ({self.opt_pct_std:.2f})",
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _label(rev: str, commit: str) -> str:
    """A revision as the table shows it: the name given, or a short hash for a full one."""
    if commit.startswith(rev) or rev == commit:
        return commit[:8]
    return rev


def _time(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds >= 1 else f"{seconds:.4g}"


def markdown(rows: Iterable[Row]) -> str:
    lines = [
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def json_table(rows: Iterable[Row]) -> str:
    return json.dumps([row.to_dict() for row in rows], indent=2) + "\n"


def problem(
    result: CompareResult,
    *,
    subject: str = "",
    reverted_by: dict[str, str] | None = None,
    group: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A dataset problem: make the target as fast as B starting from A, with the harness."""
    harness_path = result.harness.get("path")
    harness = Path(harness_path).read_text() if harness_path else None
    return {
        "schema": PROBLEM_SCHEMA,
        "id": f"{Path(result.repo).name}@{result.commit_b[:12]}:{result.target}",
        "kind": "perf",
        "repo": result.repo,
        "target": result.target,
        "target_kind": result.kind,
        "base_commit": result.commit_a,
        "reference_commit": result.commit_b,
        "subject": subject,
        "reverted_by": reverted_by,
        "task": (
            f"Make {result.target} faster without changing its behaviour. The reference change "
            f"reached a speed-up of {result.verdict.speedup:.2f}x on the harness."
        ),
        "harness": harness,
        "harness_source": {k: v for k, v in result.harness.items() if k != "path"},
        "command": result.target if result.kind == "command" else None,
        "reference": {
            "time_a": result.a.mean,
            "time_b": result.b.mean,
            "speedup": result.verdict.speedup,
            "ci": [result.verdict.ci_low, result.verdict.ci_high],
            "confidence": result.verdict.confidence,
            "significant": result.verdict.significant,
            # kept on this call group timed alone (its inputs scaled when `scale` is set)
            "group": group,
        },
        "environment": result.environment,
        "noise": result.noise,
    }


def write_outputs(
    out: Path, rows: list[Row], problems: list[dict[str, Any]] | None = None
) -> dict[str, Path]:
    """table.md, table.json and (when given) problems.jsonl in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "table.md", "json": out / "table.json"}
    paths["markdown"].write_text(markdown(rows))
    paths["json"].write_text(json_table(rows))
    if problems is not None:
        paths["problems"] = out / "problems.jsonl"
        paths["problems"].write_text("".join(json.dumps(p) + "\n" for p in problems))
    return paths
