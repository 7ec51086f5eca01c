"""The `reposim` command line, run as a user would run it (a real process)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

from simulator import __version__
from tests.conftest import REPOSIM, reposim


def trajectory_of(stderr: str) -> Path:
    line = next(ln for ln in stderr.splitlines() if ln.startswith("reposim: trajectory "))
    return Path(line.removeprefix("reposim: trajectory "))


def test_version() -> None:
    result = reposim("--version")
    assert result.returncode == 0 and __version__ in result.stdout
    # the engine's string is the installed package's version (the build reads it)
    assert __version__ == importlib.metadata.version("reposim")


def test_exec_runs_records_and_returns_the_exit_code(sample_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    result = reposim(
        "exec", str(sample_repo), "--trajectory", str(out), "--", "sh", "-c", "echo hello; exit 3"
    )
    assert result.returncode == 3
    assert result.stdout == "hello\n"
    assert trajectory_of(result.stderr) == out
    shown = reposim("trajectory", "show", str(out))
    assert shown.returncode == 0
    assert "$ sh -c 'echo hello; exit 3'" in shown.stdout
    assert "exit 3" in shown.stdout
    assert "1 commands, 0 file changes, 0 test runs" in shown.stdout


def test_exec_pytest_on_a_real_suite_then_show(sample_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "pytest.jsonl"
    result = reposim(
        "exec",
        str(sample_repo),
        "--trajectory",
        str(out),
        "--",
        sys.executable,
        "-m",
        "pytest",
        "-q",
    )
    assert result.returncode == 1
    assert "1 failed, 1 passed, 1 skipped, 1 error" in result.stdout
    assert (sample_repo / "calc/ops.py").read_text().count("len(values) - 1") == 1


def test_exec_json_prints_events(sample_repo: Path, tmp_path: Path) -> None:
    result = reposim(
        "exec",
        "--json",
        "--trajectory",
        str(tmp_path / "j.jsonl"),
        str(sample_repo),
        "--",
        "echo",
        "hi",
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "checkpoint" and "exec" in kinds and kinds[-1] == "session.end"
    assert next(e for e in events if e["kind"] == "exec.result")["payload"]["output"] == "hi\n"


def test_exec_timeout_exit_code(sample_repo: Path, tmp_path: Path) -> None:
    result = reposim(
        "exec",
        "--timeout",
        "0.5",
        "--trajectory",
        str(tmp_path / "t.jsonl"),
        str(sample_repo),
        "--",
        "sleep",
        "20",
    )
    assert result.returncode == 124
    assert "timed out" in result.stderr


def test_test_command_reports_failures_with_locations(sample_repo: Path, tmp_path: Path) -> None:
    result = reposim(
        "test",
        "--trajectory",
        str(tmp_path / "t.jsonl"),
        str(sample_repo),
        "--command",
        f"{sys.executable} -m pytest",
    )
    assert result.returncode == 1
    assert "FAILED  tests/test_ops.py::test_mean (tests/test_ops.py:11)" in result.stdout
    assert "1 passed, 1 failed, 1 error, 1 skipped" in result.stdout
    selected = reposim(
        "test",
        "--trajectory",
        str(tmp_path / "t2.jsonl"),
        str(sample_repo),
        "tests/test_ops.py::test_add",
        "--command",
        f"{sys.executable} -m pytest",
    )
    assert selected.returncode == 0 and "1 passed" in selected.stdout


def test_bad_input_is_one_clear_sentence(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    cases = [
        (("exec", str(tmp_path / "missing"), "--", "ls"), "does not exist"),
        (("exec", str(a_file), "--", "ls"), "is not a directory"),
        (("trajectory", "show", str(tmp_path / "nope.jsonl")), "does not exist"),
        (("trajectory", "show", str(a_file)), "RepoSim trajectory"),
        (("trajectory", "show", str(tmp_path)), "is a directory"),
        (("exec", "--bogus", str(tmp_path), "--", "ls"), "No such option"),
    ]
    for args, message in cases:
        result = reposim(*args)
        assert result.returncode == 2, args
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_sigterm_closes_the_session_and_records_why(sample_repo: Path, tmp_path: Path) -> None:
    import signal
    import time

    out = tmp_path / "term.jsonl"
    proc = subprocess.Popen(
        [*REPOSIM, "exec", "--trajectory", str(out), str(sample_repo), "--", "sleep", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while b'"kind":"exec"' not in (out.read_bytes() if out.exists() else b""):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "Traceback" not in stderr
    last = json.loads(out.read_text().splitlines()[-1])
    assert last["kind"] == "session.end" and last["payload"]["reason"] == "interrupted"
