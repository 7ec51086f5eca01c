"""A mutant's run is cut by the CPU time its tests took on the reference, not by a fixed
wall-clock limit (issue 22, time per target and validity): on tomlkit 0.12.1, Source.consume's
looping mutants ran to the 10 s limit each (58 of the mutant runner's 120 s), and at load 17
mutants whose tests took 2 s of CPU, as on the reference, were cut at 10 s of wall time and
counted killed, while others of the same kind survived. Checked on the real runner (a
subprocess, pytest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from simulator.harness.mutate import reach_lines
from simulator.harness.runtime import source as runtime_source

COUNTDOWN = '''\
def countdown(n):
    """The steps from n down to zero."""
    steps = 0
    while n > 0:
        n -= 1
        steps += 1
    return steps
'''

HARNESS = """\
import time

from clock.count import countdown


def test_three():
    assert countdown(3) == 3


def test_none():
    assert countdown(0) == 0
"""

# a test that spends its time waiting, not computing (on a file, a socket; or a process the
# machine's load starves): its wall time says nothing about the mutant
WAITING = """

def test_after_a_wait():
    time.sleep(0.5)
    assert countdown(2) == 2
"""


def _run(root: Path, harness: str, mutated: dict[str, str], timeout: float) -> dict[str, Any]:
    (root / "clock").mkdir()
    (root / "clock" / "__init__.py").write_text("")
    (root / "clock" / "count.py").write_text(COUNTDOWN)
    (root / "test_countdown.py").write_text(harness)
    (root / "reposim_mutants.py").write_text(runtime_source("reposim_mutants"))
    spec = {
        "harness": "test_countdown.py",
        "module": "clock.count",
        "qualname": "countdown",
        "filename": "clock/count.py",
        "timeout": timeout,  # the spec's wall-clock limit of a mutant's run
        # (the harness's run on the reference first, with a limit of its own: a loaded machine
        # may stretch it, and it decides nothing here)
        "repeats": 1,
        "run_timeout": 300,
        "mutants": [
            {"id": name, "source": source, "lines": reach_lines(source, 4)}
            for name, source in mutated.items()
        ],
    }
    (root / "spec.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(root), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run(
        [sys.executable, "reposim_mutants.py", "spec.json", "out.json"],
        cwd=root,
        env=env,
        check=True,
        timeout=600,
    )
    report = json.loads((root / "out.json").read_text())
    return {r["id"]: r for r in report["mutants"]}


def test_a_looping_mutant_is_cut_by_the_cpu_time_of_its_tests(tmp_path: Path) -> None:
    mutated = {
        "loops": COUNTDOWN.replace("n -= 1", "n += 1"),  # never reaches zero
        "wrong": COUNTDOWN.replace("steps += 1", "steps += 2"),
    }
    results = _run(tmp_path, HARNESS, mutated, timeout=120)
    assert results["wrong"]["status"] == "killed" and results["wrong"]["how"] == "failed"
    loops = results["loops"]
    assert loops["status"] == "killed" and loops["how"] == "timeout"
    # its CPU limit: 1 s and ten times what its tests took on the reference (milliseconds);
    # the mutant is cut there, not after the 120 s the spec's wall-clock limit allows
    wall, cpu = loops["limits"]
    assert wall >= 120 and cpu < 5
    assert loops["cpu"] < 10


def test_a_mutant_whose_tests_wait_as_on_the_reference_is_not_killed_by_the_clock(
    tmp_path: Path,
) -> None:
    """A test that takes 0.5 s of wall time on the reference, with a spec's limit of 0.25 s:
    before, every mutant it ran for was cut and counted killed, even one that changes nothing
    (`n > 0` -> `n >= 1`, on integers); the wall-clock limit is now measured from the
    reference's own wall time."""
    mutated = {
        "same": COUNTDOWN.replace("while n > 0", "while n >= 1"),
        "wrong": COUNTDOWN.replace("while n > 0", "while n > 1"),
    }
    results = _run(tmp_path, HARNESS + WAITING, mutated, timeout=0.25)
    assert results["same"]["status"] == "survived", results["same"]
    assert results["same"]["tests"] == 3
    assert results["wrong"]["status"] == "killed" and results["wrong"]["how"] == "failed"
