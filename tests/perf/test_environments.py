"""Per-revision environments on real git repositories: made from the revision's own tree, kept,
reused by the next compare; environments the user made, one per side."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pyperf
import pytest

from simulator.events import Kind
from simulator.perf import CompareRequest, MeasureSettings, compare
from simulator.trajectory import read_trajectory
from tests.perf.conftest import TEST_DATA_NAMES, HarnessRequest

SETTINGS = MeasureSettings(rounds=1, processes=2, values=2, min_time=0.01, timer="cpu")


def installed(python: str) -> str:
    """The distributions installed for `python`, lower-case, as a list's text."""
    script = "import importlib.metadata as m; print([d.name for d in m.distributions()])"
    return subprocess.run(
        [python, "-c", script], capture_output=True, text=True, check=True
    ).stdout.lower()


def setup_steps(trajectory: str) -> list[dict[str, object]]:
    """The perf workflow's finished `setup` steps (their details)."""
    return [
        e.payload.get("detail") or {}
        for e in read_trajectory(Path(trajectory)).events
        if e.kind == Kind.WORKFLOW_STEP
        and e.payload["workflow"] == "perf.compare"
        and e.payload["step"] == "setup"
        and e.payload["status"] != "running"
    ]


async def test_setup_uses_the_revisions_own_tree_and_the_second_compare_reuses_it(
    own_requirements_repo: Path, harness_request: HarnessRequest
) -> None:
    def request(out: str) -> CompareRequest:
        return harness_request(own_requirements_repo, out, setup=True, settings=SETTINGS)

    # A's code imports perfhelper, which only A's requirements.txt installs: HEAD has neither,
    # so an environment detected from HEAD fails A's quickcheck
    first = await compare(request("first"))
    made = setup_steps(first.files["trajectory_a"])
    assert [d["reused"] for d in made] == [False], made
    assert first.verdict.speedup > 1, first.summary()
    # the names the test data imports were installed at neither revision
    for side in ("a", "b"):
        python = str(setup_steps(first.files[f"trajectory_{side}"])[0]["python"])
        listed = await asyncio.to_thread(installed, python)
        assert "perfhelper" in listed or side == "b", listed
        for name in TEST_DATA_NAMES:
            assert f"'{name}'" not in listed, (side, name, listed)

    t0 = time.monotonic()
    second = await compare(request("second"))
    took = time.monotonic() - t0
    for side in ("a", "b"):
        steps = setup_steps(second.files[f"trajectory_{side}"])
        assert [d["reused"] for d in steps] == [True], steps
        # no setup workflow ran in the second compare's sessions
        workflows = {
            e.payload["workflow"]
            for e in read_trajectory(Path(second.files[f"trajectory_{side}"])).events
            if e.kind == Kind.WORKFLOW_STEP
        }
        assert workflows == {"perf.compare"}
    assert setup_steps(second.files["trajectory_a"])[0]["python"] == made[0]["python"]
    seconds = sum(
        float(e.payload.get("seconds") or 0)
        for side in ("a", "b")
        for e in read_trajectory(Path(second.files[f"trajectory_{side}"])).events
        if e.kind == Kind.WORKFLOW_STEP
        and e.payload["step"] in ("checkout", "setup")
        and e.payload["status"] == "ok"
    )
    assert seconds <= 10, (seconds, took)
    # the user's checkout is untouched: still at b, without A's requirements
    assert not (own_requirements_repo / "requirements.txt").exists()


@pytest.fixture
def user_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "user-venv"
    subprocess.run(["uv", "venv", "-q", str(venv)], check=True)
    return venv


async def test_each_side_runs_in_the_environment_the_user_made(
    twox_repo: Path, harness_request: HarnessRequest, user_venv: Path
) -> None:
    venv = user_venv
    result = await compare(
        harness_request(
            twox_repo,
            "out",
            settings=SETTINGS,
            python_a=str(venv / "bin" / "python"),
            python_b=sys.executable,
        )
    )
    executables = {
        side: pyperf.Benchmark.load(result.files[side]).get_metadata()["python_executable"]
        for side in ("a", "b")
    }
    assert executables["a"] == str(venv / "bin" / "python")
    assert executables["b"] == sys.executable
