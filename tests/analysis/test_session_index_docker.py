"""The same workspace index through a container session: listing and reads go through the
session, so the docker backend needs nothing of its own. Skips without a Docker engine or the
test image (REPOSIM_REQUIRE_DOCKER=1 makes that a failure, as in tests/docker)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backends.base import BackendUnavailableError
from backends.docker import DockerBackend, DockerOptions
from backends.docker_engine import connect
from simulator.analysis.session_index import WorkspaceIndex
from simulator.events import Event, Kind
from simulator.session import Session
from tests.analysis.nav_project import NAV_FILES

TEST_IMAGE = os.environ.get("REPOSIM_TEST_IMAGE", "reposim/base:bookworm-2")

pytestmark = pytest.mark.docker


def _docker_ready() -> str | None:
    """Why Docker cannot be used here, or None when it can."""
    try:
        client = connect(timeout=10)
    except BackendUnavailableError as error:
        return f"no usable Docker engine: {error}"
    try:
        import docker.errors

        try:
            client.images.get(TEST_IMAGE)
        except docker.errors.ImageNotFound:
            return f"the test image {TEST_IMAGE} is missing (reposim image bootstrap)"
    finally:
        client.close()
    return None


async def test_index_a_container_workspace_without_recording_reads(
    nav_repo: Path, tmp_path: Path
) -> None:
    reason = _docker_ready()
    if reason is not None:
        if os.environ.get("REPOSIM_REQUIRE_DOCKER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    (nav_repo / ".gitignore").write_text("scratch/\n")
    (nav_repo / "scratch").mkdir()
    (nav_repo / "scratch" / "tmp.py").write_text("def ignored():\n    pass\n")
    session = Session(
        DockerBackend(nav_repo, DockerOptions.build(image=TEST_IMAGE)),
        source=nav_repo,
        trajectory_path=tmp_path / "t.jsonl",
    )
    await session.start()
    events: list[Event] = []
    session.subscribe(events.append)
    try:
        workspace = WorkspaceIndex(session)
        index = await workspace.build()
        assert sorted(index.files) == NAV_FILES
        location = await workspace.query(lambda ix: ix.definition_at("pkg/a.py", 5, 12))
        assert location is not None and (location.path, location.line) == ("pkg/b.py", 4)
        await session.exec("printf 'int cube(int x);\\n' >> src/util.h")
        assert await workspace.resync() == ["src/util.h"]
        names = await workspace.query(lambda ix: [s.name for s in ix.outline("src/util.h")])
        assert names == ["UTIL_H", "square", "cube"]  # the include guard is a macro
    finally:
        await session.close()
    assert [e for e in events if e.kind == Kind.FILE_READ] == []
