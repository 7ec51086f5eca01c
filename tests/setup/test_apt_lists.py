"""Debian package lists are fetched once per image and copied into later setup containers
(simulator/setup/aptlists.py), on real containers of the setup image."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from simulator.backend_factory import BackendOptions, make_backend
from simulator.session import Session
from simulator.setup.aptlists import MAX_AGE, Lists, ensure_lists, lists_file, run_as_root
from tests.setup import repos
from tests.setup.conftest import SETUP_IMAGE, SessionFactory

pytestmark = [pytest.mark.docker, pytest.mark.slow]


async def _offline_session(repo: Path, tmp_path: Path) -> Session:
    backend = make_backend("docker", repo, options=BackendOptions(image=SETUP_IMAGE))
    return await Session.open(repo, backend=backend, trajectory_path=tmp_path / "offline.jsonl")


async def test_a_second_container_of_the_image_gets_the_lists_without_fetching(
    tmp_path: Path, docker_session: SessionFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first container fetches the lists (apt-get update) and leaves a copy on the host;
    a second container of the same image, with no network at all, then has lists apt can
    use: they can only have come from the host. A copy older than MAX_AGE is not used."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = repos.write_repo(tmp_path / "repo", {"README.md": "lists\n"})
    first = await docker_session(repo)
    container, image_id = first.description.container, first.description.image_id
    assert container is not None and image_id is not None
    assert await ensure_lists(container, image_id) is Lists.FETCHED
    assert lists_file(image_id).is_file()
    assert await ensure_lists(container, image_id) is Lists.PRESENT

    offline = await _offline_session(repo, tmp_path)
    try:
        box = offline.description.container
        assert box is not None
        assert await ensure_lists(box, image_id) is Lists.CACHED
        code, out = await run_as_root(box, "apt-cache show python3-dev", [], timeout=120)
        assert code == 0 and "Package: python3-dev" in out, out[-400:]
    finally:
        await offline.close()

    stale = time.time() - MAX_AGE - 60
    os.utime(lists_file(image_id), (stale, stale))
    late = await _offline_session(repo, tmp_path)
    try:
        box = late.description.container
        assert box is not None
        # too old to be used, and no network to fetch new ones
        assert await ensure_lists(box, image_id) is Lists.MISSING
    finally:
        await late.close()
