"""A session survives its commands: what they kill, fork and write cannot take it down or over.

Each test here failed before the fix it covers (issue 11): init ran as the commands' uid, a
backgrounded fork bomb held the pids limit for good, nothing bounded the disk, and the CPU limit
was the whole host.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from backends.docker import DockerBackend

BackendFactory = Callable[..., Awaitable[DockerBackend]]


async def test_kill_everything_and_kill_init_leave_the_session_alive(
    backend: DockerBackend, docker_client: Any
) -> None:
    assert backend.container_id is not None
    denied = await backend.exec("kill 1; echo status=$?")
    assert b"status=1" in denied.output and b"not permitted" in denied.output
    assert (await backend.read_file("calc/ops.py")).startswith(b"def add")
    # bash's builtin spares the shell that runs it; /bin/kill takes that shell too.
    for kill_all in ("kill -9 -1", "/bin/kill -9 -1"):
        everything = await backend.exec(kill_all, timeout=30)
        assert everything.shell_restarted == kill_all.startswith("/")
        assert docker_client.api.inspect_container(backend.container_id)["State"]["Running"]
        assert (await backend.exec("echo alive")).output == b"alive\n"
        # the file service was killed too, and a new one serves the next call
        assert (await backend.read_file("calc/ops.py")).startswith(b"def add")
    # The reaper survived too: timeouts still stop commands.
    slow = await backend.exec("sleep 60", timeout=1)
    assert slow.timed_out and slow.duration < 10
    # init and the reaper are root's; the commands' user has no capability at all.
    ps = await backend.exec("ps -o user= -p 1; grep CapEff /proc/self/status")
    assert ps.output.split() == [b"root", b"CapEff:", b"0000000000000000"]


async def test_a_dead_reaper_is_started_again(backend: DockerBackend, docker_client: Any) -> None:
    # Only root on the host (or the OOM killer) can do this; the session must not go blind.
    assert backend.container_id is not None
    killed = docker_client.api.exec_create(
        backend.container_id, ["pkill", "-KILL", "-f", "READY"], user="0"
    )
    docker_client.api.exec_start(killed["Id"])
    slow = await backend.exec("sleep 60", timeout=1)
    assert slow.timed_out and not slow.shell_restarted  # the reaper killed it, as it should
    assert backend.reaper_restarts == 1
    left = await backend.exec("pgrep -c -x sleep -u 1000 || true")
    assert left.output == b"0\n"


async def test_a_backgrounded_fork_bomb_does_not_outlive_its_command(
    make_backend: BackendFactory, sample_repo: Path
) -> None:
    backend = await make_backend(sample_repo, pids=64)
    bomb = await backend.exec(":(){ :|:& };:", timeout=30)
    assert bomb.exit_code == 0  # it returns at once: the bomb runs in the background
    await asyncio.sleep(1)  # a person (or a model) takes at least this long to type the next one
    # The reaper clears the session: the process count comes back down. On a loaded machine a
    # clear can race forks in flight and take another round, so allow it some seconds, then
    # every later command's output must be clean.
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        probe = await backend.exec("ps -e --no-headers | wc -l", timeout=30)
        last = probe.output.split()[-1:] or [b"999"]
        if last[0].isdigit() and int(last[0]) < 12:
            break
        assert asyncio.get_running_loop().time() < deadline, probe.output[-400:]
        await asyncio.sleep(0.5)
    for _ in range(3):
        later = await backend.exec("ls /workspace/calc | head -1; echo done", timeout=30)
        assert later.output == b"__init__.py\ndone\n", (
            backend._reaper and backend._reaper.clears,
            later,
        )
    count = await backend.exec("ps -e --no-headers | wc -l")
    assert int(count.output) < 12, (await backend.exec("ps -ef")).output.decode()


async def test_writing_past_the_disk_limit_is_refused_or_stopped(
    make_backend: BackendFactory, sample_repo: Path
) -> None:
    backend = await make_backend(sample_repo, disk="200m")
    # One big file: the kernel refuses it at the limit (RLIMIT_FSIZE).
    big = await backend.exec("dd if=/dev/zero of=big bs=1M count=400 2>&1; stat -c %s big")
    assert b"File size limit exceeded" in big.output or b"File too large" in big.output
    assert big.output.split()[-1] == str(200 * 2**20).encode()
    await backend.exec("rm big")
    # Many smaller files, in /tmp this time: the watch on the container's layer stops it.
    many = await backend.exec(
        "for i in $(seq 1 100); do head -c 10M /dev/zero > /tmp/f$i; sleep 0.05; done; echo all",
        timeout=120,
    )
    assert b"disk limit (200m)" in many.output
    assert not many.output.endswith(b"all\n")
    written = await backend.exec("du -sm /tmp | cut -f1")
    assert int(written.output) < 600, written.output
    # The session is still usable, and cleaning up is not stopped.
    cleaned = await backend.exec("rm -f /tmp/f*; echo cleaned")
    assert cleaned.output == b"cleaned\n"
    assert 0 <= await backend.disk_usage() < 50 * 2**20


async def test_the_terminal_is_held_to_the_disk_limit_too(
    make_backend: BackendFactory, sample_repo: Path
) -> None:
    backend = await make_backend(sample_repo, disk="100m")
    pty = await backend.open_pty()
    try:
        await pty.write(
            b"for i in $(seq 1 100); do head -c 10M /dev/zero > /tmp/t$i; sleep 0.05; done\n"
        )
        seen = b""
        while b"more than its disk limit" not in seen:
            chunk = await asyncio.wait_for(pty.read(), 60)
            assert chunk, seen
            seen += chunk
        await pty.write(b"echo still-$((40 + 2))\n")
        while b"still-42" not in seen:
            seen += await asyncio.wait_for(pty.read(), 30)
    finally:
        await pty.close()
    written = await backend.exec("du -sm /tmp | cut -f1")
    assert int(written.output) < 600, written.output


async def test_the_default_cpu_limit_leaves_the_host_a_core(
    backend: DockerBackend, docker_client: Any
) -> None:
    assert backend.container_id is not None
    host_config = docker_client.api.inspect_container(backend.container_id)["HostConfig"]
    cores = len(os.sched_getaffinity(0))
    assert host_config["NanoCpus"] == max(1, cores - 1) * 10**9
