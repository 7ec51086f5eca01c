"""Runs of one task compared step by step, and search across a folder of trajectories: real
sessions on a real git repository, recorded and then read back like any user's files."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.compare import RowState, compare_files, search_folder
from simulator.compare.align import align
from simulator.events import Actor
from simulator.session import Session
from tests.conftest import SAMPLE_PROJECT, RepoFactory

INTEROP = Path(__file__).parents[1] / "replay" / "data"


async def _run(repo: Path, out: Path, *, detour: bool, fix: str) -> Path:
    """One agent's run of "fix mean": the same steps, except that `detour` inserts one extra
    command before the edit and `fix` is what it edits the divisor to."""
    async with await Session.open(repo, trajectory_path=out) as session:
        await session.exec("ls calc", actor=Actor.AGENT)
        await session.run_tests("tests/test_ops.py::test_mean", actor=Actor.AGENT)
        await session.read("calc/ops.py", actor=Actor.AGENT)
        if detour:
            await session.exec("grep -n mean calc/ops.py", actor=Actor.AGENT)
        await session.edit("calc/ops.py", "(len(values) - 1)", fix, actor=Actor.AGENT)
        await session.run_tests("tests/test_ops.py::test_mean", actor=Actor.AGENT)
        await session.exec("git status --short", actor=Actor.AGENT)
    return out


@pytest.fixture
async def two_runs(make_repo: RepoFactory, tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(SAMPLE_PROJECT, name="sample")
    good = await _run(repo, tmp_path / "good.jsonl", detour=False, fix="len(values)")
    bad = await _run(repo, tmp_path / "bad.jsonl", detour=True, fix="(len(values) + 1)")
    return good, bad


async def test_runs_that_part_at_a_known_step_are_aligned_around_it(
    two_runs: tuple[Path, Path],
) -> None:
    good, bad = two_runs
    comparison = compare_files([good, bad])
    states = [row.state for row in comparison.rows]
    texts = [[step.text if step else None for step in row.cells] for row in comparison.rows]
    # The extra grep in the second run is one partial row; everything after it still lines up.
    assert states.count(RowState.PARTIAL) == 1
    first = comparison.first_divergence
    assert first is not None
    assert texts[first][0] is None and "grep -n mean" in str(texts[first][1])
    assert comparison.rows[first + 1].cells[0] is not None  # the edit: both runs, aligned
    assert "edit calc/ops.py" in str(texts[first + 1][0])
    # Both edited the same file differently, and the tests after it went different ways.
    assert comparison.rows[first + 1].state == RowState.DIFFERS
    assert comparison.rows[first + 2].state == RowState.DIFFERS
    assert [step.text for step in comparison.only_in[1]] == [texts[first][1]]
    assert comparison.only_in[0] == []
    assert list(comparison.files) == ["calc/ops.py"]
    assert [(t.test, t.outcomes) for t in comparison.tests] == [
        ("tests/test_ops.py::test_mean", ["passed", "failed"])
    ]
    assert not comparison.agree


async def test_a_run_compared_with_itself_agrees(two_runs: tuple[Path, Path]) -> None:
    good, _ = two_runs
    comparison = compare_files([good, good])
    assert comparison.agree
    assert {row.state for row in comparison.rows} == {RowState.SAME}


async def test_three_runs_and_another_tools_file_compare_in_one_table(
    two_runs: tuple[Path, Path],
) -> None:
    good, bad = two_runs
    swe = INTEROP / "swe-agent-function_calling_simple.traj"
    comparison = compare_files([good, bad, swe])
    assert all(len(row.cells) == 3 for row in comparison.rows)
    # Every step of every run appears exactly once, in its own order.
    for column, run in enumerate(comparison.runs):
        column_steps = [row.cells[column] for row in comparison.rows if row.cells[column]]
        assert [s.index for s in column_steps if s] == list(range(len(run.steps)))
    assert len(comparison.only_in[2]) == len(comparison.runs[2].steps)


def test_alignment_survives_insertions_deletions_and_repeated_actions() -> None:
    a = ["ls", "test", "edit", "test", "test", "finish"]
    b = ["ls", "cat", "test", "edit", "test", "finish"]
    rows = align(a, b)
    assert sorted(i for i, _ in rows if i is not None) == list(range(len(a)))
    assert sorted(j for _, j in rows if j is not None) == list(range(len(b)))
    matched = [(a[i], b[j]) for i, j in rows if i is not None and j is not None]
    assert all(x == y for x, y in matched)
    assert len(matched) == 5  # the longest common subsequence
    # Order is kept on both sides.
    pairs = [(i, j) for i, j in rows if i is not None and j is not None]
    assert pairs == sorted(pairs) and [j for _, j in pairs] == sorted(j for _, j in pairs)


def test_long_runs_align_to_their_longest_common_subsequence() -> None:
    import random

    rng = random.Random(7)
    base = [f"cmd {rng.randrange(40)}" for _ in range(3000)]
    other = list(base)
    for at in sorted(rng.sample(range(3000), 60), reverse=True):
        if rng.random() < 0.5:
            del other[at]
        else:
            other.insert(at, "extra step")
    rows = align(base, other)
    matched = sum(1 for i, j in rows if i is not None and j is not None)
    deletions = len(base) - sum(1 for x in other if x != "extra step")
    assert matched >= len(base) - deletions


async def test_search_finds_a_command_across_three_files(
    two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    good, bad = two_runs
    folder = tmp_path / "runs"
    folder.mkdir()
    for path in (good, bad):
        shutil.move(path, folder / path.name)
    shutil.copy(INTEROP / "swe-agent-function_calling_simple.traj", folder)
    (folder / "broken.jsonl").write_text('{"schema": "reposim.trajectory/999"}\n')

    hits = list(search_folder(folder, "GIT STATUS"))
    found = {Path(h.path).name for h in hits if hasattr(h, "snippet") and h.kind == "exec"}
    assert found == {"good.jsonl", "bad.jsonl"}
    assert any(getattr(h, "reason", None) for h in hits)  # the broken file is named, not fatal
    # Text inside another tool's observation, and inside a recorded edit's diff.
    assert {
        Path(h.path).name for h in search_folder(folder, "missing_colon") if hasattr(h, "snippet")
    } >= {"swe-agent-function_calling_simple.traj"}
    edit_hits = [h for h in search_folder(folder, "len(values) + 1") if hasattr(h, "snippet")]
    assert {(Path(h.path).name, h.kind) for h in edit_hits} == {("bad.jsonl", "file.edit")}


async def test_the_cli_compares_and_searches(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    good, bad = two_runs
    cli = [sys.executable, "-m", "reposim"]

    async def run(*args: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(
            subprocess.run, [*cli, *args], capture_output=True, text=True
        )

    shown = await run("trajectory", "compare", str(good), str(bad))
    assert shown.returncode == 1, shown.stderr
    assert "First divergence: row 4, a step not every run took." in shown.stdout
    assert "Test outcome differs: tests/test_ops.py::test_mean (A: passed, B: failed)." in (
        shown.stdout
    )
    as_json = await run("trajectory", "compare", "--json", str(good), str(good))
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout)["first_divergence"] is None
    one = await run("trajectory", "compare", str(good))
    assert one.returncode == 2 and "at least two" in one.stderr
    nothing = await run("trajectory", "search", str(tmp_path), "no-such-text-anywhere")
    assert nothing.returncode == 1 and "contains" in nothing.stderr
