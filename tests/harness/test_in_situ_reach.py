"""The mutant runner's reach pass (which of the target's lines each harness test runs) runs a
check in situ's repository test as it is: no copies of the arguments, no calls of the reference,
which the first run on the reference made already (issue 22, time per target: on tomlkit
0.12.1's Parser._parse_quoted_key, the checks in situ made again in the reach pass were 6.9 of
the runner's 16.5 s of CPU). The verdicts are the same; checked on the real runner (a
subprocess, pytest, the support module a harness imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulator.harness.mutate import reach_lines
from simulator.harness.runtime import source as runtime_source

CART = '''\
import threading

COPIES = "copies.log"  # one line per copy of a cart, whoever makes it


class Cart:
    """Holds a lock: no pickle keeps it, so its calls are checked in situ."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def __deepcopy__(self, memo):
        with open(COPIES, "a") as handle:
            handle.write("copy\\n")
        made = Cart.__new__(Cart)
        made.lock, made.items = self.lock, list(self.items)  # one lock, as a deep copy keeps
        return made


def add(cart, price):
    cart.items.append(price)
    return sum(cart.items)
'''

TESTS = """\
from shop.cart import Cart, add


def test_add():
    cart = Cart()
    assert add(cart, 2) == 2
    assert add(cart, 3) == 5
"""

HARNESS = """\
import pytest

from reposim_harness_support import check_in_situ, load_candidate

TARGET = {"path": "shop/cart.py", "module": "shop.cart", "qualname": "add"}
IN_SITU = [
    dict(test="tests/test_cart.py::test_add", call=1),
    dict(test="tests/test_cart.py::test_add", call=2),
]
candidate = load_candidate(TARGET)


@pytest.mark.parametrize("case", IN_SITU, ids=["s0", "s1"])
def test_in_situ(case):
    check_in_situ(candidate, TARGET, IN_SITU, **case)
"""


def _run(root: Path, mutated: dict[str, tuple[str, int]], repeats: int) -> dict[str, Any]:
    files = {
        "shop/__init__.py": "",
        "shop/cart.py": CART,
        "tests/test_cart.py": TESTS,
        ".reposim/reference/shop/cart.py": CART,
        ".reposim/harness/test_cart_add.py": HARNESS,
        ".reposim/harness/reposim_harness_support.py": runtime_source("reposim_harness_support"),
        "reposim_mutants.py": runtime_source("reposim_mutants"),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    spec = {
        "harness": ".reposim/harness/test_cart_add.py",
        "module": "shop.cart",
        "qualname": "add",
        "filename": "shop/cart.py",
        "timeout": 120,
        # with no repeats, one baseline run of the harness (-x), as when mutants are remade
        **({"repeats": repeats, "run_timeout": 300} if repeats else {}),
        "mutants": [
            {"id": name, "source": source, "lines": reach_lines(source, line)}
            for name, (source, line) in mutated.items()
        ],
    }
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
    report = json.loads((root / "out.json").read_text())
    assert report["baseline"]["passed"], report
    if repeats:
        tests = [f".reposim/harness/test_cart_add.py::test_in_situ[{c}]" for c in ("s0", "s1")]
        assert report["runs"] == [dict.fromkeys(tests, "passed")], report.get("log")
    return report


@pytest.mark.parametrize("repeats", [1, 0])
def test_the_reach_pass_runs_the_repository_test_without_the_checks_in_situ(
    tmp_path: Path, repeats: int
) -> None:
    mutated = {
        "appends": (CART.replace("append(price)", "append(price * 2)"), 22),
        "sums": (CART.replace("return sum(cart.items)", "return sum(cart.items) + 1"), 23),
    }
    report = _run(tmp_path, mutated, repeats)
    results = {r["id"]: r for r in report["mutants"]}
    for name in mutated:
        # both harness tests run the mutated line (the reach pass saw them reach it), and the
        # first check in situ tells the mutant from the reference
        assert results[name]["status"] == "killed" and results[name]["how"] == "failed"
        assert results[name]["tests"] == 2
        # a CPU limit, from a cost measured (the first run's, the checks in situ included)
        assert results[name]["limits"][1] is not None
    copies = (tmp_path / "copies.log").read_text().splitlines()
    # the first run on the reference (or the baseline run) copies the cart of each of the two
    # calls it checks; each mutant's run, the cart of the first call, whose difference fails
    # the test. The reach pass copies none (before, it made the first run's two again: 6)
    assert len(copies) == 2 + len(mutated)
