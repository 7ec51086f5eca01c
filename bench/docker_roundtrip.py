"""Command round trip in a container: RepoSim's persistent shell vs one exec per command.

Both run `true` in the same container in one run. The references are what a tool that calls
`docker exec` per command pays: the Docker SDK's exec_run, and the `docker exec` CLI. Also the
persistent shell without its output relay (each command's own FIFO, copied by a root process:
issue 25's isolation from background jobs), in a container of its own: the relay's cost.
Run: uv run python bench/docker_roundtrip.py [N]
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _docker_common import IMAGE, load_note, median, pct, sample_repo
from _timing import exec_round_trips

from backends.docker import DockerBackend, DockerOptions
from backends.docker.channel import DockerShellChannel


async def _shared_stdout(repo: Path, n: int) -> list[float]:
    """The same, with the commands on the shell's shared stdout (no output relay: what an
    image without python3 gets, and what every session had before the relay): the relay's
    cost is the difference."""
    original = DockerShellChannel._attach_relay

    async def no_relay(self: DockerShellChannel, relay: Any, directory: str) -> None:
        await relay.close()

    DockerShellChannel._attach_relay = no_relay  # type: ignore[method-assign]
    backend = DockerBackend(repo, DockerOptions(image=IMAGE))
    try:
        await backend.start()
    finally:
        DockerShellChannel._attach_relay = original  # type: ignore[method-assign]
    try:
        assert backend._channel is not None and backend._channel.output_dir() is None
        return await exec_round_trips(backend, n)
    finally:
        await backend.stop()


async def main(n: int) -> None:
    repo = sample_repo()
    shared = await _shared_stdout(repo, n)
    backend = DockerBackend(repo, DockerOptions(image=IMAGE))
    await backend.start()
    try:
        assert backend._channel is not None and backend._channel.output_dir() is not None
        ours = await exec_round_trips(backend, n)
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

    def line(name: str, times: list[float]) -> str:
        return (
            f"  {name:<28} median {ms(median(times))}  p95 {ms(pct(times, 0.95))}"
            f"  min {ms(min(times))}  max {ms(max(times))}  (n={len(times)})"
        )

    print("command round trip (`true`), one run")
    print(line("reposim persistent shell", ours))
    print(line("  same, shared stdout", shared) + "  (no output relay; its own container)")
    print(line("reference: SDK exec_run", sdk))
    if cli:
        print(line("reference: docker exec CLI", cli))
    print(f"  speed-up over exec_run: {median(sdk) / median(ours):.0f}x"
          "   (targets: median <= 1 ms, >= 50x; design notes: SDK ~63 ms, CLI ~83 ms)")  # fmt: skip
    print(f"  {load_note()}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
