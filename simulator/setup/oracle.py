"""The oracle: how far a repository got (a tiered verdict) and, when short of ready, why.

Tiers, each implying the ones before it (docs/setup.md):

    none       nothing installed (or the project could not be installed)
    installed  the project and its dependencies installed
    imports    every top-level package of the project imports
    collects   the test runner collects the tests without errors
    runs       the tests run, but fewer than 95% pass
    ready      the tests run and at least 95% of those that ran passed
    ready+     ready with at least N tests (N = 10 unless told)

A verdict short of ready carries a category from the taxonomy below and the evidence line, the
one line of output that shows the cause. Only the oracle says a repository is ready: the ladder,
the repair loop and the LLM installer all ask it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any

READY_RATIO = 0.95
READY_PLUS_TESTS = 10
# The end of the evidence of a suite script that stopped importing a test module
STOPPED_AT_MODULE = "; the test command stopped there"


class Tier(StrEnum):
    NONE = "none"
    INSTALLED = "installed"
    IMPORTS = "imports"
    COLLECTS = "collects"
    RUNS = "runs"
    READY = "ready"
    READY_PLUS = "ready+"

    @property
    def rank(self) -> int:
        return list(Tier).index(self)

    @property
    def is_ready(self) -> bool:
        return self.rank >= Tier.READY.rank


class Category(StrEnum):
    """Why a repository stopped short of ready (docs/setup.md lists each with an example)."""

    MODULE_NOT_FOUND = "module-not-found"
    IMPORT_ERROR = "import-error"
    ATTRIBUTE_ERROR = "attribute-error"
    NAME_ERROR = "name-error"
    SYNTAX_ERROR = "syntax-error"
    BUILD = "build"
    SYSTEM_LIBRARY = "system-library"  # a shared library (lib*.so) the image lacks
    PYTHON_VERSION = "python-version"
    NETWORK = "network"
    TIMEOUT = "timeout"
    KILLED = "killed"  # the test run was killed before it reported (the memory limit)
    NO_TESTS = "no-tests"
    MISSING_PLUGIN = "missing-plugin"  # a fixture, marker or option only a pytest plugin has
    DEPENDENCY = "dependency"  # the resolver found no compatible set of versions
    TEST_FAILURES = "test-failures"  # the tests run; too many of them fail
    COLLECTION = "collection"  # collection failed for another reason (a fixture, a conftest)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Diagnosis:
    category: Category
    evidence: str
    subject: str | None = None  # the module, attribute, header or version the line names


# `ImportError: libgobject-2.0.so.0: cannot open shared object file`, ctypes' and cffi's
# `OSError: cannot load library 'libcairo.so.2': ...`: the library's file name is the subject.
SHARED_LIBRARY = (
    r"(lib[\w.+-]*?\.so(?:\.[\d.]+)?)(?:'|:)?:? cannot open shared object file|"
    r"cannot load library '(lib[\w.+-]+?\.so[\w.]*)'|"
    r"(?:no library called|Unable to find library|could not find library) ['\"]?(lib[\w.+-]+)"
)
NUMPY_ABI = re.compile(
    r"numpy\.dtype size changed, may indicate binary incompatibility|"
    r"compiled using NumPy 1\.x cannot be run in"
)
# Ordered: the first pattern that matches a line of the output decides.
_PATTERNS: list[tuple[Category, re.Pattern[str]]] = [
    (Category.TIMEOUT, re.compile(r"\b(timed out after|still running after) ")),
    (
        Category.PYTHON_VERSION,
        re.compile(
            r"requires a different Python|Requires-Python|current Python version .* does not "
            r"satisfy|python_requires|only supports Python|is not supported on Python|"
            r"Python \d\.\d+ or (later|newer) is required|"
            # Python 2 source on Python 3: a module written for the other interpreter
            r"Missing parentheses in call to '(print|exec)'|"
            r"multiple exception types must be parenthesized|"
            # C code generated (by an old Cython) for the Pythons before 3.11, which moved
            # CPython's internal longintrepr.h: editdistance 0.6.0 ships no .pyx to redo it
            r"fatal error: longintrepr\.h: No such file"
        ),
    ),
    (
        Category.NETWORK,
        re.compile(
            r"Temporary failure in name resolution|Failed to establish a new connection|"
            r"Could not fetch URL|Network is unreachable|Name or service not known|"
            r"error sending request|dns error|Connection refused|certificate verify failed"
        ),
    ),
    (
        Category.BUILD,
        re.compile(
            r"fatal error: [\w/.+-]+\.h: No such file|error: command '[^']+' failed|"
            r"Failed building wheel|Failed to build|Building wheel for .* failed|"
            r"subprocess-exited-with-error|Cargo, the Rust package manager|"
            r"Could NOT find|CMake Error|Failed to build `|No such file or directory: '(gcc|cc|"
            r"cmake|make)'|configure: error|\*\*\* \[.*\] Error \d|undefined reference to|"
            r"could not be found for [\w.+-]+,?$|cannot find -l[\w.+-]+|"
            r"was not found in the pkg-config search path"
        ),
    ),
    (
        Category.DEPENDENCY,
        re.compile(
            r"No solution found when resolving|ResolutionImpossible|"
            r"Could not find a version that satisfies|No matching distribution found|"
            r"conflicting dependencies|not found in the package registry|"
            r"was not found in the package registry|is not available in the package index"
        ),
    ),
    (
        Category.MISSING_PLUGIN,
        re.compile(
            r"fixture '\w+' not found|unrecognized arguments: --?[\w-]+|"
            r"async def functions are not natively supported|"
            r"Unknown config option: \w+|'\w+' not found in `markers` configuration option"
        ),
    ),
    # A module compiled for NumPy 1.x under NumPy 2 (or the other way round): NumPy 2 changed
    # its binary interface (xarray 0.16.2: time travel kept pandas 1.5.3, numpy took today's).
    (Category.IMPORT_ERROR, NUMPY_ABI),
    (Category.SYSTEM_LIBRARY, re.compile(SHARED_LIBRARY)),
    (Category.MODULE_NOT_FOUND, re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")),
    (Category.IMPORT_ERROR, re.compile(r"ImportError: .*")),
    (Category.ATTRIBUTE_ERROR, re.compile(r"AttributeError: .*")),
    (Category.NAME_ERROR, re.compile(r"NameError: .*")),
    (Category.SYNTAX_ERROR, re.compile(r"(SyntaxError|IndentationError|TabError): .*")),
    (
        Category.NO_TESTS,
        re.compile(r"no tests ran|collected 0 items|Ran 0 tests|No tests were found"),
    ),
]
_SUBJECTS = {
    Category.MODULE_NOT_FOUND: re.compile(r"No module named '([\w.]+)'"),
    Category.IMPORT_ERROR: re.compile(
        r"cannot import name '(\w+)' from '([\w.]+)'|No module named '([\w.]+)'"
    ),
    Category.ATTRIBUTE_ERROR: re.compile(
        r"module '([\w.]+)' has no attribute '(\w+)'|"
        r"`np\.(\w+)` was removed in the NumPy (\d+\.\d+) release|"
        r"'(\w+)' object has no attribute '(\w+)'|"
        r"type object '(?:[\w.]+\.)?(\w+)' has no attribute '(\w+)'"
    ),
    Category.SYSTEM_LIBRARY: re.compile(SHARED_LIBRARY),
    # uv: "Failed to build `bitarray==2.3.5`"; pip: "Failed to build bitarray" at the end of the
    # line, never pip's "Failed to build installable wheels for some ... projects".
    Category.BUILD: re.compile(
        r"fatal error: ([\w/.+-]+\.h)|Failed to build `([^`\s]+)`|Failed to build ([\w.-]+)\s*$"
    ),
    Category.MISSING_PLUGIN: re.compile(
        r"fixture '(\w+)' not found|unrecognized arguments: (--?[\w-]+)|(async def)|"
        r"Unknown config option: (\w+)|'(\w+)' not found in `markers`"
    ),
    Category.PYTHON_VERSION: re.compile(r"(>=? ?\d\.\d+|<=? ?\d\.\d+)"),
}


REJECTED_PLUGIN = re.compile(r"PluginValidationError: Plugin '[^']+' for hook")
NUMPY_ABI_SUBJECT = "abi:numpy"  # the subject of a NumPy binary-interface mismatch

# A build's missing header or library names the cause; the installer's closing lines do not.
BUILD_LIBRARY = re.compile(
    r"could not be found for ([\w.+-]+?),?$|cannot find -l([\w.+-]+)|"
    r"Package '?([\w.+-]+?)'?,? was not found in the pkg-config search path"
)
_PREFERRED = {
    Category.BUILD: re.compile(
        r"fatal error: [\w/.+-]+\.h: No such file|" + BUILD_LIBRARY.pattern, re.MULTILINE
    )
}


def diagnose(output: str, *, fallback: Category = Category.UNKNOWN) -> Diagnosis:
    """The category of a failure and the line of `output` that shows it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for category, pattern in _PATTERNS:
        # Errors are reported last: search from the end so the final cause wins over warnings.
        matching = [line for line in reversed(lines) if pattern.search(line)]
        if not matching:
            continue
        # pytest's one-line summary cuts a long message ("... was removed in ..."); the
        # traceback's `E` line above it has it whole: the line that names a subject is preferred,
        # and for a build the compiler's missing header over the installer's closing lines.
        preferred = _PREFERRED.get(category)
        if preferred is not None:
            matching.sort(key=lambda line: preferred.search(line) is None)
        for line in matching:
            subject = _subject(category, line)
            if subject is not None:
                return Diagnosis(category, _with_cause(category, line, lines)[:400], subject)
        return Diagnosis(category, _with_cause(category, matching[0], lines)[:400])
    evidence = next((line for line in reversed(lines) if re.search(r"[Ee]rror", line)), None)
    if evidence is None:
        evidence = lines[-1] if lines else "(no output)"
    return Diagnosis(fallback, evidence[:400])


# The installer's lines around a build that failed (pip's `error: subprocess-exited-with-error`,
# `Failed building wheel`; uv's `Failed to build`), which name no cause (numexpr 2.7.3, stop 44:
# the evidence was `error: subprocess-exited-with-error`, the cause a TypeError in
# numpy.distutils under it), and the lines under (or above) them that do: the exception the
# build's Python raised, or the compiler's first error.
_BUILD_WRAPPER = re.compile(
    r"subprocess-exited-with-error|metadata-generation-failed|Failed building wheel|"
    r"Failed to build|Building wheel for .* failed|error: command '[^']+' failed"
)
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit): \S")
_COMPILER_ERROR = re.compile(
    r"^\S+\.(?:c|cc|cpp|cxx|h|hpp|f|f90|pyx):\d+(?::\d+)?: (?:fatal )?error: "
)


def _with_cause(category: Category, line: str, lines: list[str]) -> str:
    """A build's evidence `line`, with the cause above it when `line` is only the installer's
    wrapper: `TypeError: Compiler.__init__() takes ... (error: subprocess-exited-with-error)`."""
    if category is not Category.BUILD or not _BUILD_WRAPPER.search(line):
        return line
    if _PREFERRED[Category.BUILD].search(line):
        return line
    last = max(i for i, text in enumerate(lines) if text == line)
    # pip and uv print the build's output below their wrapper line; an earlier attempt's above
    for part in (lines[last + 1 :], lines[:last]):
        raised = [t for t in part if _RAISED.match(t) and not _BUILD_WRAPPER.search(t)]
        if raised:
            return f"{raised[-1][:190]} ({line[:200]})"
        compiled = [t for t in part if _COMPILER_ERROR.match(t)]
        if compiled:
            return f"{compiled[0][:190]} ({line[:200]})"
    return line


def _subject(category: Category, line: str) -> str | None:
    if category is Category.IMPORT_ERROR and NUMPY_ABI.search(line):
        return NUMPY_ABI_SUBJECT
    pattern = _SUBJECTS.get(category)
    if pattern is None:
        return None
    match = pattern.search(line)
    if match is None:
        return None
    if category is Category.IMPORT_ERROR and match.group(1):
        return f"{match.group(2)}:{match.group(1)}"
    if category is Category.ATTRIBUTE_ERROR:
        if match.group(1):
            return f"{match.group(1)}:{match.group(2)}"
        if match.group(3):  # NumPy 2's own message: the release that removed it is named
            return f"numpy:{match.group(3)}:<{match.group(4)}"
        if match.group(5):
            return f"object:{match.group(5)}:{match.group(6)}"
        # A class's own attribute (`type object 'numpy.ndarray' has no attribute 'ptp'`)
        return f"object:{match.group(7)}:{match.group(8)}"
    return next((g for g in match.groups() if g), None)


@dataclass
class Verdict:
    tier: Tier
    category: Category | None = None
    evidence: str | None = None
    subject: str | None = None
    tests: dict[str, int] = field(default_factory=dict)  # passed/failed/error/skipped
    pass_ratio: float | None = None
    test_command: str | None = None
    output_tail: str = ""  # the last lines of the deciding command, for the repair loop and LLM
    # What a ready verdict left out, named: test modules that did not import (and why).
    skipped: list[str] = field(default_factory=list)
    skipped_diagnoses: list[Diagnosis] = field(default_factory=list)
    # The test files a repair can change the outcome of (those with a failed, erroring or
    # unimportable test), when the run named every one of them; empty when it did not (a
    # generic runner, a timeout): then only the whole suite can tell.
    retest: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long the deciding test run took
    # A run cut at its time limit with failures: what they show (a module, a removed name...),
    # so the repair loop still has something to fix (the category stays `timeout`).
    cause: Diagnosis | None = None
    # A verdict from a sample of the suite (the whole ran into its time limit): what was run
    sample: str | None = None
    # Modules a run short of ready warned were missing (`UserWarning: No module named 'X'`,
    # the project's own fallback for a guarded import), for the repair loop (`warned_missing`)
    missing: list[str] = field(default_factory=list)
    # What the failed tests' own messages show, each cause once (a run's diagnosis names one):
    # the repair loop applies the additive fixes among them in one round (`ladder._together`)
    causes: list[Diagnosis] = field(default_factory=list)
    # A failed test's hypothesis deadline message, wherever the output put it (`ladder._judge`)
    deadline: str | None = None
    # A failed test's message that a shared object it built in /tmp could not be loaded there
    # (a noexec mount), for the repair loop (`ladder._judge`, `ladder._exec_tmp`)
    noexec: str | None = None
    # Failed tests open files by a relative path that exists in their own folder, not at the
    # root they ran from (`ladder.relative_reads`), for the repair loop (`ladder._test_folder`)
    relative_reads: str | None = None

    @property
    def ready(self) -> bool:
        return self.tier.is_ready

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tier"] = str(self.tier)
        data["category"] = str(self.category) if self.category else None
        data.pop("output_tail")
        data.pop("skipped_diagnoses")
        data.pop("retest")
        data.pop("seconds")
        data.pop("cause")
        data.pop("missing")
        data.pop("causes")
        data.pop("deadline")
        data.pop("noexec")
        data.pop("relative_reads")
        return data

    def line(self) -> str:
        """One line for a person: the tier, the tests and, short of ready, why."""
        text = str(self.tier)
        notes = []
        if self.tests:
            ran = sum(self.tests.get(k, 0) for k in ("passed", "failed", "error"))
            notes.append(f"{self.tests.get('passed', 0)}/{ran} passed")
        # A skipped entry is a test module that did not import, or (an id with `::`) a test
        # the run was killed in and that was left out (see `killed_test`).
        modules = [s for s in self.skipped if "::" not in s.split(": ")[0]]
        tests = [s for s in self.skipped if s not in modules]
        if modules:
            n = len(modules)
            notes.append(
                f"{n} test module{'s' if n > 1 else ''} not importable: " + "; ".join(modules[:3])
            )
        if tests:
            n = len(tests)
            notes.append(f"{n} test{'s' if n > 1 else ''} left out: " + "; ".join(tests[:3]))
        if self.sample:
            notes.append(f"sampled: {self.sample}")
        if notes:
            text += f" ({'; '.join(notes)})"
        if self.category is not None:
            text += f" [{self.category}] {self.evidence}"
        return text


def verdict_from_tests(
    counts: dict[str, int],
    *,
    output: str,
    exit_code: int | None,
    timed_out: bool,
    command: str,
    min_tests: int = READY_PLUS_TESTS,
    modules: int = 0,
) -> Verdict:
    """The tier from a test run's per-test counts (a collection tier passed already).

    Test modules that did not import (pytest's collection errors) are not failed tests: they
    are taken out of the ratio and named (`Verdict.skipped`); a ready verdict with any is
    "ready (1 test module not importable: ...)", and more than a quarter of the modules
    failing to import is not ready. A runner that crashed at start-up (pytest's exit 3/4, an
    INTERNALERROR) is a collection failure, never "no tests"."""
    tail = "\n".join(output.splitlines()[-60:])
    broken = collection_errors(output)
    counts = dict(counts)
    if broken and counts.get("error", 0) >= len(broken):
        counts["error"] -= len(broken)
    ran = counts.get("passed", 0) + counts.get("failed", 0) + counts.get("error", 0)
    if timed_out:
        # Cut at its limit: what ran is reported (pytest, interrupted, still writes its report),
        # never called ready; the rest of the suite is unknown.
        failed = counts.get("failed", 0) + counts.get("error", 0)
        done = (
            f"after {ran} tests ({counts.get('passed', 0)} passed, {failed} failed)"
            if ran
            else "before any test finished"
        )
        # The failures that did report show their cause as in a finished run (seaborn 0.11.2:
        # 141 of 320 failed on names pandas 2 removed before the limit stopped the run).
        cause = diagnose(output, fallback=Category.TEST_FAILURES) if failed else None
        if cause is not None and cause.category in _NO_REPAIR:
            cause = None
        return Verdict(
            Tier.RUNS if ran else Tier.COLLECTS,
            Category.TIMEOUT,
            f"the time limit stopped the test run {done}: {command}"
            + (f"; the failures show: {cause.evidence.strip()[:200]}" if cause else ""),
            tests=counts,
            pass_ratio=counts.get("passed", 0) / ran if ran else None,
            test_command=command,
            output_tail=tail,
            cause=cause,
        )
    if exit_code == 137 and not ran and re.search(r"\bKilled\b", output):
        # SIGKILL before any test reported, not at the time limit: in a container, its memory
        # limit (lz4 3.1.10's tests allocate gigabytes). Never "no tests".
        return Verdict(
            Tier.COLLECTS,
            Category.KILLED,
            f"the test run was killed (SIGKILL) before any test reported, most likely by the "
            f"container's memory limit: {command}",
            tests=counts,
            test_command=command,
            output_tail=tail,
        )
    # pytest refusing a plugin or the project's conftest at start-up exits 1 with a traceback.
    crashed = exit_code in (3, 4) or "INTERNALERROR>" in output or REJECTED_PLUGIN.search(output)
    if crashed and not broken:
        line = next(
            (
                x
                for x in reversed(output.splitlines())
                if re.search(r"INTERNALERROR>.*\w+Error|^ERROR:|Error:", x)
            ),
            None,
        )
        diagnosis = diagnose(output, fallback=Category.COLLECTION)
        category = diagnosis.category
        if category in (Category.NO_TESTS, Category.UNKNOWN):
            category = Category.COLLECTION
        return Verdict(
            Tier.IMPORTS,
            category,
            (line or diagnosis.evidence).strip()[:400]
            if category is Category.COLLECTION
            else diagnosis.evidence,
            diagnosis.subject,
            tests=counts,
            test_command=command,
            output_tail=tail,
        )
    crash = _test_module_crash(output) if exit_code and ran <= 1 else None
    if crash is not None and counts.get("passed", 0) == 0:
        # A suite script that imports the test modules itself stopped at one: no test ran.
        path, error = crash
        return Verdict(
            Tier.IMPORTS,
            Category.COLLECTION,
            f"{path} did not import: {error}"[: 400 - len(STOPPED_AT_MODULE)] + STOPPED_AT_MODULE,
            tests={},
            test_command=command,
            output_tail=tail,
        )
    if ran == 0 and broken:
        first = broken[0]
        return Verdict(
            Tier.IMPORTS,
            first[1].category if first[1].category is not Category.UNKNOWN else Category.COLLECTION,
            f"{len(broken)} test module(s) did not import; {first[0]}: {first[1].evidence}"[:400],
            first[1].subject,
            tests=counts,
            test_command=command,
            output_tail=tail,
        )
    if ran == 0:
        diagnosis = diagnose(output, fallback=Category.NO_TESTS)
        if exit_code not in (0, 5) and diagnosis.category is not Category.NO_TESTS:
            return Verdict(
                Tier.IMPORTS,
                diagnosis.category,
                diagnosis.evidence,
                diagnosis.subject,
                tests=counts,
                test_command=command,
                output_tail=tail,
            )
        return Verdict(
            Tier.COLLECTS,
            Category.NO_TESTS,
            diagnosis.evidence if diagnosis.category is Category.NO_TESTS else "no test ran",
            tests=counts,
            test_command=command,
            output_tail=tail,
        )
    ratio = counts.get("passed", 0) / ran
    skipped = [f"{path}: {_why(d)}" for path, d in broken]
    # A module may be left out of a ready verdict (and named) only for a cause outside the
    # code: a system library, a distribution or data it needs. A TypeError, a SyntaxError...
    # while importing it is the project's code failing, so the verdict is a collection error.
    code_errors = [(p, d) for p, d in broken if d.category not in _ENVIRONMENT_CAUSES]

    def runs(category: Category, evidence: str, subject: str | None) -> Verdict:
        """Tests ran, not ready: with this run's counts, ratio, command, tail and skipped."""
        return Verdict(
            Tier.RUNS,
            category,
            evidence,
            subject,
            tests=counts,
            pass_ratio=round(ratio, 4),
            test_command=command,
            output_tail=tail,
            skipped=skipped,
            skipped_diagnoses=[d for _, d in broken],
            missing=warned_missing(output),
        )

    if ratio >= READY_RATIO and (code_errors or len(broken) > max(1, modules // 4)):
        first = (code_errors or broken)[0]
        return runs(
            Category.COLLECTION,
            f"{len(broken)} of {modules} test modules did not import; {first[0]}: "
            f"{first[1].evidence}"[:400],
            first[1].subject,
        )
    if ratio >= READY_RATIO:
        tier = Tier.READY_PLUS if ran >= min_tests else Tier.READY
        return Verdict(
            tier,
            tests=counts,
            pass_ratio=round(ratio, 4),
            test_command=command,
            skipped=skipped,
            skipped_diagnoses=[d for _, d in broken],
            output_tail=tail if broken else "",
        )
    diagnosis = diagnose(output, fallback=Category.TEST_FAILURES)
    category = diagnosis.category
    if category in (Category.NO_TESTS, Category.UNKNOWN):
        category = Category.TEST_FAILURES
    evidence = diagnosis.evidence
    if category is Category.TEST_FAILURES:
        evidence = (
            f"{ran - counts.get('passed', 0)} of {ran} tests failed; {_first_failure(output)}"
        )
    return runs(category, evidence, diagnosis.subject)


# A warning that a module is missing, in pytest's warnings summary or on stderr:
# `src/numdifftools/profiletools.py:76: UserWarning: No module named 'line_profiler'`, what a
# project's guarded import does without it (numdifftools 0.9.39 then profiles nothing).
_WARNED_MISSING = re.compile(r"\b\w*Warning: No module named '([A-Za-z_][\w.]*)'")


def failure_causes(messages: list[str], limit: int = 8) -> list[Diagnosis]:
    """The distinct causes the failed tests' messages show, most frequent first (cffi 1.15.0:
    884 `No module named '_cffi_backend'`, 173 `No module named 'pycparser'`, 62 `module 'py'
    has no attribute 'test'`), none a test's plain assertion; at most `limit`."""
    counted: dict[tuple[Category, str], tuple[int, Diagnosis]] = {}
    distinct: dict[str, int] = {}
    for message in messages:
        distinct[message] = distinct.get(message, 0) + 1
    for message, times in list(distinct.items())[:200]:
        found = diagnose(message)
        if found.category in _NO_REPAIR or (
            found.subject is None and found.category not in (Category.MISSING_PLUGIN,)
        ):
            continue
        key = (found.category, found.subject or found.evidence)
        n, first = counted.get(key, (0, found))
        counted[key] = (n + times, first)
    ranked = sorted(counted.values(), key=lambda pair: -pair[0])
    return [d for _, d in ranked[:limit]]


def warned_missing(output: str) -> list[str]:
    """The modules a run's warnings say are missing, in the order first seen."""
    return list(dict.fromkeys(_WARNED_MISSING.findall(output)))


# What says nothing a repair could act on.
_NO_REPAIR = (Category.TEST_FAILURES, Category.UNKNOWN, Category.NO_TESTS, Category.TIMEOUT)

# A test module written for another Python (regex 2021.11.10 ships regex_2/ beside regex_3/ and
# installs the one of the running interpreter) is outside the code under test here, too.
_ENVIRONMENT_CAUSES = (
    Category.SYSTEM_LIBRARY,
    Category.MODULE_NOT_FOUND,
    Category.NETWORK,
    Category.PYTHON_VERSION,
)
# pytest's short summary names a module that failed to import without a test id:
# `ERROR tests/test_graph.py - ImportError: libgobject-2.0.so.0: cannot open shared object file`
_COLLECTION_ERROR = re.compile(r"^ERROR (\S+\.py)(?: - (.*))?$")


def collection_errors(output: str) -> list[tuple[str, Diagnosis]]:
    """(test module, diagnosis of why it did not import) for each collection error pytest
    reports; the diagnosis reads the module's own traceback section when there is one."""
    found: list[tuple[str, Diagnosis]] = []
    seen: set[str] = set()
    for line in output.splitlines():
        match = _COLLECTION_ERROR.match(line.strip())
        if not match or "::" in match.group(1) or match.group(1) in seen:
            continue
        path = match.group(1)
        seen.add(path)
        section = _section(output, path)
        diagnosis = diagnose(section or (match.group(2) or ""), fallback=Category.COLLECTION)
        found.append((path, diagnosis))
    return found


def _section(output: str, path: str) -> str:
    """The `___ ERROR collecting PATH ___` section of pytest's report."""
    match = re.search(
        rf"_+ ERROR collecting {re.escape(path)} _+\n(.*?)(?=\n_{{3,}} |\n=+ |\Z)", output, re.S
    )
    return match.group(1) if match else ""


_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+, in (?P<name>\S+)', re.MULTILINE)


def module_crash(verdict: Verdict) -> tuple[str, str] | None:
    """(test file, exception line) of a suite script that stopped importing a test module
    (the verdict `verdict_from_tests` gives such a run), else None."""
    if verdict.category is not Category.COLLECTION or not (verdict.evidence or "").endswith(
        STOPPED_AT_MODULE
    ):
        return None
    return _test_module_crash(verdict.output_tail)


def with_modules_left_out(
    verdict: Verdict, left_out: list[tuple[str, Diagnosis]], modules: int
) -> Verdict:
    """A run with test modules left out (each with why it did not import), judged as pytest's
    collection errors are: named in `skipped`; a ready verdict stays ready only when each was
    left out for a cause outside the code under test (`_ENVIRONMENT_CAUSES`) and no more than
    a quarter of the test modules were."""
    # Named once: an evidence line that starts with the module's path does not repeat it.
    named = [(p, replace(d, evidence=d.evidence.removeprefix(f"{p}: "))) for p, d in left_out]
    skipped = [*verdict.skipped, *(f"{path}: {_why(d)}" for path, d in named)]
    diagnoses = [*verdict.skipped_diagnoses, *(d for _, d in left_out)]
    verdict = replace(verdict, skipped=skipped, skipped_diagnoses=diagnoses)
    code_errors = [(p, d) for p, d in left_out if d.category not in _ENVIRONMENT_CAUSES]
    if verdict.ready and (code_errors or len(left_out) > max(1, modules // 4)):
        path, diagnosis = (code_errors or left_out)[0]
        return replace(
            verdict,
            tier=Tier.RUNS,
            category=Category.COLLECTION,
            evidence=f"{len(left_out)} of {modules} test modules did not import; {path}: "
            f"{diagnosis.evidence}"[:400],
            subject=diagnosis.subject,
        )
    return verdict


def _test_module_crash(output: str) -> tuple[str, str] | None:
    """(test file, exception line) when the output ends in an uncaught traceback raised at
    the top level of a test module (a suite script importing it), else None."""
    start = output.rfind("Traceback (most recent call last):")
    if start < 0:
        return None
    block = output[start:]
    frames = list(_FRAME.finditer(block))
    if not frames or frames[-1].group("name") != "<module>":
        return None
    path = PurePosixPath(frames[-1].group("path"))
    if not (path.name.startswith("test") or path.stem.endswith("_test")):
        return None
    after = block[frames[-1].end() :].splitlines()
    raised = (x.strip() for x in reversed(after) if re.match(r"\w[\w.]*(Error|Exception)", x))
    error = next(raised, "")
    if not error:
        return None
    parts = path.parts
    shown = "/".join(parts[parts.index("workspace") + 1 :]) if "workspace" in parts else None
    return shown or _relative_test_path(path), error


def _relative_test_path(path: PurePosixPath) -> str:
    """From the first folder named like a test folder (the checkout's root is not known)."""
    parts = path.parts
    for i, part in enumerate(parts):
        if part in ("test", "tests", "testing"):
            return "/".join(parts[i:])
    return path.name


# A test's line in pytest's verbose report: its id, then its outcome once it has one.
_VERBOSE_TEST = re.compile(
    r"^(?P<id>[\w./-]+\.py::[^\s\[]+(?:\[[^\]\n]*\])?)(?P<rest>.*)$", re.MULTILINE
)
_OUTCOME = re.compile(r"\b(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


def killed_test(output: str) -> str | None:
    """The test a verbose (`-v`, unbuffered) pytest run was in when it was killed: the last
    test id the report printed with no outcome after it (pytest prints the id when the test
    starts, its outcome when it ends). None when the run was killed between tests or before
    any (while importing the test modules)."""
    found = list(_VERBOSE_TEST.finditer(output))
    if not found or _OUTCOME.search(found[-1]["rest"]):
        return None
    return found[-1]["id"]


def _why(diagnosis: Diagnosis) -> str:
    if diagnosis.category is Category.SYSTEM_LIBRARY and diagnosis.subject:
        return f"needs {diagnosis.subject}"
    if diagnosis.category is Category.MODULE_NOT_FOUND and diagnosis.subject:
        return f"needs {diagnosis.subject}"
    if diagnosis.category is Category.PYTHON_VERSION:
        return f"written for another Python ({diagnosis.evidence[:120]})"
    return diagnosis.evidence[:160]


def _first_failure(output: str) -> str:
    """The first failing test and its first `E` line (pytest), else the last error line."""
    lines = output.splitlines()
    test = next((line[7:].split(" - ")[0] for line in lines if line.startswith("FAILED ")), "")
    error = next((line[1:].strip() for line in lines if re.match(r"^E\s+\S", line)), "")
    if test or error:
        return f"{test}: {error}".strip(": ")[:400]
    return diagnose(output).evidence


_CTEST = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")
_AUTOMAKE = re.compile(r"^# (PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):\s+(\d+)", re.M)
_PLAIN = re.compile(r"(\d+) passed(?:, (\d+) failed)?")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
_UNITTEST_BAD = re.compile(r"(failures|errors)=(\d+)")


def count_generic(output: str, exit_code: int | None) -> dict[str, int]:
    """Per-test counts from ctest, automake `make check` or a plain `N passed, N failed` line;
    a run with none of them counts as one test that passed or failed by its exit code."""
    ctest = list(_CTEST.finditer(output))
    if ctest:
        match = ctest[-1]
        total, failed = int(match.group(3)), int(match.group(2))
        return {"passed": total - failed, "failed": failed, "error": 0, "skipped": 0}
    automake = dict((kind, int(n)) for kind, n in _AUTOMAKE.findall(output))
    if automake:
        return {
            "passed": automake.get("PASS", 0) + automake.get("XFAIL", 0),
            "failed": automake.get("FAIL", 0) + automake.get("XPASS", 0),
            "error": automake.get("ERROR", 0),
            "skipped": automake.get("SKIP", 0),
        }
    ran = _UNITTEST_RAN.findall(output)
    if ran:
        total = int(ran[-1])
        bad = dict((kind, int(n)) for kind, n in _UNITTEST_BAD.findall(output.split("Ran ")[-1]))
        failed, errors = bad.get("failures", 0), bad.get("errors", 0)
        return {"passed": total - failed - errors, "failed": failed, "error": errors, "skipped": 0}
    plains = list(_PLAIN.finditer(output))
    if plains:
        plain = plains[-1]
        return {
            "passed": int(plain.group(1)),
            "failed": int(plain.group(2) or 0),
            "error": 0,
            "skipped": 0,
        }
    ok = exit_code == 0
    return {"passed": int(ok), "failed": int(not ok), "error": 0, "skipped": 0}
