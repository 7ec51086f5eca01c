"""reposim's own memory while a command prints a lot, and the output's throughput beside a plain
`cat` of the same bytes, in one run.

The command is `yes | head -c SIZE` (2 GiB by default). The reference pipes the same producer
into `cat > /dev/null`; ours runs it through `reposim exec` (stdout to /dev/null, no output cap)
on each backend, sampling reposim's resident memory every 20 ms and reading the kernel's
high-water mark (VmHWM). Target (issue 11): peak RSS < 200 MB. Each run also writes the whole
output as the trajectory's blob, hashed as it streams; the trajectory is deleted afterwards.

Run: uv run python bench/exec_output_memory.py [--size 2G] [--backends local,docker]
     [--image reposim/base:bookworm]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import table

from backends.output import format_size, parse_size

PRODUCER = "yes | head -c {size}"


def reference(size: int) -> float:
    """Seconds for `cat` to take `size` bytes from the same producer."""
    started = time.perf_counter()
    producer = subprocess.Popen(["bash", "-c", PRODUCER.format(size=size)], stdout=subprocess.PIPE)
    assert producer.stdout is not None
    cat = subprocess.run(["cat"], stdin=producer.stdout, stdout=subprocess.DEVNULL, check=True)
    producer.stdout.close()
    producer.wait()
    assert cat.returncode == 0
    return time.perf_counter() - started


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def ours(size: int, backend: str, image: str, workdir: Path) -> dict[str, float]:
    repo = workdir / "repo"
    trajectory = workdir / f"{backend}.jsonl"
    argv = [sys.executable, "-m", "reposim", "exec", "--output-cap", "none"]
    argv += ["--trajectory", str(trajectory), "--backend", backend]
    if backend == "docker":
        argv += ["--image", image]
    argv += [str(repo), "--", PRODUCER.format(size=size)]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    watched = psutil.Process(proc.pid)
    samples: list[int] = []
    hwm = 0
    while proc.poll() is None:
        try:
            samples.append(watched.memory_info().rss)
        except psutil.Error:
            break
        hwm = max(hwm, _hwm_kib(proc.pid))
        time.sleep(0.02)
    _, stderr = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"reposim exec failed on {backend}: {stderr.decode(errors='replace')}")
    events = [json.loads(line) for line in trajectory.read_text().splitlines()[1:]]
    result = next(e for e in events if e["kind"] == "exec.result")["payload"]
    assert result["output_bytes"] == size, result["output_bytes"]
    blob = trajectory.with_name(trajectory.name + ".blobs") / result["blobs"]["output"]
    assert blob.stat().st_size == size
    blob.unlink()
    return {
        "wall": wall,
        "command": float(result["duration"]),
        "hwm": hwm * 1024,
        "median_rss": statistics.median(samples) if samples else 0.0,
        "max_rss": max(samples, default=0),
    }


def mb(n: float) -> str:
    return f"{n / 1e6:.0f} MB"


def rate(size: int, seconds: float) -> str:
    return f"{size / seconds / 1e6:.0f} MB/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="2G", help="bytes the command prints (default 2G)")
    parser.add_argument("--backends", default="local,docker")
    parser.add_argument(
        "--image", default=os.environ.get("REPOSIM_TEST_IMAGE", "reposim/base:bookworm")
    )
    args = parser.parse_args()
    size = parse_size(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "repo").mkdir()
        (workdir / "repo" / "README").write_text("bench\n")
        cat_seconds = reference(size)
        rows = [("`cat` of the same bytes: throughput", rate(size, cat_seconds), "")]
        for backend in args.backends.split(","):
            run = ours(size, backend, args.image, workdir)
            rows += [
                (
                    f"{backend}: peak RSS of reposim (VmHWM)",
                    "target < 200 MB",
                    f"{mb(run['hwm'])}  ({'met' if run['hwm'] < 200e6 else 'NOT met'})",
                ),
                (
                    f"{backend}: RSS sampled every 20 ms",
                    "",
                    f"median {mb(run['median_rss'])}, max {mb(run['max_rss'])}",
                ),
                (
                    f"{backend}: throughput (command; whole run)",
                    rate(size, cat_seconds),
                    f"{rate(size, run['command'])}; {rate(size, run['wall'])} "
                    f"({cat_seconds / run['command']:.2f}x cat)",
                ),
            ]
    load = os.getloadavg()[0]
    print(
        table(
            f"reposim exec -- '{PRODUCER.format(size=args.size)}' ({format_size(size)}, output "
            f"streamed to a blob; load average {load:.1f} on {os.cpu_count()} CPUs)",
            rows,
        )
    )


if __name__ == "__main__":
    main()
