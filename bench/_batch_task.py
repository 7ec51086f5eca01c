"""The small task both sides of bench/batch_throughput.py run: open a local session on a
fixture repository, run one short command, close (what `reposim exec REPO -- CMD` does)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from simulator.batch import Task
from simulator.session import Session


def exec_once(task: Task) -> dict[str, Any]:
    repo = Path(task.payload["repo"])
    trajectory = Path(task.payload["trajectory"])

    async def main() -> dict[str, Any]:
        async with await Session.open(repo, trajectory_path=trajectory) as session:
            result = await session.exec("echo ok")
        return {"exit_code": result.exit_code, "output": result.output.decode().strip()}

    return asyncio.run(main())
