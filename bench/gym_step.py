"""Gym step overhead: RepoSimEnv.step over the session call it wraps, same commands, one run.

Target (issue 17): step's overhead over the session call <= 1 ms median. Both sides run `true`
in the same local session, alternating, so machine noise falls on both alike: the session side
awaits Session.exec on the env's loop, the env side goes through step (action check, the agent's
ToolBox, observation and info building).
Run: uv run python bench/gym_step.py [--n 300]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import ms, summary, table

from simulator.gym import GymTask, RepoSimEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / "a.py").write_text("x = 1\n")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        task = GymTask(repo=str(repo), instruction="bench", max_steps=10 * args.n + 100)
        env = RepoSimEnv(task, trajectory_dir=Path(tmp) / "t")
        env.reset(seed=0)
        session = env.session
        assert session is not None
        action = {"tool": "bash", "arguments": {"command": "true"}}
        direct: list[float] = []
        stepped: list[float] = []
        for _ in range(20):
            env.step(action)
        for _ in range(args.n):
            t0 = time.perf_counter()
            env._run(session.exec("true"))
            direct.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            env.step(action)
            stepped.append(time.perf_counter() - t0)
        env.close()
    overhead = [s - d for s, d in zip(stepped, direct, strict=True)]
    median = statistics.median(stepped) - statistics.median(direct)
    print(
        table(
            f"gym step vs the session call it wraps ({args.n} alternating pairs)",
            [
                ("Session.exec('true')", summary(direct), ""),
                ("env.step(bash 'true')", "", summary(stepped)),
                ("overhead (median of step - median of exec)", "<= 1 ms", ms(median)),
                ("overhead per pair", "", summary(overhead)),
            ],
        )
    )
    print(f"target <= 1 ms median: {'met' if median <= 0.001 else 'NOT met'}")


if __name__ == "__main__":
    main()
