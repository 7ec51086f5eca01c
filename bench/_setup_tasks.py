"""The naive reference of bench/setup_corpus.py as a batch task (importable by the workers).

Naive = what a person or a pipeline does first: a fresh container, a venv,
`pip install -e . && pip install pytest && python -m pytest`, judged by the same oracle tiers.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from simulator.backend_factory import BackendOptions, make_backend
from simulator.batch import Task, TaskFailure
from simulator.events import Actor
from simulator.session import Session
from simulator.setup.batch import fail_unless_ready
from simulator.setup.oracle import Category, Tier, diagnose, verdict_from_tests
from simulator.setup.runner import DEFAULT_IMAGE

# The venv goes under $HOME: the container's /tmp is a noexec tmpfs (its pip would not run).
NAIVE_INSTALL = (
    'python3 -m venv "$HOME/naive" && "$HOME/naive/bin/pip" install -q -e . 2>&1 && '
    '"$HOME/naive/bin/pip" install -q pytest 2>&1'
)
NAIVE_TEST = '"$HOME/naive/bin/python" -m pytest -p no:cacheprovider -q'


def naive_task(task: Task) -> dict[str, Any]:
    return asyncio.run(_naive(task))


async def _naive(task: Task) -> dict[str, Any]:
    path = Path(str(task.payload["source"]))
    t0 = time.monotonic()
    backend = make_backend(
        "docker",
        path,
        options=BackendOptions(
            image=task.payload.get("image") or DEFAULT_IMAGE,
            network=True,
            cpus=task.payload.get("cpus"),
        ),
    )
    trajectory = Path(str(task.payload["trajectory_dir"])) / f"naive-{path.name}.jsonl"
    session = await Session.open(path, backend=backend, trajectory_path=trajectory)
    try:
        install = await session.exec(NAIVE_INSTALL, actor=Actor.SYSTEM, timeout=900)
        if install.exit_code != 0:
            diagnosis = diagnose(
                install.output.decode("utf-8", "replace"), fallback=Category.DEPENDENCY
            )
            raise TaskFailure(
                "naive install failed",
                category=str(diagnosis.category),
                evidence=diagnosis.evidence,
                result={"verdict": {"tier": str(Tier.NONE)}, "seconds": time.monotonic() - t0},
            )
        run = await session.run_tests(command=NAIVE_TEST, actor=Actor.SYSTEM, timeout=900)
        verdict = verdict_from_tests(
            run.counts(),
            output=run.output,
            exit_code=run.exit_code,
            timed_out=run.timed_out,
            command=NAIVE_TEST,
        )
        result = {"verdict": verdict.to_dict(), "seconds": time.monotonic() - t0}
        fail_unless_ready(verdict, "naive", result)
        return result
    finally:
        await session.close()
