"""Re-execute every trajectory of a folder through the batch layer: `reposim replay DIR --verify`.

Each trajectory is one task: its actions run again from its recorded start (on this machine for
trajectories this user recorded here, in a container for any other, as for one file), and the
task's record says how many steps matched, differed or were skipped, and the first difference.
A trajectory that differs is a failure of category "differs"; one whose start cannot be rebuilt,
"cannot-start"; one that cannot be read, "unreadable".
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from simulator.batch import Task, TaskFailure
from simulator.replay.normalise import Normaliser
from simulator.replay.reexec import StartError, choose_backend, reexecute
from simulator.trajectory import TrajectoryError, open_trajectory


def trajectories_in(folder: Path) -> list[Path]:
    """The trajectory files of a folder and its subfolders (blob folders left out), sorted."""
    return sorted(
        path
        for path in folder.rglob("*.jsonl")
        if path.is_file() and not any(part.endswith(".blobs") for part in path.parts)
    )


def verify_task(path: Path, options: dict[str, Any]) -> Task:
    """A task for `verify_trajectory`. options: backend (None: chosen per file), image, repo,
    current, strict, ignore (patterns), keep (rule names), out_dir (where the re-executions' own
    trajectories go)."""
    return Task(str(path), {"file": str(path), **options})


def verify_trajectory(task: Task) -> dict[str, Any]:
    payload = task.payload
    path = Path(payload["file"])
    try:
        with open_trajectory(path) as source:
            backend = choose_backend(source, payload.get("backend"))
    except TrajectoryError as exc:
        raise TaskFailure(str(exc), category="unreadable") from None
    out_dir = payload.get("out_dir")
    out = Path(out_dir) / f"verify-{path.stem}.jsonl" if out_dir else None
    repo = payload.get("repo")
    try:
        report, _ = asyncio.run(
            reexecute(
                path,
                backend_kind=backend,
                normaliser=_normaliser(payload),
                repo=Path(repo) if repo else None,
                current=bool(payload.get("current")),
                image=payload.get("image"),
                trajectory_path=out,
            )
        )
    except StartError as exc:
        raise TaskFailure(str(exc), category="cannot-start") from None
    except TrajectoryError as exc:
        raise TaskFailure(str(exc), category="unreadable") from None
    result = {**report.as_dict(), "backend": backend}
    if report.trajectory:
        result["trajectory"] = str(report.trajectory)
    if report.problem or report.exit_code != 0:
        raise TaskFailure(
            report.problem or report.summary(),
            category="differs" if report.first_difference is not None else "incomplete",
            evidence=report.summary(),
            result=result,
        )
    return result


def _normaliser(payload: dict[str, Any]) -> Normaliser:
    strict = bool(payload.get("strict"))
    base = Normaliser(rules=()) if strict else Normaliser()
    keep = tuple(payload.get("keep") or ())
    if keep and not strict:
        base = base.without(keep)
    return base.with_patterns(tuple(payload.get("ignore") or ()))
