"""Headless commands never load the UI: each runs for real in its own process, and `textual`
(and `widgets`) must be absent from its `sys.modules` when it exits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Runs the real `reposim` entry point; at exit (commands end in sys.exit) it writes the names of
# every module the command imported.
PROBE = """
import atexit, json, sys

dump_to = sys.argv[1]

def dump() -> None:
    with open(dump_to, "w") as out:
        json.dump(sorted(sys.modules), out)

atexit.register(dump)
sys.argv = ["reposim", *sys.argv[2:]]
from reposim.cli import main
main()
"""


def loaded_by(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    dump = tmp_path / f"modules-{args[0]}.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(dump), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dump.is_file(), f"reposim {' '.join(args)} did not run to its exit: {done.stderr}"
    return done, set(json.loads(dump.read_text()))


def assert_headless(modules: set[str]) -> None:
    ui = sorted(m for m in modules if m.split(".")[0] in ("textual", "widgets"))
    assert ui == [], f"a headless command imported {ui[:5]}"


def test_session_and_trajectory_commands_never_load_textual(
    sample_repo: Path, tmp_path: Path
) -> None:
    recorded = tmp_path / "exec.jsonl"
    done, modules = loaded_by(
        tmp_path, "exec", str(sample_repo), "--trajectory", str(recorded), "--", "echo", "hi"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hi\n"
    assert_headless(modules)

    done, modules = loaded_by(
        tmp_path, "test", str(sample_repo), "--trajectory", str(tmp_path / "test.jsonl")
    )
    assert done.returncode == 1, done.stderr  # the sample suite has a failure
    assert "1 failed" in done.stdout
    assert_headless(modules)

    done, modules = loaded_by(tmp_path, "trajectory", "show", str(recorded))
    assert done.returncode == 0, done.stderr
    assert "echo hi" in done.stdout
    assert_headless(modules)

    exported = tmp_path / "exec.traj"
    done, modules = loaded_by(
        tmp_path, "export", str(recorded), "--to", "swe-agent", "-o", str(exported)
    )
    assert done.returncode == 0, done.stderr
    assert exported.is_file()
    assert_headless(modules)

    imported = tmp_path / "imported.jsonl"
    done, modules = loaded_by(tmp_path, "import", str(exported), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    assert imported.is_file()
    assert_headless(modules)


def test_extract_never_loads_textual(sample_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "functions.json"
    done, modules = loaded_by(tmp_path, "extract", str(sample_repo), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert '"path": "calc/ops.py"' in out.read_text()
    assert_headless(modules)


@pytest.mark.docker
def test_docker_housekeeping_never_loads_textual(tmp_path: Path) -> None:
    # gc talks to the engine (exit 2, one sentence, when there is none); image bootstrap is run
    # as far as its help: building an image needs root and a Debian mirror.
    done, modules = loaded_by(tmp_path, "gc", "--dry-run")
    assert done.returncode in (0, 2), done.stderr
    assert "backends.docker_engine" in modules or "error" in done.stderr
    assert_headless(modules)

    done, modules = loaded_by(tmp_path, "image", "bootstrap", "--help")
    assert done.returncode == 0, done.stderr
    assert_headless(modules)
