"""The mutant runner runs a mutant only against the tests that reach the statement it changes
(issue 22, time per target: on the marshmallow sample of stop 36 the harness's mutant runs were
1,170 of 1,447 s, every test of a harness run against every surviving mutant). A test that never
runs the mutated statement takes the same path on the mutant as on the reference: it cannot kill
it. Checked on the real runner (a subprocess, pytest, the mutants `mutate.mutants` makes): the
verdicts are the same as when every test runs, with fewer test runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from simulator.harness.mutate import mutants, reach_lines
from simulator.harness.runtime import source as runtime_source

SHIPPING = '''\
def shipping(weight, express):
    """The shipping cost of a parcel."""
    if express:
        cost = 10 + weight * 2
        return cost
    if weight > 20:
        return 15
    return 5
'''

# three tests, each reaching one part of the function (none reaches `return 15`)
HARNESS = """\
from shop.rules import shipping


def test_express():
    assert shipping(3, True) == 16


def test_light():
    assert shipping(3, False) == 5


def test_never_heavy():
    assert shipping(0, False) == 5
"""


# the same checks made in situ: each reruns a repository test with the target swapped (the
# support module keeps one run of a test per candidate, so the runs on the reference made
# before the mutants must not hide what the tests reach)
IN_SITU_HARNESS = """\
import pytest

from reposim_harness_support import check_in_situ, load_candidate

TARGET = {"path": "shop/rules.py", "module": "shop.rules", "qualname": "shipping"}
candidate = load_candidate(TARGET)
IN_SITU = [
    dict(test="tests/test_shop.py::test_express", call=1),
    dict(test="tests/test_shop.py::test_light", call=1),
]


@pytest.mark.parametrize("case", IN_SITU, ids=["s0", "s1"])
def test_in_situ(case):
    check_in_situ(candidate, TARGET, IN_SITU, **case)
"""


def _run(
    tmp_path: Path,
    found: list[Any],
    select: bool,
    harness: str = "test_shipping.py",
    repeats: int = 0,
) -> dict[str, dict[str, Any]]:
    source = SHIPPING
    spec = {
        "harness": harness,
        "repeats": repeats,
        "module": "shop.rules",
        "qualname": "shipping",
        "filename": "shop/rules.py",
        "timeout": 60,
        "select": select,
        "mutants": [
            {"id": m.id, "source": m.source, "lines": reach_lines(source, m.line)} for m in found
        ],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    path = f"{tmp_path}:{tmp_path / '.reposim' / 'harness'}"
    env = {**os.environ, "PYTHONPATH": path, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run(
        [sys.executable, "reposim_mutants.py", "spec.json", "out.json"],
        cwd=tmp_path,
        env=env,
        check=True,
        timeout=300,
    )
    report = json.loads((tmp_path / "out.json").read_text())
    return {r["id"]: r for r in report["mutants"]}


def test_a_mutant_runs_only_the_tests_that_reach_its_statement(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "rules.py").write_text(SHIPPING)
    (tmp_path / "test_shipping.py").write_text(HARNESS)
    (tmp_path / "reposim_mutants.py").write_text(runtime_source("reposim_mutants"))
    found = mutants(SHIPPING, 1, "shipping", limit=None)
    assert reach_lines(SHIPPING, 4) == [4]  # a simple statement: its own line
    assert reach_lines(SHIPPING, 6) == [6, 7]  # an if: its test and its body
    selected = _run(tmp_path, found, select=True)
    everything = _run(tmp_path, found, select=False)
    # the same verdict for every mutant either way
    assert {k: r["status"] for k, r in selected.items()} == {
        k: r["status"] for k, r in everything.items()
    }
    assert {r["status"] for r in selected.values()} == {"killed", "survived"}
    by_line = {m.id: m.line for m in found}
    for mutant_id, result in selected.items():
        line = by_line[mutant_id]
        if line in (4, 5):  # the express branch: test_express alone reaches it
            assert result["tests"] == 1, (line, result)
        if line == 7:  # `return 15`: no test reaches it, so it survives without a run
            assert result["tests"] == 0 and result["how"] == "no test reaches it"
            assert result["status"] == "survived"
    assert sum(r["tests"] for r in selected.values()) < 3 * len(selected)


def test_checks_in_situ_run_for_the_mutants_their_tests_reach(tmp_path: Path) -> None:
    """After the harness's runs on the reference (in the same process), a check in situ's
    test had a kept run: traced again on the reference it ran nothing, and every mutant was
    let through untested (marshmallow's Field._bind_to_schema: mutation 100% -> 0%)."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "rules.py").write_text(SHIPPING)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shop.py").write_text(HARNESS.replace("test_never_heavy", "t_no"))
    harness = tmp_path / ".reposim" / "harness"
    harness.mkdir(parents=True)
    (harness / "test_in_situ.py").write_text(IN_SITU_HARNESS)
    (harness / "reposim_harness_support.py").write_text(runtime_source("reposim_harness_support"))
    (tmp_path / ".reposim" / "reference" / "shop").mkdir(parents=True)
    (tmp_path / ".reposim" / "reference" / "shop" / "rules.py").write_text(SHIPPING)
    (tmp_path / "reposim_mutants.py").write_text(runtime_source("reposim_mutants"))
    found = mutants(SHIPPING, 1, "shipping", limit=None)
    where = ".reposim/harness/test_in_situ.py"
    selected = _run(tmp_path, found, select=True, harness=where, repeats=1)
    everything = _run(tmp_path, found, select=False, harness=where, repeats=1)
    assert {k: r["status"] for k, r in selected.items()} == {
        k: r["status"] for k, r in everything.items()
    }
    by_line = {m.id: m.line for m in found}
    express = [r for k, r in selected.items() if by_line[k] in (4, 5)]
    assert express and all(r["status"] == "killed" and r["tests"] >= 1 for r in express)
