"""32 container sessions opened at once, each running a short command; zero errors, no leftovers.

Run: uv run python bench/docker_concurrency.py [SESSIONS]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time

from _docker_common import IMAGE, load_note, median, pct, sample_repo

from backends.docker import DockerBackend, DockerOptions
from backends.docker_engine import LABEL_MANAGED, LABEL_PID, connect


async def one(repo: object, errors: list[str]) -> float | None:
    started = time.perf_counter()
    backend = DockerBackend(repo, DockerOptions(image=IMAGE, memory="256m"))  # type: ignore[arg-type]
    try:
        await backend.start()
        result = await backend.exec("python3 -c 'print(sum(range(1000)))'")
        if result.output != b"499500\n":
            errors.append(f"wrong output {result.output!r}")
            return None
        return time.perf_counter() - started
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
        return None
    finally:
        await backend.stop()


async def main(sessions: int) -> None:
    repo = sample_repo()
    errors: list[str] = []
    try:
        await one(repo, errors)  # warm up imports and the connection
        started = time.perf_counter()
        results = await asyncio.gather(*(one(repo, errors) for _ in range(sessions)))
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    ready = [r for r in results if r is not None]
    client = connect()
    leftovers = [
        c
        for c in client.api.containers(all=True, filters={"label": f"{LABEL_MANAGED}=1"})
        if (c.get("Labels") or {}).get(LABEL_PID) == str(os.getpid())
    ]
    client.close()
    print(f"{sessions} sessions opened at once, each ran one command and closed")
    print(f"  errors: {len(errors)}   leftover containers: {len(leftovers)}   wall {wall:.2f} s")
    if ready:
        print(f"  ready (open -> command done): p50 {median(ready):.2f} s  "
              f"p95 {pct(ready, 0.95):.2f} s  max {max(ready):.2f} s")  # fmt: skip
    for error in errors[:5]:
        print(f"  error: {error}")
    print("  target: 32 sessions, zero errors; design notes: others report errors past ~20 workers")
    print(f"  {load_note()}")
    if errors or leftovers:
        sys.exit(1)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 32))
