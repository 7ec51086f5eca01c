"""Labels on what we create, cleanup on stop/errors/crashes, `reposim gc`, the CLI and options."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from backends.base import BackendError, BackendUnavailableError
from backends.docker import DockerBackend, DockerOptions
from backends.docker_engine import (
    LABEL_CREATED,
    LABEL_HOST,
    LABEL_MANAGED,
    LABEL_PID,
    LABEL_SESSION,
)
from simulator.backend_factory import BackendOptions
from simulator.backend_factory import make_backend as factory_make_backend
from tests.docker.conftest import ROOT, TEST_IMAGE, killed_owner, our_containers, reposim_cli

BackendFactory = Callable[..., Awaitable[DockerBackend]]


async def test_the_container_is_labelled_and_removed_on_stop(
    sample_repo: Path, docker_client: Any
) -> None:
    backend = DockerBackend(sample_repo, DockerOptions.build(image=TEST_IMAGE))
    await backend.start()
    container = backend.container_id
    assert container is not None
    labels = docker_client.api.inspect_container(container)["Config"]["Labels"]
    assert labels[LABEL_MANAGED] == "1"
    assert labels[LABEL_SESSION] == backend.session_id
    assert labels[LABEL_PID] == str(os.getpid())
    assert LABEL_CREATED in labels and LABEL_HOST in labels
    description = backend.describe().as_dict()
    assert description["image"] == TEST_IMAGE
    assert description["image_id"].startswith("sha256:")
    cores = len(os.sched_getaffinity(0))
    assert description["limits"] == {
        "memory": "2g",
        "cpus": float(max(1, cores - 1)),  # the host keeps a core
        "pids": 512,
        "disk": "10g",
    }
    assert description["network"] is False
    await backend.stop()
    await backend.stop()  # idempotent
    assert our_containers(docker_client) == []


async def test_a_failed_start_leaves_nothing_behind(sample_repo: Path, docker_client: Any) -> None:
    with pytest.raises(BackendError, match="not a size"):
        DockerBackend(sample_repo, DockerOptions.build(image=TEST_IMAGE, memory="lots"))
    # Docker itself refuses a memory limit below its 6 MB minimum, after the create call.
    backend = DockerBackend(sample_repo, DockerOptions.build(image=TEST_IMAGE, memory="1m"))
    with pytest.raises(BackendError, match="could not start the container"):
        await backend.start()
    assert our_containers(docker_client) == []


async def test_a_missing_image_is_one_clear_sentence(sample_repo: Path) -> None:
    backend = DockerBackend(sample_repo, DockerOptions.build(image="reposim/no-such-image:never"))
    with pytest.raises(BackendUnavailableError) as raised:
        await backend.start()
    message = str(raised.value)
    assert "docker pull reposim/no-such-image:never" in message
    assert "reposim image bootstrap" in message


async def test_an_unreachable_daemon_says_how_to_start_it(
    sample_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    backend = DockerBackend(sample_repo, DockerOptions.build(image=TEST_IMAGE))
    with pytest.raises(BackendUnavailableError) as raised:
        await backend.start()
    assert "not running" in str(raised.value)
    assert "dockerd" in str(raised.value)


async def test_gc_removes_what_a_killed_session_left_and_keeps_live_ones(
    sample_repo: Path, docker_client: Any, make_backend: BackendFactory
) -> None:
    live = await make_backend(sample_repo)
    orphan, owner_pid = await killed_owner(sample_repo, within=120)
    labels = docker_client.api.inspect_container(orphan)["Config"]["Labels"]
    assert labels[LABEL_PID] == str(owner_pid)

    dry = await asyncio.to_thread(reposim_cli, "gc", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would remove container" in dry.stdout
    assert docker_client.api.inspect_container(orphan)  # still there after a dry run

    result = await asyncio.to_thread(reposim_cli, "gc")
    assert result.returncode == 0, result.stderr
    assert "removed container" in result.stdout
    remaining = [c["Id"] for c in docker_client.api.containers(all=True)]
    assert orphan not in remaining
    assert live.container_id in remaining  # a live session is never collected
    assert (await live.exec("echo still running")).exit_code == 0


async def test_cli_exec_runs_in_a_container(sample_repo: Path, docker_client: Any) -> None:
    result = await asyncio.to_thread(
        reposim_cli,
        "exec",
        "--backend",
        "docker",
        "--image",
        TEST_IMAGE,
        "--memory",
        "512m",
        str(sample_repo),
        "--",
        "python",
        "-c",
        "print(1)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1\n"
    assert "trajectory" in result.stderr
    assert our_containers(docker_client) == []


async def test_cli_errors_are_one_sentence(sample_repo: Path) -> None:
    result = await asyncio.to_thread(
        reposim_cli, "exec", "--backend", "docker", "--image", "reposim/absent:x", str(sample_repo),
        "--", "true",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("reposim: error: The image reposim/absent:x is not")
    assert "Traceback" not in result.stderr


def test_make_backend_passes_options_and_refuses_unknown_ones(sample_repo: Path) -> None:
    backend = factory_make_backend(
        "docker", sample_repo, options=BackendOptions(image=TEST_IMAGE, pids=99, cpus=0.5)
    )
    assert isinstance(backend, DockerBackend)
    assert backend.limits.pids == 99 and backend.limits.cpus == 0.5
    with pytest.raises(BackendError, match="no option 'colour'"):
        factory_make_backend("docker", sample_repo, options=BackendOptions.of({"colour": "blue"}))
    with pytest.raises(BackendError, match="local backend only"):
        factory_make_backend("docker", sample_repo, in_place=True)


async def test_ctrl_c_during_a_command_removes_the_container(
    sample_repo: Path, docker_client: Any
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from reposim.cli import main; main()",
        "exec",
        "--backend",
        "docker",
        "--image",
        TEST_IMAGE,
        str(sample_repo),
        "--",
        "echo started; sleep 120",
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert await asyncio.wait_for(proc.stdout.readline(), 120) == b"started\n"
    mine = [c for c in docker_client.api.containers(filters={"label": f"{LABEL_PID}={proc.pid}"})]
    assert len(mine) == 1
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert (
        docker_client.api.containers(all=True, filters={"label": f"{LABEL_PID}={proc.pid}"}) == []
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as an unprivileged user")
async def test_permission_denied_on_the_socket_is_one_sentence() -> None:
    import shutil

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    if os.environ.get("DOCKER_HOST", "unix://").startswith("unix://") is False:
        pytest.skip("the engine is not reached through a unix socket")
    if Path("/var/run/docker.sock").stat().st_mode & 0o006:
        pytest.skip("the Docker socket is world-accessible here")
    proc = await asyncio.create_subprocess_exec(
        setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
        "from backends.docker_engine import connect\n"
        "try:\n    connect()\nexcept Exception as exc:\n    print(exc)\n",
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    assert out.decode().startswith("Permission denied on the Docker socket")
    assert "docker` group" in out.decode()


async def test_a_container_removed_behind_our_back_is_one_clear_error(
    make_backend: BackendFactory, sample_repo: Path, docker_client: Any
) -> None:
    backend = await make_backend(sample_repo)
    docker_client.api.remove_container(backend.container_id, force=True)
    with pytest.raises(BackendError, match=r"is gone \(removed outside RepoSim\); start a new"):
        await asyncio.wait_for(backend.exec("echo hi"), 60)
