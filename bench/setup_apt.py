"""A Debian package in a fresh setup container: package lists fetched there (the reference,
what every setup container did before) vs. the host's copy for the image put in.

    uv run python bench/setup_apt.py [--rounds 4] [--package python3-dev] [--cpus 1]

Each round starts two containers of the setup image (network on, the CPU limit of a corpus
run), in alternating order, and times `ensure_lists` + `apt-get install PACKAGE` in each
(simulator/setup/aptlists.py, the ladder's own calls): one with no host copy (it fetches), one
with the copy the first round left. Wall time and the container's CPU time (the engine's
stats) are both printed, with the load: at load the wall time is mostly the machine's.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _docker_common import load_note
from _report import arguments, percentile, table

from backends.docker_engine import connect
from simulator.setup.aptlists import APT, Lists, ensure_lists, run_as_root
from simulator.setup.runner import DEFAULT_IMAGE


def cpu_seconds(client: object, container: str) -> float:
    stats = client.api.stats(container, stream=False, one_shot=True)  # type: ignore[attr-defined]
    return int(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9


async def one(image_id: str | None, package: str, cpus: float) -> tuple[float, float, Lists]:
    client = connect()
    box = client.containers.run(
        DEFAULT_IMAGE,
        ["sleep", "900"],
        detach=True,
        network_mode="bridge",
        nano_cpus=int(cpus * 1e9),
        labels={"reposim.bench": "setup_apt"},
    )
    try:
        before = cpu_seconds(client, box.id)
        started = time.monotonic()
        lists = await ensure_lists(box.id, image_id)
        code, out = await run_as_root(
            box.id,
            f"DEBIAN_FRONTEND=noninteractive {APT} install -y -qq --no-install-recommends "
            '-- "$@" >/dev/null 2>&1',
            [package],
            timeout=900,
        )
        wall = time.monotonic() - started
        after = cpu_seconds(client, box.id)
        if code != 0:
            raise SystemExit(f"apt-get install {package} failed: {out[-300:]}")
        return wall, after - before, lists
    finally:
        box.remove(force=True)
        client.close()


def spread(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):.1f} s, p95 {percentile(values, 0.95):.1f}, "
        f"min {min(values):.1f}, max {max(values):.1f} (n={len(values)})"
    )


async def main() -> int:
    args = arguments(__doc__.split("\n")[0], rounds=4, package="python3-dev", cpus=1.0)
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="reposim-bench-apt-")
    client = connect()
    image_id = str(client.images.get(DEFAULT_IMAGE).id)
    client.close()
    print(f"start: {load_note()}")
    await one(image_id, args.package, args.cpus)  # leaves the host copy (not timed)
    fetched: list[tuple[float, float]] = []
    cached: list[tuple[float, float]] = []
    for round_no in range(args.rounds):
        order = [None, image_id] if round_no % 2 == 0 else [image_id, None]
        for key in order:
            wall, cpu, lists = await one(key, args.package, args.cpus)
            (cached if lists is Lists.CACHED else fetched).append((wall, cpu))
    print(f"end: {load_note()}")
    ratio = statistics.median([w for w, _ in cached]) / statistics.median([w for w, _ in fetched])
    print(
        table(
            f"apt-get install {args.package} in a fresh {DEFAULT_IMAGE} container "
            f"({args.cpus:g} CPU), lists included",
            [
                ("wall", f"fetched {spread([w for w, _ in fetched])}",
                 f"host copy {spread([w for w, _ in cached])}"),
                ("container CPU", f"fetched {spread([c for _, c in fetched])}",
                 f"host copy {spread([c for _, c in cached])}"),
                ("ratio of medians (wall)", "-", f"{ratio:.2f}x"),
            ],
        )
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
