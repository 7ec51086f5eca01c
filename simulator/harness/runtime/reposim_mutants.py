"""Run one harness against many mutants of its target, in one process.

    python reposim_mutants.py SPEC.json OUT.json

SPEC: {"harness": path, "module": "pkg.mod", "qualname": "Class.method", "filename": path of
the target's file, "timeout": seconds per run, "mutants": [{"id", "source"}]} where each source
is the whole target file with one small change inside the target. For each mutant the file is
compiled, the target's code object is taken out of it and swapped into the live function
(`function.__code__`), and the harness runs with pytest in this process: no interpreter start
and no re-import per mutant. A mutant is killed when the harness fails or runs past the time
limit. The unmutated target runs first: a harness that fails on it says nothing about mutants.

The harness's own runs on the reference happen here too, before the mutants ("repeats": how
many, each with every test's outcome noted; with "coverage": {"data_file", "rcfile"} the first
one under coverage.py, started before the target's module is imported): one interpreter start
for a whole validation instead of one per run. The mutants run only when every one of those
runs passed.

With "tests": [node ids] instead of "harness", the repository's own tests run against the
mutants the same way (suite parity: which mutants the tests that call the target kill); the
tests that fail on the unmutated target are left out, named in the baseline.
Standard library and pytest only: this runs in the project's Python.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import signal
import sys
import threading
import time
from pathlib import Path
from types import CodeType, FrameType, FunctionType
from typing import Any

import pytest


class MutantTimeout(Exception):
    """The harness ran past its time limit on a mutant (an infinite loop, most often)."""


def find_code(code: CodeType, qualname: str, firstlineno: int) -> CodeType | None:
    if code.co_qualname == qualname and code.co_firstlineno == firstlineno:
        return code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found = find_code(const, qualname, firstlineno)
            if found is not None:
                return found
    return None


def target_function(module: str, qualname: str) -> FunctionType:
    """The function object whose code is the target's (decorator wrappers followed down)."""
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = inspect.getattr_static(obj, part)
        if isinstance(obj, staticmethod | classmethod):
            obj = obj.__func__
        elif isinstance(obj, property):
            obj = obj.fget
    seen = 0
    while not (isinstance(obj, FunctionType) and obj.__code__.co_qualname == qualname):
        obj = getattr(obj, "__wrapped__", None)
        seen += 1
        if obj is None or seen > 10:
            raise LookupError(f"no plain function at {module}:{qualname}")
    return obj


def clear_caches(module: str, qualname: str) -> None:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    for _ in range(10):
        if obj is None:
            return
        clear = getattr(obj, "cache_clear", None)
        if callable(clear):
            clear()
        obj = getattr(obj, "__wrapped__", None)


class _Failures:
    """A pytest plugin object that notes the tests that failed (any phase), and every test's
    outcome ("passed", "failed", "skipped"; "<collection>" for a module that did not import)."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed: list[str] = []
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and report.nodeid not in self.failed:
            self.failed.append(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed.append(report.nodeid)
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.skipped and self.outcomes.get(report.nodeid) != "failed":
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call" and self.outcomes.get(report.nodeid) is None:
            self.outcomes[report.nodeid] = "passed"

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.outcomes["<collection>"] = "error"


class _Costs:
    """A pytest plugin noting each test's (CPU, wall) seconds, setup to teardown."""

    def __init__(self) -> None:
        self.costs: dict[str, tuple[float, float]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        cpu0, wall0 = time.process_time(), time.monotonic()
        yield
        self.costs[item.nodeid] = (time.process_time() - cpu0, time.monotonic() - wall0)


# A failure's traceback as Python prints it (`--tb=native`), not pytest's default, which parses
# the whole source file of every frame it shows, for every failure: on sqlparse 0.4.4 the 3.2 MB
# harness of ReindentFilter._flatten_up_to_token cost 1.4 s of CPU per failure (a killed mutant
# is one, and so is each case that fails on the reference), 1,034.6 s for the target. Nothing
# here reads more of a failure than its outcome, and a failed reference run's output (the
# "log") still shows each traceback with its lines and the assertion's message.
TRACEBACKS = "--tb=native"

SUITE_FLAGS = ["-q", "-p", "no:cacheprovider", "-p", "no:cov", "-p", "no:randomly"]
SUITE_FLAGS += ["-p", "no:xdist", "-p", "no:reposim_tracer", TRACEBACKS]


def run_suite(
    tests: list[str], timeout: float, stop: bool = True, notes: _Failures | None = None
) -> tuple[bool, str]:
    """(passed, how) for one pytest run of the repository's tests `tests`."""
    args = [*tests, *SUITE_FLAGS, *(["-x"] if stop else [])]
    return _run(args, timeout, [notes] if notes is not None else [])


HARNESS_FLAGS = ["-q", "-p", "no:cacheprovider", "-p", "no:cov", "-o", "addopts=", TRACEBACKS]


def run_harness(
    harness: str,
    timeout: float,
    stop: bool = True,
    notes: _Failures | None = None,
    more: list[Any] | None = None,
) -> tuple[bool, str]:
    """(passed, how) for one pytest run of the harness, quietly, under a time limit."""
    args = [harness, *(["-x"] if stop else []), *HARNESS_FLAGS]
    return _run(args, timeout, [*([notes] if notes is not None else []), *(more or [])])


_last_output = [""]  # what the last run printed (kept for a run on the reference that failed)


def _run(args: list[str], timeout: float, plugins: list[Any]) -> tuple[bool, str]:

    def expire(signum: int, frame: FrameType | None) -> None:
        raise MutantTimeout(f"over {timeout} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            code = pytest.main(args, plugins=plugins)
    except MutantTimeout:
        return False, "timeout"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _last_output[0] = sink.getvalue()
    return int(code) == 0, "passed" if int(code) == 0 else "failed"


class _Swap:
    """Puts a mutant's code into the live target function, and the original back."""

    def __init__(self, spec: dict[str, Any], function: FunctionType, original: CodeType) -> None:
        self.spec, self.function, self.original = spec, function, original

    def apply(self, mutant: dict[str, Any]) -> str:
        """An empty string when the mutant is in place, else why it cannot be."""
        try:
            compiled = compile(mutant["source"], self.spec["filename"], "exec")
        except SyntaxError as exc:
            return str(exc)
        code = find_code(compiled, self.spec["qualname"], self.original.co_firstlineno)
        if code is None or code.co_freevars != self.original.co_freevars:
            return "the mutant's code does not fit the function"
        self.function.__code__ = code
        clear_caches(self.spec["module"], self.spec["qualname"])
        return ""

    def restore(self) -> None:
        self.function.__code__ = self.original


def _codes_of(code: CodeType) -> set[tuple[str, int]]:
    """(qualname, first line) of a code object and of every code object nested in it (inner
    functions, lambdas, comprehensions): what runs the target's lines, under any file name
    (a check in situ runs a renamed copy of the candidate's code for the calls it does not
    compare)."""
    found = {(code.co_qualname, code.co_firstlineno)}
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found |= _codes_of(const)
    return found


class _MutantLoop:
    """A pytest plugin that runs the collected tests once per mutant, in one session: the
    tests are collected (and the harness module imported) once, not once per mutant. A mutant
    is killed at its first failing test, or when its run passes the time limit.

    Each test first runs once on the reference with the target's lines traced; a mutant then
    runs only the tests that reached its statement (its "lines"): a test that never runs the
    mutated statement takes the same path on the mutant as on the reference and cannot kill
    it. A mutant no test reaches survives without a run.

    A mutant's run of a test is cut once it has spent CPU_FACTOR times the CPU time that test
    took on the reference in that pass, plus CPU_FLOOR seconds (an infinite loop, most often),
    or WALL_FACTOR times that in wall time, as measured the same way (a mutant that blocks; this
    limit never under the spec's "timeout"): each test has its own limits (a loop in a cheap
    test is cut in about a second, whatever the other tests cost). Wall time alone cut runs a
    loaded machine had starved: on tomlkit at load 17, mutants of Source.consume whose tests
    took 2 s of CPU, as on the reference, were cut at the 10 s limit and counted killed, and
    others of the same kind survived. With no measure from the reach pass, the spec's
    wall-clock limit alone."""

    CPU_FLOOR = 1.0
    CPU_FACTOR = 10.0
    WALL_FACTOR = 3.0

    def __init__(
        self,
        mutants: list[dict[str, Any]],
        swap: _Swap,
        timeout: float,
        select: bool = True,
        reference_costs: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        self.mutants, self.swap, self.timeout = mutants, swap, timeout
        self.select = select
        # each test's cost in the first run on the reference (the one that did the checks in
        # situ): the cost of a test whose checks in situ the reach pass does not make
        self.reference_costs = reference_costs or {}
        self.results: list[dict[str, Any]] = []
        # each test's (CPU, wall) seconds on the reference in the reach pass
        self.costs: list[tuple[float, float] | None] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool:
        from _pytest.runner import runtestprotocol

        items = list(session.items)
        reached = self._reach(items, runtestprotocol) if self.select else [None] * len(items)
        costs = self.costs if len(self.costs) == len(items) else [None] * len(items)
        for mutant in self.mutants:
            t0, cpu0 = time.monotonic(), time.process_time()
            lines = set(mutant.get("lines") or ())
            picked = [
                (item, cost)
                for item, seen, cost in zip(items, reached, costs, strict=True)
                if seen is None or not lines or seen & lines
            ]
            chosen = [item for item, _ in picked]
            limits = [self._limits(cost) for _, cost in picked]
            why = self.swap.apply(mutant)
            if why:
                self.results.append({"id": mutant["id"], "status": "invalid", "why": why})
                continue
            try:
                passed, how = (
                    self._run_items(session, chosen, runtestprotocol, limits)
                    if chosen
                    else (True, "no test reaches it")
                )
            finally:
                self.swap.restore()
            self.results.append(
                {
                    "id": mutant["id"],
                    "status": "survived" if passed else "killed",
                    "how": how,
                    "tests": len(chosen),
                    "seconds": round(time.monotonic() - t0, 4),
                    "cpu": round(time.process_time() - cpu0, 4),
                    # (the largest of its tests' limits: wall, CPU)
                    "limits": [
                        max(wall for wall, _ in limits) if limits else None,
                        max((cpu or 0.0 for _, cpu in limits), default=None) or None,
                    ],
                }
            )
        return True

    def _limits(self, cost: tuple[float, float] | None) -> tuple[float, float | None]:
        """(wall seconds, CPU seconds or None) a mutant's run of a test of reference `cost`
        may take."""
        if cost is None:
            return self.timeout, None
        cpu = self.CPU_FLOOR + self.CPU_FACTOR * cost[0]
        wall = self.CPU_FLOOR + self.CPU_FACTOR * cost[1]
        return max(self.timeout, self.WALL_FACTOR * wall), cpu

    def _reach(self, items: list[Any], protocol: Any) -> list[set[int] | None]:
        """The target's lines each test runs on the reference (None for a test that fails
        there, that runs none of them, or when the run is cut short: such a test runs for
        every mutant).

        A harness's check in situ runs a repository test; here it runs that test as it is,
        without its checks (support's `_reach_only`): the target's lines it runs are the same,
        and the copies of the arguments and the reference's calls, which the first run on the
        reference made, are not made again (on tomlkit's Parser._parse_quoted_key they were
        half the runner's CPU time, repeated). Such a test's cost, which its mutants' limits
        are measured from, is the one it had in that first run, checks included (under
        coverage.py: the limit errs on the long side)."""
        support = sys.modules.get("reposim_harness_support")
        runs = getattr(support, "_in_situ_runs", None)
        reach_only = getattr(support, "_reach_only", None)
        checks = getattr(support, "_reach_checks", None)
        if isinstance(runs, dict):
            runs.clear()
        try:
            if isinstance(reach_only, list):
                reach_only[0] = True
            return self._reach_traced(items, protocol, checks)
        finally:
            if isinstance(reach_only, list):
                reach_only[0] = False
            if isinstance(runs, dict):
                runs.clear()

    def _reach_traced(
        self, items: list[Any], protocol: Any, checks: list[int] | None
    ) -> list[set[int] | None]:
        codes = _codes_of(self.swap.original)
        seen: set[int] = set()

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                seen.add(frame.f_lineno)
            return local

        def calls(frame: FrameType, event: str, arg: Any) -> Any:
            code = frame.f_code
            if (code.co_qualname, code.co_firstlineno) in codes:
                seen.add(frame.f_lineno)
                return local
            return None

        reached: list[set[int] | None] = []
        previous = sys.gettrace()
        for index, item in enumerate(items):
            seen = set()
            following = items[index + 1] if index + 1 < len(items) else None
            sys.settrace(calls)
            threading.settrace(calls)  # (a test may call the target in a thread of its own)
            checked = checks[0] if checks else 0
            cpu0, wall0 = time.process_time(), time.monotonic()
            try:
                reports = protocol(item, nextitem=following, log=False)
            except BaseException:
                return reached + [None] * (len(items) - len(reached))
            finally:
                sys.settrace(previous)
                threading.settrace(None)
            # (traced, so more than the test costs untraced: the limit errs on the long side)
            cost = (time.process_time() - cpu0, time.monotonic() - wall0)
            first = self.reference_costs.get(item.nodeid)
            if checks and checks[0] != checked and first is not None:
                cost = (max(cost[0], first[0]), max(cost[1], first[1]))
            self.costs.append(cost)
            failed = any(report.failed for report in reports)
            reached.append(None if failed or not seen else set(seen))
        return reached

    def _run_items(
        self,
        session: Any,
        items: list[Any],
        protocol: Any,
        limits: list[tuple[float, float | None]],
    ) -> tuple[bool, str]:
        """(passed, how) for the tests `items` on the mutant in place, cut at the first
        failing one, or when a test runs past its limits (wall seconds, CPU seconds)."""
        expired = [False]

        def expire(signum: int, frame: FrameType | None) -> None:
            expired[0] = True
            raise MutantTimeout("over its wall-clock or CPU limit")

        previous = signal.signal(signal.SIGALRM, expire)
        previous_cpu = signal.signal(signal.SIGPROF, expire)
        outcome = (True, "passed")
        try:
            for index, item in enumerate(items):
                following = items[index + 1] if index + 1 < len(items) else None
                wall, cpu = limits[index] if index < len(limits) else (self.timeout, None)
                signal.setitimer(signal.ITIMER_REAL, wall)
                if cpu is not None:
                    signal.setitimer(signal.ITIMER_PROF, cpu)
                reports = protocol(item, nextitem=following, log=False)
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.setitimer(signal.ITIMER_PROF, 0)
                if expired[0]:
                    outcome = (False, "timeout")
                    break
                if any(report.failed for report in reports):
                    outcome = (False, "failed")
                    break
        except MutantTimeout:
            outcome = (False, "timeout")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGALRM, previous)
            signal.signal(signal.SIGPROF, previous_cpu)
        if not outcome[0]:  # cut short: what the tests set up is torn down for the next mutant
            state: Any = getattr(session, "_setupstate", None)
            with contextlib.suppress(Exception):
                if hasattr(state, "teardown_exact"):
                    state.teardown_exact(None)
                elif hasattr(state, "teardown_all"):
                    state.teardown_all()
        return outcome


def reference_runs(
    spec: dict[str, Any], out: dict[str, Any], costs: dict[str, tuple[float, float]] | None = None
) -> bool:
    """The harness's runs on the reference ("repeats" of them, the first under coverage.py when
    asked): every test's outcome per run in out["runs"], the output of the first run that
    failed in out["log"], each test's (CPU, wall) seconds in the first run in `costs`. True
    when every run passed."""
    measure = spec.get("coverage")
    cov: Any = None
    if measure:
        try:
            import coverage

            cov = coverage.Coverage(
                data_file=measure["data_file"],
                branch=True,
                include=[spec["filename"]],
                config_file=measure.get("rcfile") or False,
            )
            cov.start()
        except Exception as exc:  # no coverage.py: the runs still count
            out["coverage_error"] = f"{type(exc).__name__}: {exc}"
            cov = None
    runs: list[dict[str, str]] = []
    everything = True
    timeout = float(spec.get("run_timeout") or float(spec.get("timeout", 10.0)) * 3)
    for number in range(max(1, int(spec.get("repeats") or 1))):
        notes = _Failures()
        timed = _Costs()
        t0 = time.monotonic()
        try:
            passed, how = run_harness(
                spec["harness"],
                timeout,
                stop=False,
                notes=notes,
                more=[timed] if number == 0 else [],
            )
        finally:
            if number == 0 and cov is not None:
                cov.stop()
                cov.save()
        if how == "timeout":
            notes.outcomes.setdefault("<timeout>", "error")
        if not notes.outcomes:
            notes.outcomes["<collection>"] = "passed" if passed else "error"
        runs.append(notes.outcomes)
        if number == 0 and costs is not None:
            costs.update(timed.costs)
        if not passed:
            everything = False
            out.setdefault("log", _last_output[0][-4000:])
        out.setdefault("seconds", []).append(round(time.monotonic() - t0, 4))
    out["runs"] = runs
    return everything


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    sys.path.insert(0, str(Path.cwd()))
    timeout = float(spec.get("timeout", 10.0))
    out: dict[str, Any] = {"baseline": None, "mutants": []}
    costs: dict[str, tuple[float, float]] = {}
    if spec.get("repeats"):
        # the reference runs first: coverage.py must start before the module is imported
        if not reference_runs(spec, out, costs):
            out["baseline"] = {"passed": False, "how": "the harness fails on the reference"}
            return _write(argv[2], out)
        if not spec["mutants"]:
            out["baseline"] = {"passed": True, "how": "passed"}
            return _write(argv[2], out)
    try:
        function = target_function(spec["module"], spec["qualname"])
    except (ImportError, LookupError, AttributeError) as exc:
        out["baseline"] = {"passed": False, "how": f"{type(exc).__name__}: {exc}"}
        return _write(argv[2], out)
    original = function.__code__
    t0 = time.monotonic()
    tests = list(spec.get("tests") or [])
    if tests:
        notes = _Failures()
        run_suite(tests, timeout * 3, stop=False, notes=notes)
        failing = set(notes.failed)
        tests = [
            t
            for t in tests
            if t not in failing and any(p == t or p.startswith(t) for p in notes.passed)
        ]
        passed, how = bool(tests), "passed" if tests else "no test passes on the unmutated target"
        out["baseline"] = {
            "passed": passed,
            "how": how,
            "failing": sorted(failing),
            "tests": tests,
            "seconds": round(time.monotonic() - t0, 4),
        }

        args = [*tests, *SUITE_FLAGS]
    else:
        if not spec.get("repeats"):  # (with repeats, the reference runs above were its baseline)
            timed = _Costs()  # (its checks in situ made: the costs the reach pass cannot see)
            passed, how = run_harness(spec["harness"], timeout * 3, more=[timed])
            costs.update(timed.costs)
            seconds = round(time.monotonic() - t0, 4)
            out["baseline"] = {"passed": passed, "how": how, "seconds": seconds}
        else:
            passed = True
            out["baseline"] = {"passed": True, "how": "passed"}
        args = [spec["harness"], *HARNESS_FLAGS]

    if passed:
        swap = _Swap(spec, function, original)
        loop = _MutantLoop(
            spec["mutants"],
            swap,
            timeout,
            select=bool(spec.get("select", True)),
            reference_costs=costs,
        )
        _run(args, timeout * (len(spec["mutants"]) + 3), [loop])
        out["mutants"] = loop.results
        done = {r["id"] for r in loop.results}
        for mutant in spec["mutants"]:  # (only if the loop was cut short)
            if mutant["id"] not in done:
                out["mutants"].append({"id": mutant["id"], "status": "invalid", "why": "not run"})
    return _write(argv[2], out)


def _write(path: str, out: dict[str, Any]) -> int:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
