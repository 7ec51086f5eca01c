"""`perf compare` on the Docker backend: one container per side, pinned to the timing CPU."""

from __future__ import annotations

import os
from pathlib import Path

import pyperf

from simulator.perf import CompareRequest, MeasureSettings, compare
from tests.conftest import RepoFactory, git
from tests.docker.conftest import TEST_IMAGE
from tests.perf.conftest import core, write

HARNESS = (
    "from fastlib.core import checksum\n\nDATA = list(range(3000))\n\n\n"
    "def bench():\n    checksum(DATA)\n"
)


async def test_compare_in_containers_pinned_to_one_cpu(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo({"fastlib/__init__.py": "", "fastlib/core.py": core(2)}, name="fastlib")
    git(repo, "tag", "a")
    write(repo, {"fastlib/core.py": core(1)}, "Compute the checksum once instead of twice")
    harness = tmp_path / "bench_checksum.py"
    harness.write_text(HARNESS)
    cpu = str(max(os.sched_getaffinity(0)))
    result = await compare(
        CompareRequest(
            repo,
            "a",
            "HEAD",
            api="fastlib.core.checksum",
            harness=harness,
            out_dir=tmp_path / "out",
            settings=MeasureSettings.quick(timer="cpu"),
            backend="docker",
            backend_options={"image": TEST_IMAGE},
        )
    )
    env = result.environment
    # each container sees only the CPU its workers are pinned to
    assert env["cpus_visible"] == {"A": f"[{cpu}]", "B": f"[{cpu}]"}
    assert f"each container pinned to CPU {cpu}" in env["isolation"]
    assert env["backend"] == "docker" and env["python"].startswith("3.")
    # the runs came back from the containers as pyperf JSON
    assert pyperf.Benchmark.load(result.files["a"]).get_nrun() >= 4
    assert 1.3 < result.verdict.speedup < 3.5, result.summary()
