"""Re-executing a 200-step recorded session on the local backend: overhead beyond the commands.

Records a session (150 commands of the kinds agents run, 50 file edits and writes) on a scratch git
repository, then re-executes it with `reposim replay --verify`'s engine. The commands' own time is
what their results report (the shell's measurement); everything else (session bookkeeping,
trajectory writing, file operations, comparison and normalisation) is overhead. Reference: the
same overhead while recording live, measured in the same run.

    uv run python bench/replay_verify.py
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._report import table
from simulator.events import Actor
from simulator.replay import reexecute
from simulator.session import Session

COMMANDS = (
    "python3 -c 'print(sum(i * i for i in range(300000)))'",
    "grep -rn 'def ' . | head -n 50",
    "ls -la && cat calc/ops.py",
    "sleep 0.02; echo waited",
    "git status --short | head",
)


def make_repo(root: Path) -> Path:
    repo = root / "project"
    (repo / "calc").mkdir(parents=True)
    (repo / "calc" / "ops.py").write_text(
        "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(60))
    )
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    subprocess.run(
        "git init -q -b main . && git add -A && git commit -qm start",
        shell=True,
        cwd=repo,
        check=True,
        env=env,
    )
    return repo


async def record(repo: Path, out: Path) -> tuple[float, float]:
    session = await Session.open(repo, trajectory_path=out)
    command_time = 0.0
    started = time.perf_counter()
    async with session:
        for step in range(200):
            if step % 4 == 3:
                n = step // 4
                if n % 2:
                    await session.edit(
                        "calc/ops.py",
                        f"return x + {n}\n",
                        f"return x + {n} + 0\n",
                        actor=Actor.AGENT,
                    )
                else:
                    await session.write(f"notes/n{n}.txt", f"note {n}\n" * 20)
                continue
            result = await session.exec(COMMANDS[step % len(COMMANDS)], actor=Actor.AGENT)
            command_time += result.duration
        wall = time.perf_counter() - started
    return wall, command_time


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["XDG_CACHE_HOME"] = str(root / "cache")
        repo = make_repo(root)
        recorded = root / "recorded.jsonl"
        live_wall, live_commands = await record(repo, recorded)
        report, _ = await reexecute(recorded, trajectory_path=root / "replayed.jsonl")
    assert len(report.steps) == 201, len(report.steps)
    live_over = (live_wall - live_commands) / live_commands
    # The start checkpoint is taken by Session.open when recording, outside the live timing;
    # leave it out of the replay's too, so both measure the same 200 steps.
    start = report.steps[0]
    assert start.kind == "checkpoint"
    wall = report.wall - start.elapsed
    over = (wall - report.command_time) / report.command_time
    rows = [
        (
            "steps re-executed",
            "",
            f"{len(report.steps)} ({report.count('match')} match, {report.count('differ')} differ)",
        ),
        ("commands' own time", f"{live_commands:.2f} s (live)", f"{report.command_time:.2f} s"),
        ("wall time of the 200 steps", f"{live_wall:.2f} s (live)", f"{wall:.2f} s"),
        ("start checkpoint (git snapshot)", "in Session.open", f"{start.elapsed * 1000:.0f} ms"),
        (
            "overhead beyond the commands",
            f"{live_over:.1%} recording live",
            f"{over:.1%} re-executing (target <= 10%)",
        ),
        (
            "overhead per step",
            f"{(live_wall - live_commands) / 200 * 1000:.2f} ms",
            f"{(report.wall - report.command_time) / len(report.steps) * 1000:.2f} ms",
        ),
    ]
    print(
        table(
            "Re-executing 200 recorded steps, local backend (2 shared cores, machine loaded;"
            " one run)",
            rows,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
