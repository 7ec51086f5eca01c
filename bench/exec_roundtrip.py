"""Command round trip on the local backend: persistent shell vs a new subprocess per command.

Target (issue 2): the persistent shell at least 10x faster, median <= 1 ms.
Run: uv run python bench/exec_roundtrip.py [--n 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import ms, summary, table
from _timing import exec_round_trips

from backends.local import LocalBackend


def subprocess_per_command(n: int, cwd: Path) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], cwd=cwd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


async def persistent_shell(n: int, source: Path) -> list[float]:
    backend = LocalBackend(source, scratch_root=source.parent / "scratch")
    await backend.start()
    try:
        return await exec_round_trips(backend, n)
    finally:
        await backend.stop()


def _verdict(median: float) -> str:
    return f"<= 1 ms: {'met' if median <= 0.001 else 'NOT met'} ({ms(median)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500, help="commands per method")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / "file.txt").write_text("x\n")
        reference = subprocess_per_command(args.n, repo)
        ours = asyncio.run(persistent_shell(args.n, repo))
    ratio = statistics.median(reference) / statistics.median(ours)
    print(
        table(
            "local backend: command round trip (`true`)",
            [
                ("subprocess per command vs persistent shell", summary(reference), summary(ours)),
                ("speed-up (median)", "1x", f"{ratio:.1f}x   (target >= 10x)"),
                ("target median", "", _verdict(statistics.median(ours))),
            ],
        )
    )


if __name__ == "__main__":
    main()
