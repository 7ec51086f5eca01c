"""Container ready time: from opening a session to the first command's output (image cached).

Reference: `docker run --rm IMAGE true` with the CLI, on the same machine in the same run.
Ours: a session starting its own container, then sessions from a warm pool
(backends/docker/pool.py): one at a time (the pool refilled between them, untimed), and 32 at
once from a pool of 32 ready containers (the issue's goal: median <= 0.05 s, p95 <= 0.15 s).
Run: uv run python bench/docker_ready.py [N]   (N sessions each way, default 10; quick: 5 — the
32-at-once row always starts 32 containers)
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time

from _docker_common import IMAGE, load_note, median, pct, sample_repo

from backends.docker import DockerBackend, DockerOptions
from backends.docker.pool import PoolSettings, WarmPool


async def ready_once(repo: object) -> tuple[float, float]:
    started = time.perf_counter()
    backend = DockerBackend(repo, DockerOptions(image=IMAGE))  # type: ignore[arg-type]
    first_output = asyncio.get_running_loop().create_future()

    def on_output(_chunk: bytes) -> None:
        if not first_output.done():
            first_output.set_result(time.perf_counter())

    try:
        await backend.start()
        await backend.exec("echo ready", on_output=on_output)
        ready = first_output.result() - started
    finally:
        stop_started = time.perf_counter()
        await backend.stop()
    return ready, time.perf_counter() - stop_started


async def pooled_once(pool: WarmPool) -> float:
    """From asking the pool for a session to the first output of its first command."""
    started = time.perf_counter()
    lease = pool.lease()
    first_output = asyncio.get_running_loop().create_future()

    def on_output(_chunk: bytes) -> None:
        if not first_output.done():
            first_output.set_result(time.perf_counter())

    await lease.start()
    try:
        await lease.exec("echo ready", on_output=on_output)
        return float(first_output.result() - started)
    finally:
        await lease.stop()  # back to the pool: reset in the background


async def pooled(repo: object, n: int) -> tuple[list[float], list[float], WarmPool]:
    options = DockerOptions(image=IMAGE)
    pool = WarmPool(repo, options, PoolSettings(size=1))  # type: ignore[arg-type]
    one_by_one = []
    for _ in range(n + 1):
        await pool.fill()  # untimed: a pool in use refills between requests
        one_by_one.append(await pooled_once(pool))
    await pool.close()
    pool = WarmPool(repo, options, PoolSettings(size=32))  # type: ignore[arg-type]
    await pool.fill()
    at_once = await asyncio.gather(*(pooled_once(pool) for _ in range(32)))
    return one_by_one[1:], list(at_once), pool


async def main(n: int) -> None:
    repo = sample_repo()
    try:
        await ready_once(repo)  # warm up: imports, first connection
        readies, stops = [], []
        for _ in range(n):
            ready, stop = await ready_once(repo)
            readies.append(ready)
            stops.append(stop)
        one_by_one, at_once, pool = await pooled(repo, n)
        await pool.close()
        runs = []
        if shutil.which("docker"):
            for _ in range(max(3, n // 2)):
                started = time.perf_counter()
                await asyncio.to_thread(
                    subprocess.run,
                    ["docker", "run", "--rm", "--network", "none", IMAGE, "true"],
                    check=True,
                )
                runs.append(time.perf_counter() - started)
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    print("container ready: session open -> first command output (image cached), one run")
    print(f"  reposim docker backend      median {median(readies):.3f} s  "
          f"p95 {pct(readies, 0.95):.3f} s  (n={n})")  # fmt: skip
    print(f"  (closing a session: median {median(stops):.3f} s)")
    print(f"  warm pool, one at a time    median {median(one_by_one):.3f} s  "
          f"p95 {pct(one_by_one, 0.95):.3f} s  max {max(one_by_one):.3f} s  (n={n})")  # fmt: skip
    print(f"  warm pool, 32 at once       median {median(at_once):.3f} s  "
          f"p95 {pct(at_once, 0.95):.3f} s  max {max(at_once):.3f} s  (n=32)")  # fmt: skip
    if runs:
        print(f"  reference: docker run true  median {median(runs):.3f} s  (n={len(runs)})")
    print("  target <= 0.6 s cold; from the warm pool median <= 0.05 s, p95 <= 0.15 s (32 at once)")
    print(f"  {load_note()}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
