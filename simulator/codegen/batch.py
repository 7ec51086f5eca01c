"""Codegen over many problems through the batch layer: one task a problem, each its own session,
so a rerun skips the problems already scored and a hung sample cannot stall the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from simulator.batch import Task, TaskFailure
from simulator.dataset.schema import Problem
from simulator.workflow import WorkflowFailure


def codegen_task(problem: Problem, options: dict[str, Any]) -> Task:
    """A task for `run_codegen_task`. `options`: model, api_base, n, ks, debug_rounds, python,
    repo (overrides the problem's source), backend, backend_options, in_place, trajectory_dir."""
    return Task(problem.id, {"problem": problem.as_dict(), **options})


def run_codegen_task(task: Task) -> dict[str, Any]:
    from simulator.agent import ModelConfigError, litellm_client
    from simulator.codegen.run import codegen
    from simulator.harness.env import DEFAULT_PYTHON, PythonEnv
    from simulator.session import open_session

    payload = task.payload
    problem = Problem.from_dict(payload["problem"])
    try:
        client = litellm_client(payload.get("model"), api_base=payload.get("api_base"))
    except ModelConfigError as exc:
        raise TaskFailure(str(exc), category="model-config") from None
    repo = Path(payload.get("repo") or problem.repo["source"]).expanduser()
    if not repo.is_dir():
        raise TaskFailure(f"the repository {repo} is not a directory.", category="missing")
    trajectory_dir = payload.get("trajectory_dir")
    trajectory = (
        Path(trajectory_dir) / f"codegen-{_safe(problem.id)}.jsonl" if trajectory_dir else None
    )

    async def run() -> dict[str, Any]:
        session = await open_session(
            repo,
            backend=payload.get("backend", "local"),
            backend_options=payload.get("backend_options") or {},
            in_place=bool(payload.get("in_place")),
            trajectory_path=trajectory,
        )
        try:
            result = await codegen(
                session,
                problem,
                client,
                n=int(payload.get("n", 1)),
                ks=list(payload.get("ks") or [1]),
                debug_rounds=int(payload.get("debug_rounds", 0)),
                env=PythonEnv(payload.get("python") or DEFAULT_PYTHON),
            )
        except WorkflowFailure as exc:
            raise TaskFailure(str(exc), category="workflow") from None
        finally:
            await session.close()
        return {**result.as_dict(), "trajectory": str(session.trajectory_path)}

    return asyncio.run(run())


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120]
