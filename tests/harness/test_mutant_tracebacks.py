"""The mutant runner's pytest does not render a failure's traceback from the source of the files
it passes through (issue 22, time per target): pytest's default traceback parses the whole file
of every frame it shows, for every failure. On sqlparse 0.4.4, ReindentFilter's
_flatten_up_to_token has a 3.2 MB harness: each failure cost 1.4 s of CPU to parse it, and the
target took 1,034.6 s of the corpus's sqlparse run (1,392.8 s). A killed mutant is a failure,
and so is every case of a harness that fails on the reference. The verdicts are the same, and
a reference run that fails still says why. Checked on the real runner (a subprocess, pytest),
counting pytest's parses of source for a traceback (`ast.parse(text, "source")`, in
_pytest._code.source.getstatementrange_ast) from the harness and the repository's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from simulator.dataset.schema import Validation
from simulator.harness.mutate import reach_lines
from simulator.harness.runtime import source as runtime_source
from simulator.harness.workflow import _first_failure

SCALE = '''\
def scale(values, factor):
    """Each value times factor, negatives clipped to zero."""
    out = []
    for value in values:
        out.append(max(0, value * factor))
    return out
'''

# counts pytest's parses of a file's source to show a failure (`ast.parse(text, "source")`)
COUNTING = """\
import ast

_parse = ast.parse


def _counted(source, filename="<unknown>", *args, **kwargs):
    if filename == "source":
        with open("parses.log", "a") as handle:
            handle.write(f"{len(source)}\\n")
    return _parse(source, filename, *args, **kwargs)


ast.parse = _counted
"""

HARNESS = """\
from reposim_harness_support import check_call, load_candidate

import counting  # noqa: F401

TARGET = {"path": "calc/ops.py", "module": "calc.ops", "qualname": "scale"}
candidate = load_candidate(TARGET)


def test_doubles():
    check_call(candidate, args=([1, 2], 2), returns=[2, 4])


def test_clips():
    check_call(candidate, args=([-1, 3], 3), returns=RETURNS)
"""

TESTS = """\
import counting  # noqa: F401

from calc.ops import scale


def test_scale():
    assert scale([1, 2], 2) == [2, 4]
    assert scale([-1, 3], 3) == [0, 9]
"""

MUTANTS = {
    "times": (SCALE.replace("value * factor", "value + factor"), 5),
    "clip": (SCALE.replace("max(0, value * factor)", "value * factor"), 5),
    "append": (SCALE.replace("out.append(max", "out.insert(0, max"), 5),
}


def _run(root: Path, *, returns: str, suite: bool) -> dict[str, Any]:
    files = {
        "calc/__init__.py": "",
        "calc/ops.py": SCALE,
        "counting.py": COUNTING,
        "tests/test_ops.py": TESTS,
        ".reposim/reference/calc/ops.py": SCALE,
        ".reposim/harness/test_calc_ops_scale.py": HARNESS.replace("RETURNS", returns),
        ".reposim/harness/reposim_harness_support.py": runtime_source("reposim_harness_support"),
        "reposim_mutants.py": runtime_source("reposim_mutants"),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    spec: dict[str, Any] = {
        "harness": "" if suite else ".reposim/harness/test_calc_ops_scale.py",
        "module": "calc.ops",
        "qualname": "scale",
        "filename": "calc/ops.py",
        "timeout": 120,
        "mutants": [
            {"id": name, "source": source, "lines": reach_lines(source, line)}
            for name, (source, line) in MUTANTS.items()
        ],
    }
    if suite:
        spec["tests"] = ["tests/test_ops.py::test_scale"]
    else:
        spec.update(repeats=1, run_timeout=300)
    (root / "spec.json").write_text(json.dumps(spec))
    path = f"{root}:{root / '.reposim' / 'harness'}"
    env = {**os.environ, "PYTHONPATH": path, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run(
        [sys.executable, "reposim_mutants.py", "spec.json", "out.json"],
        cwd=root,
        env=env,
        check=True,
        timeout=600,
    )
    return json.loads((root / "out.json").read_text())


def _parses(root: Path) -> list[str]:
    log = root / "parses.log"
    return log.read_text().splitlines() if log.exists() else []


def test_killed_mutants_are_not_rendered_from_source_and_the_verdicts_stand(
    tmp_path: Path,
) -> None:
    report = _run(tmp_path, returns="[0, 9]", suite=False)
    assert report["baseline"]["passed"], report
    statuses = {r["id"]: (r["status"], r["how"]) for r in report["mutants"]}
    # each mutant fails a case of the harness (the first run's failure kills it)
    assert statuses == dict.fromkeys(MUTANTS, ("killed", "failed"))
    # three failures, none shown from the source of its files (before: 9 parses, the source of
    # three files per failure, the harness's and the support module's among them)
    assert _parses(tmp_path) == []


def test_the_suites_failures_on_mutants_are_not_rendered_from_source(tmp_path: Path) -> None:
    report = _run(tmp_path, returns="[0, 9]", suite=True)
    assert report["baseline"]["passed"] and report["baseline"]["tests"], report
    statuses = {r["id"]: r["status"] for r in report["mutants"]}
    assert statuses == dict.fromkeys(MUTANTS, "killed")
    assert _parses(tmp_path) == []  # (before: 6, two per mutant, the test module's among them)


def test_a_harness_failing_on_the_reference_still_says_why(tmp_path: Path) -> None:
    report = _run(tmp_path, returns="[-3, 9]", suite=False)
    assert not report["baseline"]["passed"]
    outcomes = report["runs"][0]
    assert outcomes[".reposim/harness/test_calc_ops_scale.py::test_clips"] == "failed"
    assert outcomes[".reposim/harness/test_calc_ops_scale.py::test_doubles"] == "passed"
    assert _parses(tmp_path) == []  # (before: 3, the harness's among them)
    # what the run printed names the difference, and the first failure is read from it
    assert "returned [0, 9], the reference returned [-3, 9]" in report["log"]
    cause = _first_failure(Validation(log=report["log"]))
    assert cause.startswith("AssertionError: returned [0, 9], the reference returned [-3, 9]")
