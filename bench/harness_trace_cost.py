"""CPU cost of the traced test run (issue 22 item 4): the tracer of another revision and ours,
on the same project, targets and tests, in one run.

    uv run python bench/harness_trace_cost.py --before REV [--project sqlparse-0.4.4]
        [--tests tests/test_grouping.py ...] [--rounds 2]

The project is one of the harness corpus (bench/harness_corpus_build.py sets it up; its venv is
the one `reposim setup` left). Every target `--filter r2e` selects is traced. The tracer's files
(simulator/harness/runtime/) of revision REV are taken with `git show`; ours are the working
tree's. Each round runs both, alternating, and the figure is the child's user+system CPU time
(from getrusage: the machine's load stretches wall time, not CPU time); wall time and the load
are printed beside. Both runs must choose the same number of calls per target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness_corpus_build import DEFAULT_DEST, venv_python

from bench._report import table
from simulator.harness.target import find_targets

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = "simulator/harness/runtime"
FILES = ("reposim_tracer.py", "reposim_harness_support.py")


def runtime_of(revision: str, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:{RUNTIME}/{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (into / name).write_text(text)
    return into


def cloudpickle_dir() -> str:
    import cloudpickle  # type: ignore[import-untyped]

    return str(Path(cloudpickle.__file__).resolve().parent.parent)


def trace_once(
    python: Path, repo: Path, runtime: Path, spec: Path, out: Path, tests: list[str]
) -> tuple[float, float, dict[str, int]]:
    """(CPU seconds, wall seconds, calls chosen per target) of one traced run."""
    env = {
        **os.environ,
        "REPOSIM_TRACE_SPEC": str(spec),
        "REPOSIM_TRACE_OUT": str(out),
        "PYTHONPATH": f"{runtime}:{cloudpickle_dir()}",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(
        [str(python), "-m", "pytest", "-p", "reposim_tracer", "-p", "no:cacheprovider", "-q",
         "--continue-on-collection-errors", *tests],
        cwd=repo, env=env, capture_output=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    chosen = {k: len(v) for k, v in json.loads(out.read_text())["calls"].items()}
    return cpu, wall, chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the revision whose tracer is compared")
    parser.add_argument("--project", default="sqlparse-0.4.4")
    parser.add_argument("--tests", nargs="*", default=[])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    repo = DEFAULT_DEST / args.project
    python = venv_python(args.project)
    targets = find_targets(repo)
    with tempfile.TemporaryDirectory(prefix="reposim-trace-cost-") as scratch:
        work = Path(scratch)
        spec = work / "spec.json"
        spec.write_text(
            json.dumps(
                {
                    "root": str(repo),
                    "targets": [
                        {"id": t.id, "path": t.path, "qualname": t.qualname} for t in targets
                    ],
                }
            )
        )
        runtimes = {"before": runtime_of(args.before, work / "before"), "ours": ROOT / RUNTIME}
        cpu: dict[str, list[float]] = {"before": [], "ours": []}
        wall: dict[str, list[float]] = {"before": [], "ours": []}
        chosen: dict[str, dict[str, int]] = {}
        loads = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            for label, runtime in runtimes.items():
                c, w, calls = trace_once(
                    python, repo, runtime, spec, work / f"{label}.json", args.tests
                )
                cpu[label].append(c)
                wall[label].append(w)
                chosen[label] = calls
                loads.append(os.getloadavg()[0])
    same = chosen["before"] == chosen["ours"]
    ratio = statistics.median(cpu["ours"]) / statistics.median(cpu["before"])
    kept = {k: "same" if same else str(v) for k, v in chosen.items()}
    setting = f"{len(targets)}, {args.rounds}"
    rows = [
        (
            "traced run, CPU s (median, min-max)",
            f"{statistics.median(cpu['before']):.1f} ({min(cpu['before']):.1f}-"
            f"{max(cpu['before']):.1f})",
            f"{statistics.median(cpu['ours']):.1f} ({min(cpu['ours']):.1f}-{max(cpu['ours']):.1f})",
        ),
        (
            "traced run, wall s (median)",
            f"{statistics.median(wall['before']):.1f}",
            f"{statistics.median(wall['ours']):.1f}",
        ),
        ("ratio ours/before (CPU)", "1.00", f"{ratio:.2f}"),
        ("calls chosen per target", kept["before"], kept["ours"]),
        ("targets, rounds, load (1 min) min-max", setting, f"{min(loads):.1f}-{max(loads):.1f}"),
    ]
    print(table(f"Traced test run of {args.project} (before {args.before} | ours)", rows))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
