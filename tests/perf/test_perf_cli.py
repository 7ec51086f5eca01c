"""`reposim perf` user errors: one sentence and exit code 2."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from reposim.cli.perf_cmd import Progress
from tests.conftest import reposim


def perf_compare(repo: Path, a: str, b: str, *options: str) -> subprocess.CompletedProcess[str]:
    """`reposim perf compare REPO --a A --b B OPTIONS` in a process of its own."""
    return reposim("perf", "compare", str(repo), "--a", a, "--b", b, *options)


def test_api_and_command_together_is_a_user_error(twox_repo: Path) -> None:
    proc = perf_compare(twox_repo, "a", "b", "--api", "x.y", "--command", "true")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "reposim: error: Give exactly one of --api and --command."


def test_an_unknown_revision_is_one_sentence(twox_repo: Path, tmp_path: Path) -> None:
    proc = perf_compare(twox_repo, "no-such-rev", "b", "--command", "true", "--out", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "Cannot check out 'no-such-rev' for side A" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_rows_file_without_revisions_is_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("repo,api,a\n/tmp,x.y,HEAD\n")
    proc = reposim("perf", "batch", str(rows), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"reposim: error: Row 1 of {rows} has no b."


def test_progress_to_a_pipe_is_at_most_one_line_every_ten_seconds(
    twox_repo: Path, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    proc = perf_compare(
        twox_repo,
        "a",
        "b",
        "--command",
        "true",
        "--rounds",
        "4",
        "--timer",
        "cpu",
        "--out",
        str(tmp_path / "out"),
    )
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.splitlines() if line.startswith("perf.compare:")]
    # about 30 steps happen (checkouts, quickchecks, calibrations, 8 measurements); a pipe
    # gets the first, one per 10 s after it, and the last
    assert 1 <= len(progress) <= took / 10 + 2, (took, progress)
    assert progress[-1].startswith("perf.compare: measure ok")


def test_progress_to_a_pipe_does_not_repeat_a_line_whose_only_change_is_its_eta(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `perf mine` to a log: its batch reports every ~2 s and only the ETA moves for minutes
    # (52 lines of "[3/5]  ok 3  running 1  ETA ..." in one 26-minute run): a pipe now gets a
    # changed state at most every 10 s and an unchanged one once a minute
    now = [0.0]
    show = Progress()
    show.clock = lambda: now[0]
    for second in range(0, 300, 2):
        now[0] = float(second)
        state = "[3/5]  ok 3  running 1" if second < 200 else "[4/5]  ok 4  running 1"
        show(f"perf: {state}  ETA {600 - second}s")
    show.flush()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "perf: [3/5]  ok 3  running 1  ETA 600s"
    # printed at 0, 60, 120, 180 s; the change at 200 s; 260 s; the last at the end
    assert lines[4] == "perf: [4/5]  ok 4  running 1  ETA 400s", lines
    assert len(lines) == 7, lines
