"""Fixtures for the engine tests: the local backend, started on the sample project."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.local import LocalBackend


@pytest.fixture
async def backend(sample_repo: Path, tmp_path: Path) -> AsyncIterator[LocalBackend]:
    b = LocalBackend(sample_repo, scratch_root=tmp_path / "scratch")
    await b.start()
    yield b
    await b.stop()
