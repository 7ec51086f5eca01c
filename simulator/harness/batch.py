"""The harness workflow as a batch task: one repository per task, for `run_batch`.

`repo_task(task)` opens a session on `task.payload["repo"]`, makes problems for its targets and
appends them to `task.payload["out"]` (JSONL, one line per problem as soon as it is made); it
returns the counts and distributions that the batch summary and the results store keep.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from simulator.batch import Task, TaskFailure
from simulator.dataset.schema import Problem
from simulator.events import Event
from simulator.harness.env import PythonEnv
from simulator.harness.target import TargetError, find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems, summarize
from simulator.session import open_session
from simulator.workflow import WorkflowFailure


def options_payload(
    options: HarnessOptions, *, model: str | None, api_base: str | None
) -> dict[str, Any]:
    return {
        "generator": options.generator,
        "python": options.env.python,
        "import_roots": list(options.env.import_roots),
        **options.thresholds.settings(),
        "rounds": options.rounds,
        "max_calls": options.max_calls,
        "test_args": options.test_args,
        "derive_runs": options.derive_runs,
        "model": model,
        "api_base": api_base,
    }


def options_from_payload(data: dict[str, Any]) -> HarnessOptions:
    client = None
    if data.get("model"):
        from simulator.agent.config import litellm_client

        client = litellm_client(data["model"], api_base=data.get("api_base"))
    return HarnessOptions(
        generator=data["generator"],
        env=PythonEnv(data["python"], tuple(data.get("import_roots") or ())),
        thresholds=Thresholds(
            min_cov=data["min_cov"],
            min_mutation=data["min_mutation"],
            repeats=data["repeats"],
            max_mutants=data["max_mutants"],
            min_mutants=int(data.get("min_mutants", 10)),
            min_parity=float(data.get("min_parity", 0.75)),
        ),
        rounds=data["rounds"],
        max_calls=data["max_calls"],
        test_args=data.get("test_args") or "",
        client=client,
        derive_runs=int(data.get("derive_runs", 300)),
    )


def repo_task(task: Task) -> dict[str, Any]:
    payload = task.payload
    return asyncio.run(
        run_repo(
            Path(payload["repo"]),
            Path(payload["out"]),
            options_from_payload(payload["options"]),
            selectors=payload.get("selectors"),
            filters=payload.get("filters"),
            backend=payload.get("backend", "local"),
            trajectory=payload.get("trajectory"),
        )
    )


async def run_repo(
    repo: Path,
    out: Path,
    options: HarnessOptions,
    *,
    selectors: list[str] | None = None,
    filters: list[str] | None = None,
    backend: str = "local",
    backend_options: Mapping[str, Any] | None = None,
    trajectory: str | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> dict[str, Any]:
    """Problems for one repository, appended to `out` as they are made; returns the summary."""
    t0 = time.monotonic()
    try:
        targets = find_targets(repo, selectors=selectors, filters=filters)
    except (TargetError, ValueError) as exc:
        raise TaskFailure(str(exc), category="targets") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("")
    session = await open_session(
        repo,
        backend=backend,
        backend_options=backend_options,
        trajectory_path=Path(trajectory) if trajectory else None,
        subscribers=[on_event] if on_event is not None else [],
    )
    problems: list[Problem] = []

    def keep(problem: Problem) -> None:
        problems.append(problem)
        with out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(problem.as_dict(), ensure_ascii=False) + "\n")

    try:
        await make_problems(session, targets, options, on_problem=keep)
    except WorkflowFailure as exc:
        raise TaskFailure(str(exc), category="harness", result=summarize(problems)) from None
    finally:
        await session.close()
    summary = summarize(problems)
    summary["seconds"] = round(time.monotonic() - t0, 3)
    summary["problems"] = str(out)
    summary["trajectory"] = str(session.trajectory_path)
    return summary
