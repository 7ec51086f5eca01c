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
import random
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

PAGE = 4096
SMALL_OBJECT_LIMIT = 512  # pymalloc serves requests up to this size; malloc the larger ones
SMALL_OBJECT_STEP = 16  # pymalloc's size classes (64-bit)
EMPTY_BYTES = sys.getsizeof(b"")  # a bytes object's header (its data follow it, + 1 NUL)
# the blocks that shift the heap, kept alive so that nothing allocated later reuses them
_SHIFT: list[Any] = []


def shift_heap(rng: Any) -> None:
    """Start this process from a heap laid out at random (setup randomization, as Curtsinger and
    Berger's Stabilizer does): in each of pymalloc's size classes a random number of blocks,
    up to a page's worth, and from malloc a block of a random size up to a page beyond the
    smallest it serves, all kept. Without it the harness's objects lie at the same places in
    every process started alike (modulo the page: which cache sets they fill, which addresses
    alias), so a layout that favours one side (a longer tree path, code that allocates a little
    more) favours every run of that side: a steady offset that no number of rounds averages out
    (Mytkowicz et al., ASPLOS 2009). Shifted, the layout varies from run to run like the rest
    of the noise, and the interval sees it."""
    for size in range(SMALL_OBJECT_STEP, SMALL_OBJECT_LIMIT + 1, SMALL_OBJECT_STEP):
        data = size - EMPTY_BYTES - 1
        if data > 0:
            _SHIFT.extend(bytes(data) for _ in range(rng.randrange(PAGE // size)))
    _SHIFT.append(bytearray(SMALL_OBJECT_LIMIT + 1 + rng.randrange(0, PAGE, SMALL_OBJECT_STEP)))


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


# loops whose arguments are made ahead and timed together: one timer reading per loop cost
# more than the calls it timed (thread_time is a system call, 1.4 us here, twice per loop, and
# more-itertools' `first` takes 0.2-1 us: a 4x change measured 1.16x)
CHUNK_LOOPS = 100
GROUP_MIN_SECONDS = 0.002  # a group's value lasts at least this long


def _run_loops(prepare: Any, loops: int, timer: Any) -> float:
    """`loops` loops of the calls `prepare()` returns, timed; the arguments of up to
    CHUNK_LOOPS loops are made before the timer starts, and each chunk is timed whole."""
    total = 0.0
    done = 0
    while done < loops:
        count = min(CHUNK_LOOPS, loops - done)
        batches = [prepare() for _ in range(count)]
        t0 = timer()
        for batch in batches:
            for func, args, kwargs in batch:
                func(*args, **kwargs)
        total += timer() - t0
        done += count
    return total


def _timed_calls(prepare: Any, timer: Any) -> Any:
    """The calls of `prepare()` timed alone: the arguments are made before the timer starts."""

    def timed(loops: int) -> float:
        return _run_loops(prepare, loops, timer)

    return timed


def time_groups(groups: list[Any], timer: Any, budget: float) -> list[dict[str, Any]]:
    """Each group of calls (the harness's `groups()`) timed alone, one value each: its loops
    doubled until a value lasts budget / len(groups) (at least GROUP_MIN_SECONDS); the shorter
    tries warm it up. Seconds per loop, with what the group is, for the other side to match."""
    target = max(GROUP_MIN_SECONDS, budget / max(len(groups), 1))
    out = []
    for group in groups:
        loops = 1
        while True:
            seconds = _run_loops(group.calls.fresh, loops, timer)
            if seconds >= target or loops >= 1 << 24:
                break
            grow = target / seconds * 1.2 if seconds > 0 else 16.0
            loops = max(loops * 2, min(int(loops * grow), loops * 16))
        out.append({**group.describe(), "seconds": seconds / loops, "loops": loops})
    return out


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
    own.add_argument("--group-budget", type=float, default=0.0)  # seconds for the call groups
    mine, _rest = own.parse_known_args()
    shift_heap(random.Random())  # seeded from the OS: each process its own layout
    _prepare_path(mine.root)
    if mine.command and mine.cwd:
        os.chdir(mine.cwd)  # pyperf's worker processes start here too
    if mine.quickcheck:
        return quickcheck(mine.harness, mine.repeat)

    import pyperf

    def add_cmdline_args(cmd: list[str], args: Any) -> None:
        cmd.extend(["--root", mine.root, "--name", mine.name, "--timer", mine.timer])
        cmd.extend(["--group-budget", str(mine.group_budget)])
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
    runner.argparser.add_argument("--group-budget")
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
            _time_groups_after(runner, module, clock, mine.group_budget)
        elif mine.timer == "cpu":
            runner.bench_time_func(mine.name, _cpu_timed_func(module.bench))
        else:
            runner.bench_func(mine.name, module.bench)
    return 0


def _time_groups_after(runner: Any, module: ModuleType, clock: Any, budget: float) -> None:
    """After a worker's values (not at calibration), its harness's call groups, each timed
    alone, as one JSON line beside the run: `a.json` -> `a.groups.jsonl`. The k-th line of
    each side belongs to the k-th run, so the groups are compared in pairs as the runs are."""
    args = runner.args
    if not (budget > 0 and args.worker and args.append) or args.calibrate_loops:
        return
    try:
        groups = module.groups() if callable(getattr(module, "groups", None)) else []
        if not groups:
            return
        line: dict[str, Any] = {"groups": time_groups(groups, clock, budget)}
    except Exception as exc:  # the run's values are kept: the groups are extra
        line = {"groups": [], "error": f"{type(exc).__name__}: {exc}"}
    with open(Path(args.append).with_suffix(".groups.jsonl"), "a") as handle:
        handle.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    sys.exit(main())
