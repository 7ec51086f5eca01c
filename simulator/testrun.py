"""Test runs: building the command and reading per-test outcomes, out of pytest's JUnit XML or
out of `python -m unittest -v`'s report (what setup leaves when only unittest runs)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from simulator.wire import Record

if TYPE_CHECKING:  # loaded when a report is read, not with every session (`reposim open`)
    import xml.etree.ElementTree as ET

DEFAULT_TEST_COMMAND = '"$(command -v python || command -v python3)" -m pytest'
_PYTEST = re.compile(r"(^|[\s/;&|(])(py\.test|pytest)(\s|$)")
_LOCATION = re.compile(r"^(?P<file>[^\s:][^:\n]*\.py):(?P<line>\d+): ", re.MULTILINE)


_UNITTEST = re.compile(r"(^|\s)-m\s+unittest(\s|$)")
# `test_x (pkg.mod.Class.test_x) ... ok` (3.11+; before, `(pkg.mod.Class)`), the status maybe
# on a later line (a docstring's first line, or what the test printed, comes between)
_UNITTEST_TEST = re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?P<rest>.*)$")
_UNITTEST_STATUS = re.compile(
    r"\.\.\. (?P<status>ok|FAIL|ERROR|skipped(?: (?P<why>.*))?|expected failure|"
    r"unexpected success)$"
)
_UNITTEST_BLOCK = re.compile(r"^(?P<kind>FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)")
_UNITTEST_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.MULTILINE)
_UNITTEST_OUTCOME = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "skipped": "skipped",
    "expected failure": "passed",
    "unexpected success": "failed",
}


def is_pytest(command: str) -> bool:
    return bool(_PYTEST.search(command))


def is_unittest(command: str) -> bool:
    return bool(_UNITTEST.search(command)) and not is_pytest(command)


def unittest_command(command: str, selector: str | None) -> str:
    """The command with unittest's verbose report (a line per test) switched on."""
    selected = f"{command} {selector}" if selector else command
    return selected if re.search(r"(^|\s)(-v|--verbose)(\s|$)", selected) else f"{selected} -v"


def _unittest_id(name: str, where: str) -> str:
    return where if where.endswith(f".{name}") else f"{where}.{name}"


def parse_unittest(output: str, root: str) -> list[TestOutcome]:
    """Per-test outcomes from `python -m unittest -v`'s report; a failure's message is its
    traceback with the exception first, located at the innermost frame under `root` (the
    workspace: the repository's own code, not unittest's or an installed package's)."""
    lines = output.splitlines()
    statuses: dict[str, tuple[str, str]] = {}
    order: list[str] = []
    pending: str | None = None
    for line in lines:
        test = _UNITTEST_TEST.match(line)
        if test and not line.startswith(("FAIL: ", "ERROR: ")):
            pending = _unittest_id(test["name"], test["where"])
            line = test["rest"]
        status = _UNITTEST_STATUS.search(line) if pending else None
        if status and pending:
            word = status["status"].split(" ")[0] if status["why"] else status["status"]
            why = (status["why"] or "").strip().strip("'\"")
            statuses[pending] = (_UNITTEST_OUTCOME.get(word, "error"), why)
            order.append(pending)
            pending = None
    messages = _unittest_failures(lines, root)
    outcomes = []
    for test_id in [*order, *(t for t in messages if t not in statuses)]:
        outcome, why = statuses.get(test_id, ("error", ""))
        text, file, line_number = messages.get(test_id, (why, None, None))
        outcomes.append(
            TestOutcome(test_id, outcome, 0.0, text, file, line_number)  # type: ignore[arg-type]
        )
    return outcomes


_Failure = tuple[str, str | None, int | None]


def _unittest_failures(lines: list[str], root: str) -> dict[str, _Failure]:
    """{test id: (message, file, line)} from the FAIL:/ERROR: blocks after the run."""
    found: dict[str, _Failure] = {}
    at = 0
    while at < len(lines):
        block = _UNITTEST_BLOCK.match(lines[at])
        at += 1
        if not block:
            continue
        while at < len(lines) and not lines[at].startswith("-" * 20):
            at += 1
        body = []
        at += 1
        while at < len(lines) and not lines[at].startswith(("=" * 20, "-" * 20)):
            body.append(lines[at])
            at += 1
        traceback = "\n".join(body).strip()
        reason = next((b for b in reversed(body) if b.strip()), "")
        prefix = root.rstrip("/") + "/"
        frames = [
            (m["file"][len(prefix) :], int(m["line"]))
            for m in _UNITTEST_FRAME.finditer(traceback)
            if m["file"].startswith(prefix) and _in_repository(m["file"][len(prefix) :])
        ]
        file, line = frames[-1] if frames else (None, None)
        test_id = _unittest_id(block["name"], block["where"])
        found[test_id] = (_failure_text(reason, traceback), file, line)
    return found


def pytest_command(command: str, selector: str | None, report: str) -> str:
    """The command with pytest's JUnit report switched on (xunit1 keeps file and line)."""
    selected = f"{command} {selector}" if selector else command
    return f"{selected} --junitxml={report} -o junit_family=xunit1"


@dataclass(frozen=True)
class TestOutcome(Record):
    __test__ = False  # not a pytest class
    STRICT = True

    id: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    duration: float
    message: str = ""
    file: str | None = None
    line: int | None = None
    """For a failure, where it was raised (the innermost frame in the repository's code); else
    the test."""


@dataclass
class TestRunResult:
    __test__ = False

    command: str
    exit_code: int | None
    duration: float
    output: str
    structured: bool
    """True when per-test outcomes were read (pytest); False for a generic pass/fail command."""
    tests: list[TestOutcome] = field(default_factory=list)
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def counts(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        for test in self.tests:
            counts[test.outcome] = counts.get(test.outcome, 0) + 1
        return counts

    def summary(self) -> str:
        if not self.structured:
            state = "timed out" if self.timed_out else f"exit code {self.exit_code}"
            return ("passed" if self.passed else "failed") + f" ({state})"
        counts = self.counts()
        parts = [f"{n} {name}" for name, n in counts.items() if n]
        return ", ".join(parts) or "no tests ran"


def _node_id(case: ET.Element) -> str:
    name = case.get("name", "?")
    classname = case.get("classname", "")
    file = case.get("file")
    if file:
        module = file[:-3].replace("/", ".") if file.endswith(".py") else file
        rest = classname[len(module) :].lstrip(".") if classname.startswith(module) else ""
        parts = [file, *([p for p in rest.split(".") if p]), name]
        return "::".join(parts)
    return f"{classname}::{name}" if classname else name


def _failure_location(text: str, test_file: str | None) -> tuple[str | None, int | None]:
    """Where a failure was raised: the innermost frame of pytest's traceback in the repository's
    own code (a path pytest prints relative to the repository, not an installed package's),
    e.g. the `return a / b` of a ZeroDivisionError rather than the test that called it; an
    assertion's is its line in the test. Else the deepest frame in the test's own file."""
    matches = list(_LOCATION.finditer(text))
    own_code = [m for m in matches if _in_repository(m.group("file"))]
    if own_code:
        return own_code[-1].group("file"), int(own_code[-1].group("line"))
    if test_file:
        own = [m for m in matches if m.group("file") == test_file]
        if own:
            return own[-1].group("file"), int(own[-1].group("line"))
    if matches:
        return matches[-1].group("file"), int(matches[-1].group("line"))
    return None, None


def _in_repository(path: str) -> bool:
    parts = path.split("/")
    return not path.startswith(("/", "<")) and not {"site-packages", "dist-packages"} & set(parts)


MESSAGE_LIMIT = 2000


def _failure_text(message: str, detail: str) -> str:
    """A failure's message and then its traceback: pytest's message alone can be as bare as
    "collection failure", while the reason (`E   ModuleNotFoundError: ...`) is in the traceback.
    The end of a long traceback is kept (that is where the reason is)."""
    message, detail = message.strip(), detail.strip()
    text = f"{message}\n\n{detail}" if detail and detail != message else message
    if len(text) <= MESSAGE_LIMIT:
        return text
    head = message.splitlines()[0][:200] if message else ""
    return f"{head}\n…\n{text[-(MESSAGE_LIMIT - len(head) - 3) :]}"


def failure_reason(message: str) -> str:
    """The line that says why a test failed: the traceback's last `E ` line, else the first."""
    reasons = [line[1:].strip() for line in message.splitlines() if line.startswith("E ")]
    reasons = [r for r in reasons if r]
    errors = [r for r in reasons if "Error" in r or "Exception" in r]
    if errors:
        return errors[-1]  # the exception that ended it, e.g. ModuleNotFoundError: ...
    if reasons:
        return reasons[0]  # an assertion: its first line, e.g. assert 3 == 4
    return message.splitlines()[0] if message else ""


def parse_junit(xml_text: str) -> list[TestOutcome]:
    """Per-test outcomes from a pytest JUnit XML report (xunit1 or xunit2)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return []
    outcomes = []
    for case in root.iter("testcase"):
        if case.get("name") is None:
            continue  # pytest's entry for a test a Ctrl+C (SIGINT) stopped: it did not pass
        test_file = case.get("file")
        test_line = case.get("line")
        outcome: Literal["passed", "failed", "error", "skipped"] = "passed"
        message, detail = "", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                message = child.get("message", "") or ""
                detail = child.text or ""
                break
            if child.tag == "skipped":
                outcome = "skipped"
                message = child.get("message", "") or ""
                break
        file, line = (test_file, int(test_line) + 1 if test_line else None)
        if outcome in ("failed", "error"):
            fail_file, fail_line = _failure_location(detail, test_file)
            if fail_file is not None:
                file, line = fail_file, fail_line
        outcomes.append(
            TestOutcome(
                id=_node_id(case),
                outcome=outcome,
                duration=float(case.get("time", 0) or 0),
                message=_failure_text(message, detail)
                if outcome in ("failed", "error")
                else (message.strip()[:2000]),
                file=file,
                line=line,
            )
        )
    return outcomes
