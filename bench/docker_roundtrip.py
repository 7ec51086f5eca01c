"""Command round trip in a container: RepoSim's persistent shell vs one exec per command.

Both run `true` in the same container in one run. The references are what a tool that calls
`docker exec` per command pays: the Docker SDK's exec_run, and the `docker exec` CLI.
Run: uv run python bench/docker_roundtrip.py [N]
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time

from _docker_common import IMAGE, load_note, median, pct, sample_repo

from backends.docker import DockerBackend, DockerOptions


async def main(n: int) -> None:
    repo = sample_repo()
    backend = DockerBackend(repo, DockerOptions(image=IMAGE))
    await backend.start()
    try:
        for _ in range(20):  # warm up
            await backend.exec("true")
        ours = []
        for _ in range(n):
            started = time.perf_counter()
            result = await backend.exec("true")
            ours.append(time.perf_counter() - started)
            assert result.exit_code == 0
        container = backend._client.containers.get(backend.container_id)
        sdk = []
        for _ in range(max(10, n // 20)):
            started = time.perf_counter()
            code, _ = await asyncio.to_thread(container.exec_run, "true", user="1000")
            sdk.append(time.perf_counter() - started)
            assert code == 0
        cli = []
        if shutil.which("docker"):
            for _ in range(max(10, n // 40)):
                started = time.perf_counter()
                await asyncio.to_thread(
                    subprocess.run, ["docker", "exec", container.id, "true"], check=True
                )
                cli.append(time.perf_counter() - started)
    finally:
        await backend.stop()
        shutil.rmtree(repo, ignore_errors=True)

    def ms(x: float) -> str:
        return f"{x * 1000:8.2f} ms"

    print("command round trip (`true`), same container, one run")
    print(f"  reposim persistent shell   median {ms(median(ours))}  p95 {ms(pct(ours, 0.95))}"
          f"  (n={len(ours)})")  # fmt: skip
    print(f"  reference: SDK exec_run    median {ms(median(sdk))}  p95 {ms(pct(sdk, 0.95))}"
          f"  (n={len(sdk)})")  # fmt: skip
    if cli:
        print(f"  reference: docker exec CLI median {ms(median(cli))}  p95 {ms(pct(cli, 0.95))}"
              f"  (n={len(cli)})")  # fmt: skip
    print(f"  speed-up over exec_run: {median(sdk) / median(ours):.0f}x"
          "   (targets: median <= 1 ms, >= 50x; design notes: SDK ~63 ms, CLI ~83 ms)")  # fmt: skip
    print(f"  {load_note()}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
