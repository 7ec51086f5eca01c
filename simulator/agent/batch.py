"""Agent runs in batch: one recorded session per task (the Gym task format), through the shared
batch layer (local worker processes or Ray, resumable from the results store).

Each task runs its tests before the agent starts and after it stops, so a result says what the
agent changed, not only that it stopped: `finished` / `budget` / `error` with the tests' counts
on both sides, the pass ratio after, steps, tokens and cost. The trajectory of each task is
written under the batch's trajectory folder as it goes, named by the task's key, so `reposim
fleet` can show every session of a running batch live.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from simulator.agent.config import litellm_client
from simulator.agent.control import ControlError, ControlServer
from simulator.agent.loop import Agent, Budgets, Mode
from simulator.agent.models import ModelConfigError
from simulator.batch.runner import Task, TaskFailure
from simulator.events import Actor
from simulator.gym.task import GymTask
from simulator.testrun import TestRunResult

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def trajectory_name(key: str) -> str:
    """The file a task's trajectory goes to: its key, made safe as one file name."""
    return _UNSAFE.sub("_", key).strip("._")[:120] + ".jsonl"


def agent_tasks(
    tasks: list[GymTask],
    *,
    model: str,
    api_base: str | None,
    budgets: Budgets,
    trajectories: Path,
    backend_options: dict[str, Any] | None = None,
) -> list[Task]:
    """Batch tasks for `agent_task`; keys are the tasks' ids (or repository names), made unique
    by their position where two share one."""
    seen: dict[str, int] = {}
    out = []
    for gym in tasks:
        key = gym.name
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}#{seen[key]}"
        out.append(
            Task(
                key,
                {
                    "task": gym.to_dict(),
                    "model": model,
                    "api_base": api_base,
                    "budgets": asdict(budgets),
                    "trajectory": str(trajectories / trajectory_name(key)),
                    "backend_options": dict(backend_options or {}),
                },
            )
        )
    return out


def agent_task(task: Task) -> dict[str, Any]:
    """One task: a fresh session, tests before, the agent, tests after (a batch TaskFunction)."""
    return asyncio.run(_agent_task(task))


# The batch's forkserver imports these once for the whole batch instead of once per task
# (litellm takes 3-5 s when idle, over a minute at load 20 on two cores: a first version timed
# out importing it in every task). Not imported with this module: collecting the tests, or a
# command that only lists tasks, should not pay for it.
agent_task.preload = ("simulator.agent.litellm_loaded",)  # type: ignore[attr-defined]


def _counts(run: TestRunResult) -> dict[str, Any]:
    counts: dict[str, Any] = dict(run.counts()) if run.structured else {}
    counts["exit_code"] = run.exit_code
    return counts


def _pass_ratio(run: TestRunResult) -> float:
    if not run.structured:
        return 1.0 if run.exit_code == 0 else 0.0
    counted = [t for t in run.tests if t.outcome != "skipped"]
    return sum(t.outcome == "passed" for t in counted) / len(counted) if counted else 0.0


def _keep_earlier(path: Path) -> None:
    """A rerun of a task whose earlier attempt left a trajectory keeps that file beside it."""
    if path.exists():
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(path.stat().st_mtime))
        path.rename(path.with_name(f"{path.stem}.{stamp}-{os.getpid()}{path.suffix}"))


async def _agent_task(task: Task) -> dict[str, Any]:
    from simulator.session import open_session

    payload = task.payload
    gym = GymTask.from_dict(payload["task"])
    budgets = Budgets(**payload.get("budgets") or {})
    # The task's own step limit holds unless the batch asked for fewer.
    budgets.max_steps = min(budgets.max_steps or gym.max_steps, gym.max_steps)
    try:
        client = litellm_client(payload["model"], api_base=payload.get("api_base"))
    except ModelConfigError as exc:
        raise TaskFailure(str(exc), category="model-config", evidence=str(exc)) from None
    trajectory = Path(payload["trajectory"])
    trajectory.parent.mkdir(parents=True, exist_ok=True)
    _keep_earlier(trajectory)
    options: dict[str, Any] = dict(payload.get("backend_options") or {})
    if gym.backend == "docker" and gym.image:
        options["image"] = gym.image
    selector = " ".join(gym.tests) or None
    # A backend that cannot start is retried as the machinery's failure (simulator/batch/workers)
    session = await open_session(
        gym.repo,
        backend=gym.backend,
        backend_options=options,
        trajectory_path=trajectory,
        agent={"model": client.model, "mode": str(Mode.AUTO), "task": task.key},
        test_command=gym.test_command,
    )
    async with session:
        before = await session.run_tests(selector, actor=Actor.SYSTEM)
        agent = Agent(session, client, mode=Mode.AUTO, budgets=budgets)
        # The fleet view's take-over reaches the session through this while the agent runs.
        control = ControlServer(session, agent, trajectory)
        try:
            await control.start()
        except (ControlError, OSError) as exc:
            session.note(
                f"Take-over is off for this session: {exc}", actor=Actor.SYSTEM, mark="control"
            )
        try:
            run = await agent.run(gym.instruction)
        finally:
            await control.close()
        after = await session.run_tests(selector, actor=Actor.SYSTEM)
    usage = run.usage
    result: dict[str, Any] = {
        "outcome": "finished" if run.reason == "finished" else run.reason.split(":")[0],
        "reason": run.reason,
        "summary": run.summary,
        "steps": usage.steps,
        "tokens": usage.tokens,
        "cost": usage.cost if usage.cost_known else None,
        "seconds": round(usage.elapsed, 3),
        "tests_before": _counts(before),
        "tests_after": _counts(after),
        "reward": round(_pass_ratio(after), 6),
        "trajectory": str(trajectory),
    }
    if run.reason != "finished":
        category = "budget" if run.reason.startswith("budget") else "agent-error"
        raise TaskFailure(
            f"{task.key}: the agent stopped ({run.reason})",
            category=category,
            evidence=run.summary or run.reason,
            result=result,
        )
    return result
