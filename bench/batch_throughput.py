"""Batch layer throughput: 200 small tasks (`reposim exec` of a short command on fixture
repositories) through run_batch, locally and on Ray, beside a plain concurrent.futures pool.

Target (issue 17): throughput beside a plain pool in the same run; Ray's startup time and its
overhead per task stated. The plain pool reuses its workers and writes no results; the batch
layer starts a fresh process group per task (so a hang or crash is killed alone) and appends
one fsynced record per task.
Run: uv run python bench/batch_throughput.py [--tasks 200] [--jobs 2] [--no-ray]
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _batch_task import exec_once
from _report import arguments, table

from simulator.batch import ResultStore, Task, run_batch


def make_repos(root: Path, count: int) -> list[Path]:
    repos = []
    for i in range(count):
        repo = root / f"repo{i}"
        repo.mkdir(parents=True)
        (repo / "README.md").write_text(f"fixture {i}\n")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@b",
                "commit",
                "-qm",
                "init",
            ],
            check=True,
        )
        repos.append(repo)
    return repos


def tasks_for(repos: list[Path], root: Path, n: int, tag: str) -> list[Task]:
    return [
        Task(
            f"{tag}-{i}",
            {"repo": str(repos[i % len(repos)]), "trajectory": str(root / tag / f"{i}.jsonl")},
        )
        for i in range(n)
    ]


def plain_pool(tasks: list[Task], jobs: int) -> float:
    context = multiprocessing.get_context("forkserver")
    t0 = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        results = list(pool.map(exec_once, tasks))
    elapsed = time.perf_counter() - t0
    assert all(r["output"] == "ok" for r in results)
    return elapsed


PER_TASK: dict[str, str] = {}
"""Per executor: the distribution of one task's seconds (start of its process to its record)."""


def batch(tasks: list[Task], jobs: int, store: Path, executor: str) -> float:
    t0 = time.perf_counter()
    summary = run_batch(tasks, exec_once, store=ResultStore(store), jobs=jobs, executor=executor)
    elapsed = time.perf_counter() - t0
    assert summary.by_status == {"ok": len(tasks)}, summary.table()
    seconds = sorted(summary.seconds())
    quantiles = statistics.quantiles(seconds, n=10)
    PER_TASK[executor] = (
        f"per task: min {seconds[0] * 1000:.0f}, median {statistics.median(seconds) * 1000:.0f}, "
        f"p90 {quantiles[-1] * 1000:.0f}, max {seconds[-1] * 1000:.0f} ms"
    )
    return elapsed


def ray_startup(jobs: int) -> tuple[float, float]:
    """Seconds to import Ray and start a local instance; to run one trivial task on it."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    t0 = time.perf_counter()
    import ray

    from simulator.batch.ray_executor import init_ray

    init_ray(ray, jobs, None)  # as run_batch starts it (one retry if the raylet is slow)
    started = time.perf_counter() - t0

    @ray.remote
    def nothing() -> int:
        return 1

    t1 = time.perf_counter()
    ray.get(nothing.remote())
    return started, time.perf_counter() - t1


def main() -> None:
    args = arguments(__doc__, tasks=200, jobs=2, no_ray=False)
    n, jobs = args.tasks, args.jobs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repos = make_repos(root / "repos", 10)
        print(
            f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True
        )
        # The batch layer first: it starts multiprocessing's forkserver with the task's module
        # preloaded, and the pool then shares that forkserver. The other way round the pool
        # starts it bare and every batch task would import the engine again (~0.4 s each).
        local = batch(tasks_for(repos, root, n, "local"), jobs, root / "local.jsonl", "process")
        pool = plain_pool(tasks_for(repos, root, n, "pool"), jobs)
        rows = [
            ("plain concurrent.futures pool", f"{n / pool:.1f} tasks/s ({pool:.1f} s)", ""),
            (
                "batch layer, local processes",
                f"{n / pool:.1f} tasks/s",
                f"{n / local:.1f} tasks/s ({local:.1f} s); "
                f"{(local - pool) / n * 1000:+.0f} ms/task",
            ),
            ("  local processes, one task", "-", PER_TASK["process"]),
        ]
        print(table(f"{n} tasks, {jobs} at a time, local", rows), flush=True)
        if not args.no_ray:
            started, first = ray_startup(jobs)
            on_ray = batch(tasks_for(repos, root, n, "ray"), jobs, root / "ray.jsonl", "ray")
            rows.append(
                (
                    "batch layer, Ray (local instance)",
                    f"{n / pool:.1f} tasks/s",
                    f"{n / on_ray:.1f} tasks/s ({on_ray:.1f} s); {(on_ray - pool) / n * 1000:+.0f}"
                    " ms/task",
                )
            )
            rows.append(("  Ray, one task", "-", PER_TASK["ray"]))
            rows.append(("Ray startup (import + init)", "-", f"{started:.1f} s"))
            rows.append(("Ray first trivial task", "-", f"{first:.2f} s"))
            import ray

            ray.shutdown()
        print(table(f"{n} tasks, {jobs} at a time (one local session + one command each)", rows))
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
