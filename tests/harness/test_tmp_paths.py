"""A call whose argument holds a path in pytest's temporary folders is checked in situ, not
replayed with that path (issue 22): pytest keeps the folders of its last three runs only, so
on tomlkit 0.12.1 TOMLFile.write's recorded calls replayed in one corpus run (coverage 100%)
and were "not reproducible" in another (6 of 7, coverage 25%), depending on the pytest runs
made in between. In situ, the repository's test makes its folder afresh."""

from __future__ import annotations

from simulator.harness.runtime.reposim_tracer import TMP_MARK
from tests.harness.conftest import (
    Traced,
    assert_harnessed_and_valid,
    assert_planted_bugs_caught,
    traced_fixture,
)

FILES = '''\
class TextFile:
    def __init__(self, path):
        self.path = path

    def write(self, text):
        """Writes `text` with Unix line ends; the number of characters written."""
        with open(self.path, "w", newline="") as handle:
            return handle.write(text.replace("\\r\\n", "\\n"))
'''

TESTS = """\
from store.files import TextFile


def test_write(tmp_path):
    target = TextFile(tmp_path / "a.txt")
    assert target.write("x\\r\\ny\\r\\n") == 4
    assert (tmp_path / "a.txt").read_text() == "x\\ny\\n"


def test_write_to_a_str_path(tmp_path):
    assert TextFile(str(tmp_path / "b.txt")).write("abc") == 3
"""

traced = traced_fixture(
    {"store/__init__.py": "", "store/files.py": FILES, "tests/test_files.py": TESTS},
    "store",
    ["TextFile.write"],
)

PLANTED = {
    "TextFile.write": (
        "store/files.py",
        'handle.write(text.replace("\\r\\n", "\\n"))',
        "handle.write(text)",
    )
}


async def test_a_path_in_pytests_temporary_folders_is_checked_in_situ(traced: Traced) -> None:
    session, problems = traced
    assert_harnessed_and_valid(problems)
    harness = problems["TextFile.write"].harness
    assert harness is not None
    # both calls (a Path, a str) are checked in situ, and say why; no case holds the old
    # folder (only the comments that show what the arguments looked like)
    assert "IN_SITU = [" in harness.text
    assert harness.text.count("pytest's temporary folders") == 2
    code = [line for line in harness.text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if TMP_MARK in line]
    await assert_planted_bugs_caught(session, problems, PLANTED, "tests/test_files.py")
