"""The editor's index built in worker processes (records sent back pickled in pieces, without
their source) is the index built in-process, record for record, and answers the same."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import psutil
import pytest

from simulator.analysis import index_build
from simulator.analysis.index import CodeIndex
from simulator.analysis.index_build import extract_records, full_collections_deferred
from simulator.analysis.session_index import extract_texts
from tests.analysis.conftest import C_PROJECT
from tests.analysis.nav_project import NAV_REPO

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# Real files with many functions, classes, globals and imports (so, many pieces), a package
# with relative imports, and a file tree-sitter reports errors in.
STDLIB_FILES = [
    "difflib.py",
    "json/__init__.py",
    "json/decoder.py",
    "json/encoder.py",
    "json/scanner.py",
    "argparse.py",
    "test/test_compile.py",
]


def _texts() -> dict[str, bytes]:
    texts = {f"std/{rel}": (STDLIB / rel).read_bytes() for rel in STDLIB_FILES}
    texts.update({p: t.encode() for p, t in C_PROJECT.items()})
    texts.update({p: t.encode() for p, t in NAV_REPO.items()})
    texts["README.md"] = b"# not indexed\n"
    return texts


@pytest.mark.parametrize("piece_items", [1, 64])
async def test_worker_processes_build_the_in_process_index(
    piece_items: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers are handed the parent's piece size when they start.
    monkeypatch.setattr(index_build, "PIECE_ITEMS", piece_items)
    texts = _texts()
    expected = CodeIndex.from_texts(texts)
    built = await extract_texts(texts, parallel=True)
    assert list(built.files) == list(expected.files)
    assert "README.md" not in built.files
    for path, record in expected.files.items():
        assert built.files[path] == record, path
    assert any(len(r.functions) > 100 for r in built.files.values())
    assert built.files["std/test/test_compile.py"].has_errors
    # What the editor asks of it answers the same.
    for index in (expected, built):
        assert [s.qualname for s in index.outline("std/difflib.py")][:5] == [
            "__all__",
            "Match",
            "_calculate_ratio",
            "SequenceMatcher",
            "SequenceMatcher.__init__",
        ]
    assert built.definition_at("pkg/a.py", 5, 12) == expected.definition_at("pkg/a.py", 5, 12)
    assert built.callers("helper") == expected.callers("helper") != []
    assert built.callees("vec_norm2") == expected.callees("vec_norm2") != []
    assert built.definition_at("std/json/__init__.py", 106, 6) == expected.definition_at(
        "std/json/__init__.py", 106, 6
    )


async def test_the_thread_path_builds_the_same_index() -> None:
    texts = _texts()
    records = await extract_records(texts, parallel=False)
    assert records == CodeIndex.from_texts(texts).files


async def test_full_collections_resume_after_a_build_and_its_objects_are_frozen() -> None:
    threshold = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with full_collections_deferred():
        assert gc.get_threshold()[2] > 1_000_000
        with full_collections_deferred():  # nested builds (two panes) keep it deferred
            pass
        assert gc.get_threshold()[2] > 1_000_000
        records = await extract_records(_texts(), parallel=True)
        assert gc.get_threshold()[2] > 1_000_000
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() > frozen
    assert len(records) > 10


ORPHAN_SCRIPT = """
import asyncio, multiprocessing, time
from simulator.analysis import index_build

def slow(jobs):
    time.sleep(120)  # a parse that outlives its parent
    return []

index_build._extract_compact = slow

async def main():
    texts = {f"m{i}.py": b"x = 1\\n" * 1000 for i in range(100)}  # two tasks: two workers
    task = asyncio.create_task(index_build.extract_records(texts, parallel=True, workers=2))
    while len(multiprocessing.active_children()) < 2:
        await asyncio.sleep(0.05)
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
    await task

if __name__ == "__main__":
    asyncio.run(main())
"""


def test_workers_leave_with_their_parent_when_it_is_killed(tmp_path: Path) -> None:
    """Workers run in a session of their own (so the terminal's Ctrl+C does not reach them):
    they must still go away when the process that started them dies."""
    script = tmp_path / "orphans.py"
    script.write_text(ORPHAN_SCRIPT)
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2
        # Each in a session of its own once it has started (imports, then the initializer).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(os.getsid(p) == p for p in workers):
            time.sleep(0.1)
        assert all(os.getsid(pid) == pid for pid in workers)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
