"""The warm container pool: sessions from ready containers, reset between users, proven clean."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from backends.base import ExecResult
from backends.docker import DockerOptions
from backends.docker.pool import PooledBackend, PoolSettings, WarmPool
from simulator.backend_factory import BackendOptions, warm_pool
from simulator.session import Session, open_session
from tests.conftest import WAIT
from tests.docker.conftest import TEST_IMAGE, our_containers

# What a hostile session leaves behind, everywhere it may write, for whoever comes next.
HOSTILE = "\n".join(
    [
        "echo secret > /tmp/left.txt",
        "mkdir -p /tmp/.hidden/deep && echo x > /tmp/.hidden/deep/f && chmod 000 /tmp/.hidden",
        "echo secret > /var/tmp/left.txt",
        "echo secret > /dev/shm/left",
        "mkdir -p ~/.cache/tool && echo secret > ~/.cache/tool/state",
        "echo secret > ~/.secret_note",
        "echo changed > calc/ops.py",
        "echo new > new_in_workspace.txt",
        "rm -f README.md",
        "export LEAKED_VAR=secret",
        "alias ls='echo owned'",
        "cd /tmp",
        "(sleep 1000 &)",
        "nohup sleep 999 > /dev/null 2>&1 &",
        "setsid sleep 998 > /dev/null 2>&1 < /dev/null &",
        "true",
    ]
)


@pytest.fixture
async def pool_for(docker_client: Any) -> AsyncIterator[Callable[..., WarmPool]]:
    pools: list[WarmPool] = []

    def factory(source: Path, size: int = 1, **options: Any) -> WarmPool:
        pool = WarmPool(
            source,
            DockerOptions.build(**{"image": TEST_IMAGE, **options}),
            PoolSettings(size=size),
        )
        pools.append(pool)
        return pool

    yield factory
    for pool in pools:
        await pool.close()
    assert not our_containers(docker_client)


async def _session(pool: WarmPool, source: Path) -> Session:
    return await open_session(source, backend=pool.lease())


async def _container_of(session: Session) -> str:
    container = session.description.container
    assert container
    return container


async def test_a_container_reused_after_a_hostile_session_shows_none_of_its_traces(
    pool_for: Callable[..., WarmPool], sample_repo: Path
) -> None:
    pool = pool_for(sample_repo, size=1)
    await pool.fill()
    first = await _session(pool, sample_repo)
    used = await _container_of(first)
    pristine = (await first.exec("cat calc/ops.py; ls -A ~ | sort")).output
    result = await first.exec(HOSTILE)
    assert result.exit_code == 0, result.output
    assert b"sleep 99" in (await first.exec("ps -eo args")).output
    await first.close()
    await pool.fill()  # the reset runs in the background; wait for it here
    assert pool.reused == 1 and pool.discarded == 0 and pool.ready == 1

    second = await _session(pool, sample_repo)
    try:
        assert await _container_of(second) == used  # the same container, reset
        assert (await second.exec("cat calc/ops.py; ls -A ~ | sort")).output == pristine
        assert (await second.exec("pwd")).output == b"/workspace\n"
        assert (await second.exec("ls -A /tmp /var/tmp /dev/shm")).output.split() == [
            b"/dev/shm:",
            b"/tmp:",
            b"reposim",
            b"/var/tmp:",
        ]
        assert (await second.exec("ls -A")).output.split() == sorted(
            p.name.encode() for p in sample_repo.iterdir()
        )
        assert (await second.exec("echo ${LEAKED_VAR:-unset}; type -t ls")).output == (
            b"unset\nfile\n"
        )
        processes = (await second.exec("ps -eo args")).output
        assert not re.search(rb"sleep (998|999|1000)", processes), processes
        # The session works as a fresh one does: tests, a checkpoint, a restore.
        run = await second.run_tests()
        assert run.counts() == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}
    finally:
        await second.close()


async def test_a_container_whose_image_files_were_changed_is_removed_not_reused(
    pool_for: Callable[..., WarmPool], sample_repo: Path, docker_client: Any
) -> None:
    pool = pool_for(sample_repo, size=1)
    await pool.fill()
    first = await _session(pool, sample_repo)
    used = await _container_of(first)
    # ~/.bashrc comes with the image: the pool cannot put it back, so it must not reuse this.
    assert (await first.exec("echo 'export LEAKED_VAR=1' >> ~/.bashrc")).exit_code == 0
    await first.close()
    await pool.fill()
    assert pool.discarded == 1 and pool.reused == 0 and pool.ready == 1
    # and it says why: the file the image brought changed
    assert len(pool.discard_reasons) == 1 and ".bashrc" in pool.discard_reasons[0], (
        pool.discard_reasons
    )
    assert used not in {c["Id"] for c in our_containers(docker_client)}
    second = await _session(pool, sample_repo)
    try:
        assert await _container_of(second) != used
        assert b"LEAKED_VAR" not in (await second.exec("cat ~/.bashrc")).output
    finally:
        await second.close()


async def test_a_pool_under_32_concurrent_requests_hands_out_32_distinct_containers(
    pool_for: Callable[..., WarmPool], sample_repo: Path
) -> None:
    pool = pool_for(sample_repo, size=4)
    leases = [pool.lease() for _ in range(32)]
    await asyncio.gather(*(lease.start() for lease in leases))
    try:
        assert len({lease.container_id for lease in leases}) == 32
        outputs = await asyncio.gather(*(lease.exec("hostname") for lease in leases))
        assert len({o.output for o in outputs}) == 32
    finally:
        await asyncio.gather(*(lease.stop() for lease in leases))


async def _until(predicate: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.02)


async def test_background_work_waits_for_handed_out_containers_to_answer_never_for_a_waiter(
    docker_client: Any, sample_repo: Path
) -> None:
    """A burst of users gets the engine and the CPU first: the pool's refills and resets (engine
    calls, runc, our CPU) begin once each container handed out has answered its user's first
    call (or after the grace). Someone waiting for a container never waits for that."""
    pool = WarmPool(
        sample_repo, DockerOptions.build(image=TEST_IMAGE), PoolSettings(size=1, grace=WAIT * 4)
    )
    try:
        await pool.fill()
        first = pool.lease()
        await first.start()
        await _until(lambda: pool.held_back == 1, "the refill waits for the first user")
        assert pool.started == 1 and len(our_containers(docker_client)) == 1
        # A second user finds the pool empty: the held refill is theirs, at once.
        second = pool.lease()
        await asyncio.wait_for(second.start(), WAIT)
        assert second.container_id != first.container_id
        assert (await first.exec("echo one")).output == b"one\n"
        assert (await second.exec("echo two")).output == b"two\n"
        await asyncio.wait_for(pool.fill(), WAIT)
        assert pool.held_back == 0 and pool.ready == 1
        # A container handed back is reset only once the next user's first call is answered.
        third = pool.lease()
        await third.start()
        await first.stop()
        await _until(lambda: pool.held_back == 2, "the reset and the refill wait")
        assert pool.reused == 0
        assert await third.exists("calc/ops.py")
        await asyncio.wait_for(pool.fill(), WAIT)
        assert pool.reused == 1 and pool.held_back == 0, pool.discard_reasons
        await second.stop()
        await third.stop()
    finally:
        await pool.close()
    assert not our_containers(docker_client)


async def test_a_missing_image_is_one_clear_error_from_the_pool(
    pool_for: Callable[..., WarmPool], sample_repo: Path
) -> None:
    pool = pool_for(sample_repo, size=1, image="reposim/no-such-image:1")
    with pytest.raises(Exception, match="no-such-image"):
        await asyncio.wait_for(_session(pool, sample_repo), 60)


class _CountingLease(PooledBackend):
    """A pool's lease that counts the commands its session runs."""

    commands: list[str]

    async def exec(self, command: str, **kwargs: Any) -> ExecResult:
        self.commands.append(command)
        return await super().exec(command, **kwargs)


async def test_the_start_checkpoint_taken_ahead_is_the_workspace_the_next_user_finds(
    docker_client: Any, sample_repo: Path
) -> None:
    pool = warm_pool(sample_repo, pool_size=1, options=BackendOptions(image=TEST_IMAGE))
    assert pool is not None
    try:
        await pool.fill()
        first = await open_session(sample_repo, backend=pool.lease())
        await first.exec("echo changed > calc/ops.py; echo new > added.txt; rm README.md")
        await first.checkpoint("edited")
        await first.close()
        await pool.fill()  # reset and prepared again in the background
        assert pool.reused == 1, pool.discard_reasons

        lease = _CountingLease(pool)
        lease.commands = []
        second = await open_session(sample_repo, backend=lease)
        try:
            # The pool took the start's checkpoint ahead: starting ran no command...
            assert lease.commands == [], (
                lease.commands,
                lease.prepared,
                lease._inner.prepared_output,
            )
            # ...and it is the workspace as this session found it, not the last one's.
            assert second.checkpoints[0].tree == (await second.checkpoint("now")).tree
            assert await second.changes() == []
            await second.exec("echo mine > calc/ops.py; echo x > other.txt")
            assert {c.path for c in await second.changes()} == {"calc/ops.py", "other.txt"}
            await second.restore("start")
            assert (await second.read_bytes("calc/ops.py")) == (
                sample_repo / "calc/ops.py"
            ).read_bytes()
            assert not await second.exists("other.txt")
        finally:
            await second.close()
    finally:
        await pool.close()
    assert not our_containers(docker_client)
