"""C projects on the setup image (a compiler, make and cmake): build, run the tests, remember."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.setup import Tier
from tests.setup import repos
from tests.setup.conftest import SetUp

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.mark.parametrize(
    ("build", "command"),
    [
        (repos.cmake_repo, "ctest --test-dir build --output-on-failure"),
        (repos.make_repo, "make check"),
    ],
    ids=["cmake", "make"],
)
async def test_c_project_builds_and_its_tests_run(
    tmp_path: Path, set_up: SetUp, build: Callable[[Path], Path], command: str
) -> None:
    session, result = await set_up(build(tmp_path / "calc"))
    assert result.project.language == "c"
    assert result.verdict.tier is Tier.READY, result.verdict.line()
    assert result.verdict.tests == {"passed": 2, "failed": 0, "error": 0, "skipped": 0}
    assert result.verdict.test_command == command
    # Remembered: the session's test command (F5, `reposim test`) is the one found.
    again = await session.run_tests()
    assert again.command == command and again.exit_code == 0


async def test_a_failed_cmake_build_falls_back_to_the_trees_configure_and_make(
    tmp_path: Path, set_up: SetUp
) -> None:
    """zlib in the hard corpus: CMake stops on a file Debian's tree lacks; what a person does
    next is ./configure && make, which the same tree carries."""
    _, result = await set_up(repos.cmake_broken_configure_repo(tmp_path / "zlibish"))
    assert result.verdict.tier is Tier.READY, result.verdict.line()
    assert result.verdict.test_command == "make check"
    assert result.verdict.tests == {"passed": 2, "failed": 0, "error": 0, "skipped": 0}
    assert any("cmake" in note.lower() and "configure" in note for note in result.notes), (
        result.notes
    )
