"""Ownership that cannot be inherited (issue 25 item 1): gc removes only the containers that
RepoSim's private state says a session created, never one started by hand from an image that
carries RepoSim's labels; images RepoSim makes carry no owner labels."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.docker import DockerBackend, DockerOptions
from backends.docker_engine import (
    LABEL_HOST,
    LABEL_KIND,
    LABEL_MANAGED,
    LABEL_PID,
    LABEL_PID_START,
    LABEL_SESSION,
    OWNER_LABELS,
    commit_clean,
    ownership_dir,
)
from tests.docker.conftest import TEST_IMAGE, killed_owner, reposim_cli


def _gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def labelled_image(docker_client: Any) -> Iterator[str]:
    """An image with the owner labels of a session whose process is gone, as the old
    `reposim/base:bookworm-2` and saved environment images carried them."""
    api = docker_client.api
    created = api.create_container(
        TEST_IMAGE,
        command=["true"],
        labels={
            LABEL_MANAGED: "1",
            LABEL_KIND: "session",
            LABEL_SESSION: "old-session",
            LABEL_PID: str(_gone_pid()),
            LABEL_PID_START: "1.0",
            LABEL_HOST: socket.gethostname(),
        },
    )
    tag = f"gc-{os.getpid()}"
    try:
        image = api.commit(created["Id"], repository="reposim/test-labelled", tag=tag)
    finally:
        api.remove_container(created["Id"], force=True)
    yield f"reposim/test-labelled:{tag}"
    api.remove_image(image["Id"], force=True)


@pytest.fixture
def hand_started(docker_client: Any, labelled_image: str) -> Iterator[str]:
    """`docker run -d IMAGE sleep infinity` by a user, from the labelled image."""
    api = docker_client.api
    name = f"by-hand-{os.getpid()}"
    created = api.create_container(labelled_image, command=["sleep", "infinity"], name=name)
    api.start(created["Id"])
    labels = api.inspect_container(created["Id"])["Config"]["Labels"]
    assert labels[LABEL_MANAGED] == "1"  # inherited: what the old gc selected on
    yield name
    api.remove_container(created["Id"], force=True)


async def test_gc_keeps_a_hand_started_container_and_removes_a_crashed_sessions(
    sample_repo: Path, docker_client: Any, hand_started: str, tmp_path: Path
) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    orphan, owner_pid = await killed_owner(sample_repo, within=180, env=env)
    orphan_name = docker_client.api.inspect_container(orphan)["Name"].lstrip("/")

    dry = await asyncio.to_thread(reposim_cli, "gc", "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    # Only containers: gc also lists other runs' leftover private directories and workspaces.
    would = [line for line in dry.stdout.splitlines() if line.startswith("would remove container")]
    assert would == [f"would remove container {orphan_name} (owner pid {owner_pid} is gone)"]
    assert hand_started not in dry.stdout

    result = await asyncio.to_thread(reposim_cli, "gc", env=env)
    assert result.returncode == 0, result.stderr
    assert f"removed container {orphan_name}" in result.stdout
    assert hand_started not in result.stdout
    assert orphan not in [c["Id"] for c in docker_client.api.containers(all=True)]
    assert docker_client.api.inspect_container(hand_started)["State"]["Running"]
    assert not list((tmp_path / "state" / "reposim" / "containers").glob("*.json"))


async def test_the_ownership_record_is_private_and_goes_with_the_container(
    sample_repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    backend = DockerBackend(sample_repo, DockerOptions.build(image=TEST_IMAGE))
    await backend.start()
    try:
        record = ownership_dir() / f"{backend.session_id}.json"
        assert stat.S_IMODE(record.stat().st_mode) == 0o600
        assert stat.S_IMODE(ownership_dir().stat().st_mode) == 0o700
        assert backend.container_id is not None and backend.container_id in record.read_text()
    finally:
        await backend.stop()
    assert not record.exists()


async def test_committed_images_carry_no_owner_labels(
    sample_repo: Path, docker_client: Any, labelled_image: str
) -> None:
    # A session on an image that still has old owner labels, committed the way `reposim setup`
    # saves an environment: neither the session's labels nor the base image's survive.
    backend = DockerBackend(sample_repo, DockerOptions.build(image=labelled_image))
    await backend.start()
    try:
        # In the container's own layer (the workspace, home and /var/tmp may be volumes, which
        # commit leaves out; the session's uid may write nowhere else): by the container's root.
        assert backend.container_id is not None
        marker = "/marker"
        made = docker_client.api.exec_create(
            backend.container_id, ["sh", "-c", f"echo saved > {marker}"], user="0"
        )
        docker_client.api.exec_start(made["Id"])
        assert docker_client.api.exec_inspect(made["Id"])["ExitCode"] == 0
        since = int(time.time()) - 1
        image_id = await asyncio.to_thread(
            commit_clean,
            docker_client,
            backend.container_id,
            repository="reposim/test-clean",
            tag=f"gc-{os.getpid()}",
            labels={"reposim.env": "1"},
            env=["VIRTUAL_ENV=/opt/v"],
            changes={"WorkingDir": "/workspace"},
        )
        # The commit never froze the container (a pausing commit racing an exec's start left
        # containers paused with a frozen `runc init`, issue 25).
        paused = docker_client.api.events(
            since=since,
            until=int(time.time()) + 1,
            filters={"container": backend.container_id, "event": ["pause", "unpause"]},
            decode=True,
        )
        assert [event.get("status") for event in paused] == []
    finally:
        await backend.stop()
    try:
        config = docker_client.api.inspect_image(image_id)["Config"]
        assert config["Labels"] == {"reposim.env": "1"}
        assert not OWNER_LABELS & set(config["Labels"])
        assert "VIRTUAL_ENV=/opt/v" in config["Env"] and "LANG=C.UTF-8" in config["Env"]
        assert config["WorkingDir"] == "/workspace"
        # The layers came along: the committed file is there.
        out = docker_client.containers.run(
            image_id, ["cat", marker], remove=True, network_mode="none"
        )
        assert out == b"saved\n"
    finally:
        docker_client.api.remove_image(image_id, force=True)


async def test_gc_keeps_a_live_sessions_container_after_the_clock_was_stepped(
    sample_repo: Path, docker_client: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A time sync that steps the wall clock moves every process's wall-clock start; the session's
    record, written before the step, then differs from it by the step. gc must still see the
    session as alive (it removed the running session's container when it compared wall-clock
    starts with a 1 s tolerance). The step is applied to the record: stepping this machine's
    clock would disturb every other test running beside this one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    backend = DockerBackend(sample_repo, DockerOptions.build(image=TEST_IMAGE))
    await backend.start()
    try:
        record_path = ownership_dir() / f"{backend.session_id}.json"
        record = json.loads(record_path.read_text())
        record["pid_start"] = round(record["pid_start"] - 1.0, 3)  # a step of +1 s since
        record_path.write_text(json.dumps(record))
        result = await asyncio.to_thread(
            reposim_cli, "gc", env={"XDG_STATE_HOME": str(tmp_path / "state")}
        )
        assert result.returncode == 0, result.stderr
        assert backend.container_id is not None
        assert docker_client.api.inspect_container(backend.container_id)["State"]["Running"], (
            result.stdout
        )
        assert (await backend.exec("echo alive")).output.strip() == b"alive"
    finally:
        await backend.stop()
