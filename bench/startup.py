"""Issue 29's rows from one run: each bench that prints one, in turn, on this tree, its output in
full with the load average before and after it (the issue's goals hold at load <= 4).

  - UI cold start beside a bare Textual app (ui_startup.py);
  - the terminal pane beside the kernel PTY ceiling and pyte (ui_terminal.py);
  - Docker session ready, cold and from the warm pool (32 at once), beside `docker run true`
    (docker_ready.py);
  - Gym `reset()` on Docker from the pool beside the local backend (gym_step.py; its step
    overhead, issue 17's row, comes first).

Each runs in its own process with this interpreter, one after the other (none overlaps another's
timing). A bench that fails is said and the next one runs.

    uv run python bench/startup.py [--quick]   (a few minutes on a quiet machine)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def steps(quick: bool) -> list[tuple[str, list[str]]]:
    return [
        ("UI cold start", ["ui_startup.py", "--runs", "3" if quick else "7"]),
        ("terminal pane", ["ui_terminal.py", "--mb", "10" if quick else "50"]),
        ("Docker session ready and the warm pool", ["docker_ready.py", "5" if quick else "10"]),
        (
            "Gym reset from the pool",
            ["gym_step.py", "--n", "100", "--resets", "10" if quick else "20"],
        ),
    ]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs each (a loaded machine)")
    parser.add_argument("--only", help="run only the benches whose title contains this")
    args = parser.parse_args()
    when = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    print(f"issue 29 start-up rows, {when}, {os.cpu_count()} cores")
    failed = []
    for title, argv in steps(args.quick):
        if args.only and args.only.lower() not in title.lower():
            continue
        print(f"\n== {title}: {' '.join(argv)}  (load 1/5/15 min before: {load()})", flush=True)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(HERE / argv[0]), *argv[1:]], check=False)
        seconds = time.perf_counter() - started
        ended = f"exit {done.returncode}, {seconds:.0f} s, load after: {load()}"
        print(f"-- {title}: {ended}", flush=True)
        if done.returncode:
            failed.append(title)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
