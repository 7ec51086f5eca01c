"""A command's output in bounded memory: a window for the UI and the model, the whole spooled
into the trajectory's blob, a cap that cuts and says so — on real processes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from backends.local import LocalBackend
from backends.output import DEFAULT_HEAD, DEFAULT_TAIL, OutputCapture
from simulator.describe import describe_event
from simulator.session import Session
from simulator.trajectory import blob_bytes, blob_dir, blob_path, read_trajectory
from tests.conftest import reposim, reposim_peak_rss


async def test_big_output_is_windowed_and_its_blob_is_whole(
    sample_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "big.jsonl"
    backend = LocalBackend(sample_repo, scratch_root=tmp_path / "scratch")
    async with await Session.open(sample_repo, backend=backend, trajectory_path=out) as session:
        # 20 MB of numbered lines: the head and the tail are recognisable.
        result = await session.exec("seq 1 2500000")
    expected = b"".join(b"%d\n" % n for n in range(1, 2500001))
    assert result.exit_code == 0
    assert result.output_size == len(expected) and result.output_lines == 2500000
    assert len(result.output) < DEFAULT_HEAD + DEFAULT_TAIL + 200
    assert result.output.startswith(b"1\n2\n3\n")
    assert result.output.endswith(b"2499999\n2500000\n")
    assert b"bytes of output left out here" in result.output
    recorded = read_trajectory(out).events
    end = next(e for e in recorded if e.kind == "exec.result")
    digest = end.payload["blobs"]["output"]
    assert digest == hashlib.sha256(expected).hexdigest()
    assert blob_bytes(out, digest) == expected
    # Kept compressed (issue 25 item 8): 20 MB of numbers take a fraction on disk.
    assert blob_path(out, digest).stat().st_size < len(expected) // 3
    assert len(out.read_text()) < 64 * 1024  # the line is shortened, not 20 MB
    assert not list(blob_dir(out).glob("*.partial"))
    # The summary counts every line the command printed, not those of the shortened text.
    assert "2500000 lines of output" in describe_event(end)


async def test_the_cap_stops_an_endless_command_and_says_so(
    sample_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cap.jsonl"
    backend = LocalBackend(sample_repo, scratch_root=tmp_path / "scratch")
    session = await Session.open(
        sample_repo, backend=backend, trajectory_path=out, output_cap=4 << 20
    )
    try:
        started = time.monotonic()
        result = await session.exec("yes", timeout=60)
        assert time.monotonic() - started < 30
        assert result.output_capped and not result.timed_out
        assert result.exit_code is None
        assert result.output_size == 4 << 20
        after = await session.exec("echo still here")
        assert after.output == b"still here\n"
    finally:
        await session.close()
    end = next(e for e in read_trajectory(out).events if e.kind == "exec.result")
    assert end.payload["output_capped"] is True and end.payload["output_cap"] == 4 << 20
    assert len(blob_bytes(out, end.payload["blobs"]["output"])) == 4 << 20
    assert blob_path(out, end.payload["blobs"]["output"]).stat().st_size < 1 << 20
    assert "output cut at the cap" in describe_event(end)


async def test_a_builtin_loop_past_the_cap_gets_a_new_shell(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    backend = LocalBackend(source, scratch_root=tmp_path / "scratch")
    await backend.start()
    try:
        capture = OutputCapture(cap=1 << 20)
        result = await backend.exec("while :; do echo y; done", capture=capture, timeout=60)
        assert result.output_capped and result.shell_restarted
        assert (await backend.exec("echo ok")).output == b"ok\n"
    finally:
        await backend.stop()


def test_reposim_exec_memory_does_not_grow_with_output(sample_repo: Path, tmp_path: Path) -> None:
    """300 MB through `reposim exec`: peak RSS stays far below the output's size."""
    out = tmp_path / "rss.jsonl"
    peak_kib, code, stderr = reposim_peak_rss(
        "exec", "--trajectory", str(out), str(sample_repo), "--", "yes | head -c 300M"
    )
    assert code == 0, stderr
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib // 1024} MiB for 300 MB of output"
    end = [json.loads(line) for line in out.read_text().splitlines()][-2]
    assert end["payload"]["output_bytes"] == 300 << 20


def test_reposim_exec_output_cap_stops_the_command_and_says_so(
    sample_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cap.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "reposim",
            "exec",
            "--output-cap",
            "2M",
            "--trajectory",
            str(out),
            str(sample_repo),
            "--",
            "yes",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 125
    assert len(proc.stdout) == 2 << 20
    assert b"output reached the 2 MiB cap" in proc.stderr
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "reposim",
            "exec",
            "--output-cap",
            "lots",
            str(sample_repo),
            "--",
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "--output-cap lots is not a size" in bad.stderr


def test_a_large_output_replays_as_the_same(sample_repo: Path, tmp_path: Path) -> None:
    """Verification compares a windowed output by its digest: the same command matches, a
    different one of the same size does not."""
    out = tmp_path / "big.jsonl"

    recorded = reposim("exec", "--trajectory", str(out), str(sample_repo), "--", "seq 1 300000")
    assert recorded.returncode == 0, recorded.stderr
    same = reposim("replay", str(out), "--verify", "--trajectory", str(tmp_path / "v.jsonl"))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "0 differ" in same.stdout
