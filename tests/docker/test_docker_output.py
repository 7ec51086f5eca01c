"""A command's output in a container, through `reposim exec --backend docker`: reposim's memory
stays bounded however much the command prints, and the whole output is the trajectory's blob."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from simulator.trajectory import blob_bytes
from tests.docker.conftest import TEST_IMAGE


def test_reposim_exec_in_a_container_keeps_memory_bounded(
    sample_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rss.jsonl"
    size = 100 << 20
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, subprocess, sys; "
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)",
            sys.executable,
            "-m",
            "reposim",
            "exec",
            "--backend",
            "docker",
            "--image",
            TEST_IMAGE,
            "--trajectory",
            str(out),
            str(sample_repo),
            "--",
            f"yes | head -c {size}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    peak_kib, code = map(int, proc.stdout.split())
    assert code == 0, proc.stderr
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib // 1024} MiB for 100 MiB of output"
    end = next(
        e for e in map(json.loads, out.read_text().splitlines()[1:]) if e["kind"] == "exec.result"
    )
    assert end["payload"]["output_bytes"] == size
    digest = end["payload"]["blobs"]["output"]
    assert hashlib.sha256(blob_bytes(out, digest)).hexdigest() == digest
