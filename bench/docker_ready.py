"""Container ready time: from opening a session to the first command's output (image cached).

Reference: `docker run --rm IMAGE true` with the CLI, on the same machine in the same run.
Run: uv run python bench/docker_ready.py [N]
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time

from _docker_common import IMAGE, load_note, median, pct, sample_repo

from backends.docker import DockerBackend, DockerOptions


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


async def main(n: int) -> None:
    repo = sample_repo()
    try:
        await ready_once(repo)  # warm up: imports, first connection
        readies, stops = [], []
        for _ in range(n):
            ready, stop = await ready_once(repo)
            readies.append(ready)
            stops.append(stop)
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
    if runs:
        print(f"  reference: docker run true  median {median(runs):.3f} s  (n={len(runs)})")
    print("  target <= 0.6 s; design notes: docker run ~0.3 s, other agent sandboxes 15-60 s")
    print(f"  {load_note()}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
