"""The program that runs inside an environment: a harness under pyperf, or a quickcheck.

It is copied, with pyperf beside it, into a private tools directory of each environment and run
by that environment's Python, so it imports nothing from RepoSim: only the standard library,
pyperf and the harness. pyperf re-runs this same file for each of its worker processes
(`add_cmdline_args` passes our options on to them).

    python bench_worker.py --root WS --harness H.py --name api -o out.json [pyperf options]
    python bench_worker.py --root WS --command "make -s" --name cmd --append out.json ...
    python bench_worker.py --root WS --harness H.py --quickcheck

A harness is a plain Python file that defines `bench()`, a callable taking no arguments that
exercises the API once; whatever it needs is prepared at import time, outside the timing.
A harness may also define `calls()`, returning [(function, args, kwargs), ...] with fresh
arguments: then only those calls are timed, their arguments built before the timer starts (a
traced harness does this with the calls its tests made). `TIMED`, a string, says what is timed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any


def _prepare_path(root: str) -> None:
    """The repository's code is importable as it is laid out: its root, and src/ if it has one."""
    os.chdir(root)
    for entry in (Path(root) / "src", Path(root)):
        if entry.is_dir() and str(entry) not in sys.path:
            sys.path.insert(0, str(entry))


def _load_harness(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("reposim_perf_harness", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the harness {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "bench", None)):
        raise AttributeError(f"the harness {path} defines no bench() function")
    return module


def quickcheck(harness: str, repeat: int) -> int:
    """Import the harness and call bench() `repeat` times; one JSON line says how it went."""
    report: dict[str, Any] = {"ok": False}
    t0 = time.perf_counter()
    try:
        module = _load_harness(harness)
        report["import_seconds"] = round(time.perf_counter() - t0, 6)
        t1 = time.perf_counter()
        for _ in range(repeat):
            module.bench()
        report["call_seconds"] = round((time.perf_counter() - t1) / repeat, 6)
        report["timed"] = str(getattr(module, "TIMED", "bench()"))
        if callable(getattr(module, "calls", None)):
            report["calls"] = len(module.calls())
        report["ok"] = True
    except BaseException as exc:  # the harness's error, whatever it is, is the answer
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = "".join(traceback.format_exception(exc))[-4000:]
    print("REPOSIM-QUICKCHECK " + json.dumps(report), flush=True)
    return 0 if report["ok"] else 1


def _cpu_timed_func(func: Any) -> Any:
    """bench() timed by this thread's CPU time: what other processes take is not counted."""

    def timed(loops: int) -> float:
        calls = range(loops)
        t0 = time.thread_time()
        for _ in calls:
            func()
        return time.thread_time() - t0

    return timed


def _timed_calls(prepare: Any, timer: Any) -> Any:
    """The calls of `prepare()` timed alone: the arguments are made before the timer starts."""

    def timed(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            batch = prepare()
            t0 = timer()
            for func, args, kwargs in batch:
                func(*args, **kwargs)
            total += timer() - t0
        return total

    return timed


def _timed_command(command: str, timer: str) -> Any:
    """A command timed as a by-hand run would be: one `bash -c` process per loop, its elapsed
    time or the CPU time of its process tree (from wait4's resource usage). pyperf's own
    bench_command starts a helper Python (`_process_time`) for every value on top of that."""
    import subprocess

    def timed(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            t0 = time.perf_counter()
            proc = subprocess.Popen(["bash", "-c", command])
            _pid, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode:
                raise RuntimeError(f"{command!r} exited with status {proc.returncode}")
            total += usage.ru_utime + usage.ru_stime if timer == "cpu" else elapsed
        return total

    return timed


def main() -> int:
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--root", required=True)
    own.add_argument("--harness")
    own.add_argument("--command")
    own.add_argument("--cwd")  # where a command runs (default: the root)
    own.add_argument("--name", default="bench")
    own.add_argument("--quickcheck", action="store_true")
    own.add_argument("--repeat", type=int, default=1)
    own.add_argument("--timer", choices=("wall", "cpu"), default="wall")
    mine, _rest = own.parse_known_args()
    _prepare_path(mine.root)
    if mine.command and mine.cwd:
        os.chdir(mine.cwd)  # pyperf's worker processes start here too
    if mine.quickcheck:
        return quickcheck(mine.harness, mine.repeat)

    import pyperf

    def add_cmdline_args(cmd: list[str], args: Any) -> None:
        cmd.extend(["--root", mine.root, "--name", mine.name, "--timer", mine.timer])
        if mine.harness:
            cmd.extend(["--harness", mine.harness])
        if mine.command:
            cmd.extend(["--command", mine.command])
        if mine.cwd:
            cmd.extend(["--cwd", mine.cwd])

    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    for flag in ("--root", "--harness", "--command", "--cwd", "--name"):
        runner.argparser.add_argument(flag)
    runner.argparser.add_argument("--quickcheck", action="store_true")
    runner.argparser.add_argument("--repeat", type=int, default=1)
    runner.argparser.add_argument("--timer")
    runner.metadata["reposim_root"] = mine.root
    runner.metadata["reposim_timer"] = mine.timer
    if mine.command:
        runner.metadata["command"] = mine.command
        runner.bench_time_func(mine.name, _timed_command(mine.command, mine.timer))
    else:
        module = _load_harness(mine.harness)
        runner.metadata["reposim_timed"] = str(getattr(module, "TIMED", "bench()"))
        clock = time.thread_time if mine.timer == "cpu" else time.perf_counter
        if callable(getattr(module, "calls", None)):
            runner.bench_time_func(mine.name, _timed_calls(module.calls, clock))
        elif mine.timer == "cpu":
            runner.bench_time_func(mine.name, _cpu_timed_func(module.bench))
        else:
            runner.bench_func(mine.name, module.bench)
    return 0


if __name__ == "__main__":
    sys.exit(main())
