"""The batch layer on real worker processes: isolation, time limits, retries, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.batch import BatchProgress, ResultStore, Task, TaskStatus, run_batch
from tests.batch.tasks import behave, hang_or_look, local_session_then_hang
from tests.conftest import WAIT, RepoFactory

ROOT = Path(__file__).resolve().parents[2]


def test_each_failure_is_recorded_with_its_category_and_the_batch_goes_on(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results.jsonl")
    tasks = [
        Task("ok", {"action": "ok", "value": 1}),
        Task("fail", {"action": "fail"}),
        Task("hang", {"action": "hang"}),
        Task("crash", {"action": "crash"}),
        Task("raise", {"action": "raise"}),
        Task("ok2", {"action": "ok", "value": 2}),
    ]
    summary = run_batch(tasks, behave, store=store, jobs=3, timeout=3, retries=0)
    by_key = {record.key: record for record in summary.records}
    assert by_key["ok"].status is TaskStatus.OK and by_key["ok"].result["value"] == 1
    assert by_key["ok2"].result["value"] == 2
    assert by_key["fail"].status is TaskStatus.FAILED
    assert (by_key["fail"].category, by_key["fail"].evidence) == ("no-tests", "collected 0 items")
    assert by_key["hang"].status is TaskStatus.TIMEOUT and by_key["hang"].seconds < 60
    assert by_key["crash"].status is TaskStatus.CRASHED
    assert "SIGKILL" in (by_key["crash"].evidence or "")
    assert by_key["raise"].status is TaskStatus.ERROR
    assert "RuntimeError: unexpected" in (by_key["raise"].evidence or "")
    assert summary.by_status == {"ok": 2, "failed": 1, "timeout": 1, "crashed": 1, "error": 1}
    assert "no-tests 1" in summary.table()


def test_a_rerun_does_only_what_is_not_final(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results.jsonl")
    marker = tmp_path / "ran.txt"
    tasks = [Task(f"t{i}", {"action": "ok", "marker": str(marker)}) for i in range(4)]
    tasks.append(Task("bad", {"action": "fail", "marker": str(marker)}))
    run_batch(tasks[:2], behave, store=store, jobs=2)
    summary = run_batch(tasks, behave, store=store, jobs=2)
    assert summary.skipped == 2
    assert sorted(marker.read_text().split()) == ["bad", "t0", "t1", "t2", "t3"]
    # A failed task is final too, unless the caller asks to retry failures.
    run_batch(tasks, behave, store=store, jobs=2)
    assert marker.read_text().split().count("bad") == 1
    run_batch(tasks, behave, store=store, jobs=2, retry=frozenset({TaskStatus.FAILED}))
    assert marker.read_text().split().count("bad") == 2


def test_infrastructure_errors_and_dead_workers_are_retried_others_are_not(
    tmp_path: Path,
) -> None:
    store = ResultStore(tmp_path / "results.jsonl")
    marker = tmp_path / "ran.txt"
    tasks = [
        Task("infra", {"action": "flaky-infra", "marker": str(marker)}),
        Task("backend", {"action": "flaky-backend", "marker": str(marker)}),
        Task("fail", {"action": "fail", "marker": str(marker)}),
    ]
    summary = run_batch(tasks, behave, store=store, jobs=2, retries=1)
    by_key = {record.key: record for record in summary.records}
    assert by_key["infra"].status is TaskStatus.OK and by_key["infra"].attempt == 2
    # A backend that did not answer in time is the machinery too, not the task.
    assert by_key["backend"].status is TaskStatus.OK and by_key["backend"].attempt == 2
    assert marker.read_text().split().count("fail") == 1
    # Only final records are written: one line per task.
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["key"] for line in lines) == ["backend", "fail", "infra"]


def test_progress_reports_counts_and_an_eta(tmp_path: Path) -> None:
    seen: list[BatchProgress] = []
    tasks = [Task(f"t{i}", {"action": "sleep", "seconds": 0.2}) for i in range(4)]
    run_batch(
        tasks, behave, store=ResultStore(tmp_path / "r.jsonl"), jobs=2, on_progress=seen.append
    )
    assert seen[0].done == 0 and seen[-1].done == 4
    assert seen[-1].by_status == {"ok": 4}
    middle = next(p for p in seen if 0 < p.done < 4)
    assert middle.eta is not None and "ETA" in middle.line()


def test_a_killed_driver_loses_nothing_and_a_rerun_finishes_the_rest(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    marker = tmp_path / "ran.txt"
    script = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from simulator.batch import ResultStore, Task, run_batch
from tests.batch.tasks import behave, local_session_then_hang
from tests.conftest import RepoFactory
tasks = [Task(f"t{{i}}", {{"action": "sleep", "seconds": 0.4, "marker": {str(marker)!r}}})
         for i in range(12)]
if __name__ == "__main__":
    store = ResultStore(__import__("pathlib").Path({str(results)!r}))
    run_batch(tasks, behave, store=store, jobs=2)
"""
    driver_file = tmp_path / "driver.py"
    driver_file.write_text(script)
    driver = subprocess.Popen([sys.executable, str(driver_file)], start_new_session=True)
    # Ray's start alone took over a minute at load ~25: a silent 60 s deadline let the kill
    # come before three results, and the test then failed on a count, not on a timeout.
    deadline = time.monotonic() + WAIT
    while not (results.exists() and len(results.read_text().splitlines()) >= 3):
        if time.monotonic() > deadline:
            os.killpg(driver.pid, signal.SIGKILL)
            raise AssertionError("the batch wrote no three results in time")
        time.sleep(0.05)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    first = {json.loads(line)["key"] for line in results.read_text().splitlines()}
    assert 3 <= len(first) < 12
    subprocess.run([sys.executable, str(driver_file)], check=True, timeout=120)
    records = [json.loads(line) for line in results.read_text().splitlines()]
    keys = [record["key"] for record in records]
    assert sorted(keys) == sorted(f"t{i}" for i in range(12)), "one final record per task"
    # Finished tasks were not done again: each ran at most twice (once if it had finished,
    # twice only if the kill caught it mid-run).
    ran = marker.read_text().split()
    assert all(ran.count(key) == 1 for key in first)


def test_a_cut_last_line_is_skipped_and_the_next_record_starts_on_its_own_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.jsonl"
    store = ResultStore(path)
    run_batch([Task("a", {"action": "ok"})], behave, store=store)
    with path.open("a") as handle:
        handle.write('{"schema": "reposim.batch/1", "key": "b", "sta')
    summary = run_batch(
        [Task("a", {"action": "ok"}), Task("b", {"action": "ok"})], behave, store=store
    )
    assert [record.key for record in summary.records] == ["a", "b"]
    assert store.skipped_lines == [2]


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="appears more than once"):
        run_batch([Task("a"), Task("a")], behave, store=ResultStore(tmp_path / "r.jsonl"))


def test_a_timed_out_task_leaves_no_scratch_workspace(
    tmp_path: Path, make_repo: RepoFactory
) -> None:
    repo = make_repo({"a.txt": "a\n"}, name="hangs")
    marker = tmp_path / "workspace.txt"
    task = Task(
        "hang",
        {"repo": str(repo), "trajectory": str(tmp_path / "t.jsonl"), "marker": str(marker)},
    )
    deadline_seconds = 20
    summary = run_batch(
        [task],
        local_session_then_hang,
        store=ResultStore(tmp_path / "r.jsonl"),
        timeout=deadline_seconds,
    )
    assert summary.records[0].status is TaskStatus.TIMEOUT
    workspace = Path(marker.read_text())
    assert workspace.name.startswith("hangs-")
    assert not workspace.exists(), "the killed task's scratch copy was collected"
    # The trajectory it wrote up to the kill is kept: nothing recorded is lost.
    assert (tmp_path / "t.jsonl").exists()


def test_a_timed_out_tasks_leftovers_are_collected_before_the_next_task_starts(
    tmp_path: Path, make_repo: RepoFactory
) -> None:
    """Not only at the end of the run: in a long batch (a setup corpus) every timed-out task's
    container and disk stayed until the whole run ended, or for ever when it was stopped."""
    repo = make_repo({"a.txt": "a\n"}, name="hangs")
    marker = tmp_path / "workspace.txt"
    payload = {"repo": str(repo), "trajectory": str(tmp_path / "t.jsonl"), "marker": str(marker)}
    summary = run_batch(
        [Task("hang", payload), Task("look", payload)],
        hang_or_look,
        store=ResultStore(tmp_path / "r.jsonl"),
        timeout=20,
        jobs=1,
    )
    by_key = {record.key: record for record in summary.records}
    assert by_key["hang"].status is TaskStatus.TIMEOUT
    assert by_key["look"].result == {"workspace_exists": False}


def test_task_processes_start_warm_without_importing_the_engine_again(tmp_path: Path) -> None:
    """Each task's process is forked from a forkserver that already imported the task's module,
    the main script and what opening a local session uses, also when the task's module is
    importable only through the main script's sys.path (a script beside its tasks, as bench/
    does; Python 3.11's forkserver does not take the parent's sys.path)."""
    (tmp_path / "probe_task.py").write_text(
        "import os, sys\n"
        "IMPORTED_IN = os.getpid()\n"
        "def probe(task):\n"
        "    return {'module_preloaded': IMPORTED_IN != os.getpid(),\n"
        "            'engine_loaded': 'backends.local' in sys.modules,\n"
        "            'setup_left': 'REPOSIM_BATCH_FORKSERVER' in os.environ,\n"
        "            'main_ran_here': getattr(sys.modules['__main__'], 'RAN_IN', None)\n"
        "            == os.getpid()}\n"
    )
    (tmp_path / "main.py").write_text(
        "import json, os, pathlib, sys\n"
        "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "RAN_IN = os.getpid()\n"
        "from probe_task import probe\n"
        "from simulator.batch import ResultStore, Task, run_batch\n"
        "if __name__ == '__main__':\n"
        "    store = ResultStore(pathlib.Path(__file__).parent / 'store.jsonl')\n"
        "    summary = run_batch([Task(f't{i}') for i in range(3)], probe, store=store, jobs=2)\n"
        "    print(json.dumps([r.result for r in summary.records]))\n"
    )
    run = subprocess.run(
        [sys.executable, str(tmp_path / "main.py")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,  # the task module is not in the working directory: only main.py's sys.path
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert (
        results
        == [
            {
                "module_preloaded": True,
                "engine_loaded": True,
                "setup_left": False,
                "main_ran_here": False,
            }
        ]
        * 3
    )
