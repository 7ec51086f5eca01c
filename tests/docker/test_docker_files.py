"""File operations in the container: confined to the workspace, binary-safe, owned by the user."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.base import BackendError, PathEscapeError
from backends.docker import DockerBackend, DockerOptions
from tests.docker.conftest import NO_PYTHON, TEST_IMAGE, committed_image


@pytest.fixture(scope="module")
def image_without_python(docker_client: Any) -> Iterator[str]:
    """The test image without python3, so file operations take the bash fallback."""
    tag = f"test-{os.getpid()}"
    with committed_image(docker_client, NO_PYTHON, "reposim/test-no-python", tag) as image:
        yield image


@pytest.fixture(params=["python-helper", "bash-fallback"])
async def backend(
    request: pytest.FixtureRequest, sample_repo: Path
) -> AsyncIterator[DockerBackend]:
    image = TEST_IMAGE
    if request.param == "bash-fallback":
        image = request.getfixturevalue("image_without_python")
    started = DockerBackend(sample_repo, DockerOptions.build(image=image))
    await started.start()
    try:
        if request.param == "bash-fallback":
            assert (await started.exec("command -v python3 || echo none")).output == b"none\n"
        yield started
    finally:
        await started.stop()


async def test_read_write_binary_and_nested(backend: DockerBackend) -> None:
    data = bytes(range(256)) * 40
    await backend.write_file("deep/er/blob.bin", data)
    assert await backend.read_file("deep/er/blob.bin") == data
    assert await backend.read_file("/workspace/deep/er/blob.bin") == data
    shown = await backend.exec("stat -c '%U %s' deep/er/blob.bin")
    assert shown.output == f"reposim {len(data)}\n".encode()
    assert (await backend.read_file("calc/ops.py")).startswith(b"def add(a, b):")


async def test_paths_outside_the_workspace_are_refused(backend: DockerBackend) -> None:
    with pytest.raises(PathEscapeError):
        await backend.read_file("../etc/passwd")
    with pytest.raises(PathEscapeError):
        await backend.write_file("/etc/evil", b"x")
    await backend.exec("ln -s /etc out && ln -s /etc/passwd pw && ln -s calc inside")
    with pytest.raises(PathEscapeError):
        await backend.read_file("out/passwd")
    with pytest.raises(PathEscapeError):
        await backend.read_file("pw")
    with pytest.raises(PathEscapeError):
        await backend.write_file("out/x", b"x")
    with pytest.raises(PathEscapeError):
        await backend.list_dir("out")
    assert (await backend.read_file("inside/ops.py")).startswith(b"def add")
    # The link itself is inside the workspace: it can be inspected and removed, not followed.
    assert (await backend.stat("out")).kind == "symlink"
    await backend.delete("out")
    assert (await backend.exec("test -d /etc")).exit_code == 0


async def test_directories_are_not_files(backend: DockerBackend) -> None:
    with pytest.raises(BackendError, match="is a directory"):
        await backend.read_file("calc")
    with pytest.raises(BackendError, match="not a directory"):
        await backend.list_dir("calc/ops.py")
