"""A command's output in a container, through `reposim exec --backend docker`: reposim's memory
stays bounded however much the command prints, and the whole output is the trajectory's blob."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from simulator.trajectory import blob_bytes
from tests.conftest import reposim_peak_rss
from tests.docker.conftest import TEST_IMAGE


def test_reposim_exec_in_a_container_keeps_memory_bounded(
    sample_repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rss.jsonl"
    size = 100 << 20
    peak_kib, code, stderr = reposim_peak_rss(
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
        timeout=600,
    )
    assert code == 0, stderr
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib // 1024} MiB for 100 MiB of output"
    end = next(
        e for e in map(json.loads, out.read_text().splitlines()[1:]) if e["kind"] == "exec.result"
    )
    assert end["payload"]["output_bytes"] == size
    digest = end["payload"]["blobs"]["output"]
    assert hashlib.sha256(blob_bytes(out, digest)).hexdigest() == digest
