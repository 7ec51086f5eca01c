"""Import then export of other tools' trajectories gives back the same JSON, on the real sample
files in tests/replay/data and on variations of them that the same tools write (issue 23)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.replay.replay_helpers import DATA

SWE_AGENT = sorted(DATA.glob("*.traj"))
MINI = sorted(DATA.glob("*.traj.json"))


def round_trip(data: Any, fmt: str, tmp_path: Path) -> Any:
    suffix = "traj" if fmt == "swe-agent" else "json"
    original = tmp_path / f"original.{suffix}"
    original.write_text(json.dumps(data, indent=2))
    imported, exported = tmp_path / "imported.jsonl", tmp_path / f"exported.{suffix}"
    for args in (
        ["import", str(original), "-o", str(imported)],
        ["export", str(imported), "--to", fmt, "-o", str(exported)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "reposim", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    return json.loads(exported.read_text())


def _without_times(data: dict[str, Any]) -> dict[str, Any]:
    """SWE-agent releases before `execution_time` was recorded, and replays, write none."""
    out = copy.deepcopy(data)
    for step in out.get("trajectory") or []:
        step.pop("execution_time", None)
    return out


def _sparse_steps(data: dict[str, Any]) -> dict[str, Any]:
    """Steps with only action/observation/thought (no `response`, no `state`) and one more
    field of a newer release, as other SWE-agent versions write them."""
    out = copy.deepcopy(data)
    for number, step in enumerate(out.get("trajectory") or []):
        for key in ("response", "state", "execution_time", "query", "extra_info"):
            step.pop(key, None)
        step["messages_seen"] = number
    return out


@pytest.mark.parametrize("sample", SWE_AGENT, ids=lambda p: p.name)
@pytest.mark.parametrize("variant", [None, _without_times, _sparse_steps])
def test_swe_agent_files_come_back_json_equal(sample: Path, variant: Any, tmp_path: Path) -> None:
    data = json.loads(sample.read_text())
    if variant is not None:
        data = variant(data)
    assert round_trip(data, "swe-agent", tmp_path) == data


def _current_form(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The same run in mini-swe-agent's current form: an object with `info`, messages carrying
    `extra` (and no `extra` on some), and `trajectory_format`."""
    out = []
    for number, message in enumerate(copy.deepcopy(messages)):
        if message["role"] == "assistant" and number % 4 == 2:
            message["extra"] = {"response": {"id": f"r{number}"}, "cost": 0.01 * number}
        elif message["role"] == "user" and number > 1 and number % 4 == 3:
            message["extra"] = {"returncode": 0, "timestamp": 1700000000.5 + number}
        out.append(message)
    return {
        "info": {
            "exit_status": "Submitted",
            "submission": "diff --git a/x b/x\n",
            "model_stats": {"instance_cost": 0.5, "api_calls": len(messages) // 2},
            "mini_version": "1.9.0",
            "config": {"model": {"model_name": "m"}, "agent": {"step_limit": 0}},
        },
        "messages": out,
        "trajectory_format": "mini-swe-agent-1.1",
    }


@pytest.mark.parametrize("sample", MINI, ids=lambda p: p.name)
@pytest.mark.parametrize("form", ["list", "object"])
def test_mini_swe_agent_files_come_back_json_equal(sample: Path, form: str, tmp_path: Path) -> None:
    data: Any = json.loads(sample.read_text())
    if form == "object":
        data = _current_form(data)
    assert round_trip(data, "mini-swe-agent", tmp_path) == data


def test_a_foreign_run_without_times_gets_no_invented_execution_time(tmp_path: Path) -> None:
    """mini-swe-agent records no durations: its steps exported to SWE-agent have none."""
    [sample] = MINI
    exported = tmp_path / "as-swe-agent.traj"
    imported = tmp_path / "imported.jsonl"
    for args in (
        ["import", str(sample), "-o", str(imported)],
        ["export", str(imported), "--to", "swe-agent", "-o", str(exported)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "reposim", *args], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    steps = json.loads(exported.read_text())["trajectory"]
    assert steps
    assert all("execution_time" not in step for step in steps)
