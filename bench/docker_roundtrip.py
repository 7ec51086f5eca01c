"""Command round trip in a container: RepoSim's persistent shell vs one exec per command.

Both run `true` in the same container in one run. The references are what a tool that calls
`docker exec` per command pays: the Docker SDK's exec_run, and the `docker exec` CLI. Also the
persistent shell without its output relay (each command's own FIFO, copied by a root process:
issue 25's isolation from background jobs), in a container of its own: the relay's cost.
Run: uv run python bench/docker_roundtrip.py [N]

`--syscalls [N]` counts instead of timing (a figure the machine's load does not change): it
attaches strace, from the host, to the container's command shell, output relay and reaper for N
commands (`true`) in each mode, and prints the system calls per command of each process, reads
apart, and the CPU time each spends per command (from /proc/PID/schedstat, in an untraced run
before; load inflates it, so compare figures from the same run).
It needs strace on the host and the right to trace the container's processes (root).
"""

from __future__ import annotations

import asyncio
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _docker_common import IMAGE, load_note, median, pct, sample_repo
from _timing import exec_round_trips

from backends.docker import DockerBackend, DockerOptions
from backends.docker.channel import RELAY_DIR_PREFIX, DockerShellChannel


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


def _host_pids(container: str, shell_pid: int) -> dict[str, int]:
    """Host pids of the container's command shell (its pid in the container is `shell_pid`),
    of its output relay (the root python3 whose program is relay.py), of the reaper (told of
    each command's start and end) and of its watcher, by /proc/PID/status's NSpid and cmdline."""
    top = subprocess.run(
        ["docker", "top", container, "-eo", "pid"], capture_output=True, text=True, check=True
    )
    found: dict[str, int] = {}
    for pid in (int(x) for x in top.stdout.split()[1:]):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        nspid = re.search(r"^NSpid:\s+(.*)$", status, re.M)
        if nspid and nspid.group(1).split()[-1] == str(shell_pid):
            found["shell"] = pid
        elif (
            argv[:3] == [b"python3", b"-I", b"-c"]
            and argv[4:5]
            and argv[4].startswith(RELAY_DIR_PREFIX.encode())
        ):
            found["relay"] = pid
        elif argv[:2] == [b"bash", b"-c"] and argv[3:4] == [b"reaper"]:
            found["reaper"] = pid
        elif argv[1:4] == [b"-I", b"-S", b"-c"] and b"The reaper's watcher" in argv[4]:
            found["watcher"] = pid  # passes the reaper's requests on (reaper_watch.py)
    return found


async def _traced(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    tracer = re.search(r"^TracerPid:\s+(\d+)", status, re.M)
    return tracer is not None and tracer.group(1) != "0"


def _cpu_ns(pid: int) -> int:
    """Nanoseconds `pid` has run on a CPU (/proc/PID/schedstat's first field)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


async def _count(
    backend: DockerBackend, n: int
) -> tuple[dict[str, collections.Counter[str]], dict[str, float]]:
    """System calls of the shell and the relay (when there is one) over `n` commands, traced,
    and before that the CPU microseconds each spends per command, untraced (strace would
    inflate them)."""
    assert backend._channel is not None and backend.container_id is not None
    for _ in range(20):
        await backend.exec("true")
    pids = _host_pids(backend.container_id, backend._channel.pid)
    before = {name: _cpu_ns(pid) for name, pid in pids.items()}
    for _ in range(n):
        await backend.exec("true")
    cpu = {name: (_cpu_ns(pid) - before[name]) / n / 1000 for name, pid in pids.items()}
    counts: dict[str, collections.Counter[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tracers = {}
        for name, pid in pids.items():
            out = Path(tmp) / name
            tracers[name] = (
                out,
                await asyncio.create_subprocess_exec(
                    "strace", "-f", "-qq", "-o", str(out), "-p", str(pid)
                ),
            )
            while not await _traced(pid):  # noqa: ASYNC110 - strace attaches asynchronously
                await asyncio.sleep(0.01)
        for _ in range(n):
            await backend.exec("true")
        for name, (out, tracer) in tracers.items():
            tracer.terminate()
            await tracer.wait()
            calls: collections.Counter[str] = collections.Counter()
            for line in out.read_text().splitlines():
                call = re.match(r"(?:\d+\s+)?([a-z_0-9]+)\(", line)
                if call:
                    calls[call.group(1)] += 1
            counts[name] = calls
    return counts, cpu


async def syscalls(n: int) -> None:
    repo = sample_repo()
    original = DockerShellChannel._attach_relay

    async def no_relay(self: DockerShellChannel, relay: Any, directory: str) -> None:
        await relay.close()

    results = {}
    try:
        for mode in ("relay", "shared stdout"):
            if mode == "shared stdout":
                DockerShellChannel._attach_relay = no_relay  # type: ignore[method-assign]
            backend = DockerBackend(repo, DockerOptions(image=IMAGE))
            await backend.start()
            try:
                results[mode] = await _count(backend, n)
            finally:
                await backend.stop()
                DockerShellChannel._attach_relay = original  # type: ignore[method-assign]
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    print(f"system calls per command (`true`), {n} commands, strace from the host")
    for mode, (counts, cpu) in results.items():
        for name, calls in counts.items():
            total = sum(calls.values())
            print(f"  {mode:<14} {name:<6} CPU {cpu[name]:6.1f} us/command (untraced)")
            top = ", ".join(f"{c} {k / n:.1f}" for c, k in calls.most_common(6))
            print(f"  {mode:<14} {name:<6} {total / n:6.1f}/command  reads {calls['read'] / n:6.1f}"
                  f"  ({top})")  # fmt: skip


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
    if sys.argv[1:2] == ["--syscalls"]:
        asyncio.run(syscalls(int(sys.argv[2]) if len(sys.argv) > 2 else 300))
    else:
        asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
