"""Re-execution on the docker backend, against a real engine (skipped without one)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.backend_factory import BackendOptions, make_backend
from simulator.replay import reexecute
from simulator.trajectory import read_trajectory
from tests.replay.replay_helpers import SMALL_PROJECT, record_session

IMAGE = os.environ.get("REPOSIM_TEST_IMAGE", "reposim/base:bookworm-2")
pytestmark = pytest.mark.docker


@pytest.fixture
def docker_image() -> str:
    from backends.base import BackendUnavailableError
    from backends.docker_engine import connect

    try:
        client = connect(timeout=30)
    except BackendUnavailableError as exc:
        if os.environ.get("REPOSIM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker is required but not usable: {exc}")
        pytest.skip(f"no usable Docker engine: {exc}")
    try:
        import docker.errors

        try:
            client.images.get(IMAGE)
        except docker.errors.ImageNotFound:
            pytest.skip(f"the test image {IMAGE} is missing (reposim image bootstrap)")
    finally:
        client.close()
    return IMAGE


async def test_a_container_session_re_executes_in_a_new_container(
    make_repo: Callable[..., Path], tmp_path: Path, docker_image: str
) -> None:
    repo = make_repo(SMALL_PROJECT, name="project")
    backend = make_backend("docker", repo, options=BackendOptions(image=docker_image))
    original = await record_session(repo, tmp_path / "docker.jsonl", backend=backend)
    assert read_trajectory(original).header.backend.image == docker_image
    report, _ = await reexecute(
        original, backend_kind="docker", trajectory_path=tmp_path / "v.jsonl"
    )
    assert report.exit_code == 0, [s for s in report.steps if s.status != "match"]
    assert len(report.steps) > 10
