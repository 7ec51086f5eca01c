"""The install ladder: rung after rung inside a Session until the oracle says "ready".

    detect -> environment -> project -> requirements -> test-runner -> imports -> oracle
           -> (repair -> oracle) * rounds

Every rung is a stage of one `WorkflowRun("setup")`, and every command it runs goes through
`Session.exec`, so the trajectory holds the whole setup like any other session. `run_setup` is
the entry point the CLI, the batch worker and the UI share: give it an open session, get a
`SetupResult` back and follow progress through the session's workflow events.

Installs use `uv pip` (fast; uv is installed into the container with pip when the image has
none) and fall back to plain pip when uv fails, since a few sdists build only under pip.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from backends.base import ExecResult
from simulator.events import Actor
from simulator.session import Session
from simulator.setup.aptlists import APT, FETCH_FAILED, Lists, ensure_lists, run_as_root
from simulator.setup.detect import Project, detect
from simulator.setup.era import EraRule, era_causes
from simulator.setup.era import evidence as era_evidence
from simulator.setup.imports import ImportScan, scan
from simulator.setup.names import (
    PROBE_SCRIPT,
    Resolution,
    checked_requirement,
    install_argv,
    parse_probe_output,
    resolve_imports,
    valid_distribution_name,
)
from simulator.setup.oracle import (
    READY_RATIO,
    Category,
    Diagnosis,
    Tier,
    Verdict,
    collection_errors,
    count_generic,
    diagnose,
    failure_causes,
    killed_test,
    module_crash,
    verdict_from_tests,
    with_modules_left_out,
)
from simulator.setup.pins import (
    HAS_SCRIPT,
    RELEASES_SCRIPT,
    REMOVED_FROM_SCRIPT,
    Removed,
    candidates,
    nearest_moment,
    nearest_with,
    newest_with,
)
from simulator.setup.repair import (
    HEADER_LOOKUP,
    HEADER_PACKAGES,
    IGNORABLE_OPTION,
    SYSTEM_LOOKUP,
    Fix,
    RepairState,
    defined_classes,
    moved_back,
    nose_style_classes,
    plan,
)
from simulator.setup.testcmd import TestCommand, project_test_commands, suite_scripts
from simulator.testrun import TestRunResult, is_pytest
from simulator.workflow import WorkflowRun

WORKFLOW = "setup"


@dataclass(frozen=True)
class SetupOptions:
    repair_rounds: int = 5
    install_timeout: float = 900.0
    test_timeout: float = 900.0
    # Importing the installed project (the `imports` tier); also cut at what is left of the
    # budget. Heavy scientific stacks take minutes to import on a loaded machine.
    import_timeout: float = 600.0
    min_tests: int = 10
    use_uv: bool = True
    install_imports: bool = True  # the import-scan rung (off to measure the ladder without it)
    venv_dir: str | None = None  # where to make the venv (default: the session's private dir)
    # Seconds for the whole ladder: no repair round starts that would leave too little for the
    # whole-suite run that confirms it (None: rounds are capped by `repair_rounds` only).
    budget: float | None = 1200.0


@dataclass
class SetupResult:
    verdict: Verdict
    project: Project
    python: str | None = None  # the environment's interpreter
    venv: str | None = None
    installer: str = "pip"
    uv: str | None = None  # the uv binary in the environment, when installs used it
    installed: list[str] = field(default_factory=list)  # what the rungs asked for, in order
    repairs: list[dict[str, Any]] = field(default_factory=list)
    system_packages: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # install commands that succeeded
    seconds: float = 0.0
    # How dependencies were resolved: {"mode": "as-of-commit", "date": ...} or {"mode": "today",
    # "reason": ...}
    resolution: dict[str, Any] = field(default_factory=lambda: {"mode": "today"})
    lock: list[str] = field(default_factory=list)  # name==version of the ready environment
    # The build tools of the project's era every build used (`setuptools==45.1.0`), when
    # today's could not build it (simulator/setup/era.py)
    build_constraints: list[str] = field(default_factory=list)
    # Options of the project's pytest config that setup's plugin module accepts and ignores
    # (`--pep8`): the generated Dockerfile writes the same module
    ignored_options: list[str] = field(default_factory=list)
    # What the venv was made from: python3, or Debian's pypy3 for a project that needs a Python
    # older than the image's (the generated Dockerfile makes its venv the same way)
    interpreter: str = "python3"
    # setup's plugin module that turns hypothesis's deadline off is loaded (the Dockerfile
    # writes it too)
    no_deadline: bool = False
    # setup's plugin module that gives the tests a temporary folder shared objects can be loaded
    # from (/tmp here is noexec) is loaded (the Dockerfile writes it too)
    exec_tmp: bool = False
    unresolved_imports: dict[str, str] = field(default_factory=dict)  # import -> why not installed
    rejected: list[str] = field(default_factory=list)  # names refused as not distribution names
    notes: list[str] = field(default_factory=list)  # why an install went another way

    @property
    def test_command(self) -> str | None:
        return self.verdict.test_command

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.to_dict(),
            "language": self.project.language,
            "build_backend": self.project.build_backend,
            "c_build": self.project.c_build,
            "python": self.python,
            "venv": self.venv,
            "installer": self.installer,
            "installed": self.installed,
            "repairs": self.repairs,
            "system_packages": self.system_packages,
            "commands": self.commands,
            "seconds": round(self.seconds, 3),
            "resolution": self.resolution,
            "lock": self.lock,
            "build_constraints": self.build_constraints,
            "ignored_options": self.ignored_options,
            "interpreter": self.interpreter,
            "no_deadline": self.no_deadline,
            "exec_tmp": self.exec_tmp,
            "unresolved_imports": self.unresolved_imports,
            "rejected": self.rejected,
            "notes": self.notes,
        }


class _Env:
    """The environment being built: its interpreter and how to install into it."""

    def __init__(self, session: Session, options: SetupOptions) -> None:
        self.session = session
        self.options = options
        self.venv = ""
        self.python = "python3"
        self.uv: str | None = None
        self.commands: list[str] = []
        self.installed: list[str] = []
        self.rejected: list[str] = []  # requirements refused as not distribution names
        self.notes: list[str] = []  # why an install went another way than planned
        self.constraints: str | None = None  # the as-of-the-commit pins (time travel)
        # The era's build tools (a constraints file for builds), when today's could not build
        self.build_constraints: str | None = None
        self.build_pins: list[str] = []
        self.era_tools: set[str] = set()  # the tools an era retry was made for
        self.era_dated = False  # the era's tools in force are those of the project's date
        self.resolution: dict[str, Any] = {"mode": "today"}
        self.last_output = ""
        self.cut_cpu: float | None = None  # CPU seconds of the last test run, when it was cut
        # Tests a run was killed in (SIGKILL: the memory limit), left out of later runs
        self.killed_tests: list[str] = []
        # Options of the project's pytest config no plugin here provides, accepted and ignored
        self.ignored_options: list[str] = []
        self.interpreter = "python3"  # what the venv was made from (OLDER_PYTHON when needed)
        self.no_deadline = False  # setup's plugin turning hypothesis's deadline off is loaded
        self.exec_tmp = False  # setup's plugin giving the tests an exec-able temporary folder
        self.test_folder = False  # setup's plugin running each test in its file's folder
        self.no_build_isolation = False  # builds use the venv's tools (Cython < 3 to redo old C)
        self.pip_tmp: str | None = None  # the folder pip builds in (made once a venv)
        self.deadline = time.monotonic() + options.budget if options.budget else None

    def test_timeout(self, share: float = 1.0) -> float:
        """A test run's time limit: its own, or `share` of what is left of the budget,
        whichever is less (at least a minute: a verdict needs a run). A run cut there is a
        timeout verdict with its category and evidence, where the batch's limit would have
        killed the whole task."""
        limit = self.options.test_timeout
        if self.deadline is None:
            return limit
        return max(MIN_TEST_SECONDS, min(limit, share * (self.deadline - time.monotonic())))

    def install_timeout(self) -> float:
        """An install's time limit: its own, or what is left of the budget (at least a minute),
        whichever is less. autograd 1.3 on pypy3: a pin of numpy below 1.24 had no wheel for
        it and built NumPy from source past the budget, into the batch's limit."""
        limit = self.options.install_timeout
        if self.deadline is None:
            return limit
        return max(MIN_TEST_SECONDS, min(limit, self.deadline - time.monotonic()))

    def budget_left(self) -> float | None:
        """Seconds left of the ladder's budget (None: no budget)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    async def run_tests(self, command: str, *, share: float = 1.0) -> TestRunResult:
        """A test run of `command` under `test_timeout(share)`; a run cut there is noted, and
        is `timed_out` with the container's CPU seconds in `cut_cpu` (see `interrupt_at`)."""
        timeout = self.test_timeout(share)
        at = interrupt_at(command, timeout)
        wrapped = command
        if at:
            wrapped = f"timeout -s INT -k {int(timeout - at) - 2} {int(at)} {command}"
        cpu_before = await _cpu_seconds(self)
        run = await self.session.run_tests(command=wrapped, actor=Actor.SYSTEM, timeout=timeout)
        # timeout(1) exits 124 once it interrupted the run, 137 when it then had to kill it.
        if at and run.exit_code in (124, 137) and run.duration >= at - 1:
            run = replace(run, timed_out=True)
        self.cut_cpu = None
        if run.timed_out:
            cpu_after = await _cpu_seconds(self)
            if cpu_before is not None and cpu_after is not None:
                self.cut_cpu = cpu_after - cpu_before
        self.note_cut(run, timeout, share)
        return run

    def note_cut(self, run: TestRunResult, timeout: float, share: float = 1.0) -> None:
        if run.timed_out and timeout < self.options.test_timeout:
            part, rest = "what", ""
            if share < 1.0 and timeout > MIN_TEST_SECONDS:
                part = f"{share:.0%} of what"
                rest = ", the rest kept for a sample of the suite or a repair"
            self.notes.append(
                f"a test run was cut at {timeout:.0f} s, {part} was left of the time budget "
                f"({self.options.budget:.0f} s){rest}: {run.command}"
            )

    async def sh(self, command: str, *, timeout: float | None = None) -> ExecResult:
        result = await self.session.exec(command, actor=Actor.SYSTEM, timeout=timeout or 120.0)
        self.last_output = result.output.decode("utf-8", "replace")
        return result

    async def python_json(self, script: str, *args: str) -> Any:
        """What `script`, run by the environment's Python with `args`, printed as JSON on its
        last line; None when it printed none."""
        words = " ".join(shlex.quote(a) for a in (script, *args))
        result = await self.sh(f"{self.python} -c {words}")
        try:
            return json.loads(result.output.decode("utf-8", "replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            return None

    async def install(
        self, requirements: list[str], *, options: list[str] | None = None, what: str = ""
    ) -> tuple[bool, str]:
        """Install with uv, then pip if uv fails. `options` are the ladder's own (`-e .[test]`,
        `-r FILE`, `--only-binary NAME`); `requirements` come after `--` and must be checked
        requirements (`names.checked_requirement`): no text from the repository is an option."""
        options = list(options or [])
        checked = [r for r in requirements if checked_requirement(r) is not None]
        dropped = [r for r in requirements if r not in checked]
        if dropped:
            self.rejected.extend(dropped)
        if not checked and not options:
            return False, f"not a distribution requirement: {', '.join(dropped)}"
        what = what or " ".join([*options, *checked])
        ok, output = await self._install_once(checked, options, what)
        if ok:
            return ok, output
        rules = [r for r in era_causes(output) if r.tool.lower() not in self.era_tools]
        regression = any(r.regression for r in rules)
        if not rules or not await self._take_era_tools(rules, output, dated=not regression):
            return ok, output
        ok, retried = await self._install_once(checked, options, what)
        if (
            not ok
            and self.era_dated
            and not regression
            and not [r for r in era_causes(retried) if r in rules]
            and not NO_EDITABLE.search(retried)
            and await self._take_era_tools(rules, retried, dated=False)
        ):
            # The tools as of the date got past the old-era cause and failed on something else:
            # too old for this Python (hmmlearn 0.2.7: pybind11 2.9.0, its date's, predates
            # Python 3.11's frame API). The newest release below the removal, once. Not for an
            # old setuptools that has no editable installs (deap 1.3.1's 45.1.0): the ladder's
            # next rung installs the project without -e, with the date's tools.
            ok, again = await self._install_once(checked, options, what)
            retried += again
        still = [r for r in era_causes(retried) if r in rules]
        if not ok and still:
            # The era's tools did not get past the same failure: builds go back to today's.
            line = era_evidence(retried, still[0])
            self.notes.append(
                f"the build tools of the project's era did not help ({line}); builds use "
                "today's again"
            )
            self.build_constraints, self.build_pins = None, []
        return ok, output + retried

    async def _install_once(
        self, checked: list[str], options: list[str], what: str
    ) -> tuple[bool, str]:
        attempts: list[tuple[str, list[str]]] = []
        if self.uv is not None:
            attempts.append(("uv", [self.uv, "pip", "install", "--python", self.python]))
        # pip builds in temporary folders, and /tmp in RepoSim's containers is mounted noexec: a
        # build dependency with compiled modules (NumPy in numexpr 2.7.3's build, stop 44) did
        # not load there ("failed to map segment from shared object"). A folder beside the venv.
        pip_tmp = f"{self.venv}.tmp"
        if self.pip_tmp != pip_tmp:
            made = await self.sh(f"mkdir -p {shlex.quote(pip_tmp)}")
            self.pip_tmp = pip_tmp if made.exit_code == 0 else None
        attempts.append(
            (
                "pip",
                [
                    "env", f"TMPDIR={pip_tmp}", self.python, "-m", "pip", "install",
                    "--disable-pip-version-check", "-q",
                ],
            )
        )  # fmt: skip
        output = ""
        for kind, prefix in attempts:
            argv = install_argv(prefix, [*self.uv_options(kind), *options], checked)
            command = " ".join(shlex.quote(a) for a in argv)
            limit = self.install_timeout()
            result = await self.sh(f"{command} 2>&1", timeout=limit)
            text = result.output.decode("utf-8", "replace")
            output += text
            if result.timed_out:
                if limit < self.options.install_timeout:
                    self.notes.append(
                        f"an install was cut at {limit:.0f} s, what was left of the time budget "
                        f"({self.options.budget:.0f} s): {what}"
                    )
                return False, output + f"\ntimed out after {limit:.0f} s"
            if result.exit_code == 0:
                self.commands.append(command)
                self.installed.append(what)
                return True, text
            if kind == "uv" and (
                _UV_FINAL.search(text)
                or MISSING_HEADER.search(text)
                or NO_EDITABLE.search(text)
                or era_causes(text)
            ):
                # pip would resolve the same index the same way, its compiler would miss the
                # same header, and its build would run the same build tools: no second,
                # slower try.
                break
            if kind == "uv" and _uv_builds_what_pip_would_not(text):
                self.notes.append(
                    "uv tried to build a dependency from source (the project's uv settings "
                    "or a toolchain download); installed as pip would instead"
                )
        return False, output

    def uv_options(self, kind: str) -> list[str]:
        """Options every install takes: the time-travel constraints and the era's build tools
        when they are in force."""
        options = ["-c", self.constraints] if self.constraints else []
        if self.no_build_isolation:
            options.append("--no-build-isolation")
        if self.build_constraints:
            flag = "--build-constraints" if kind == "uv" else "--build-constraint"
            options += [flag, self.build_constraints]
        return options

    async def _take_era_tools(
        self, rules: list[EraRule], output: str, *, dated: bool = True
    ) -> bool:
        """Builds take the era's tools for `rules` (with any taken before): each tool as of the
        project's commit date, below the release that removed what the build uses; the bound
        alone without a date (or uv), or when `dated` is False (the date's tools failed
        otherwise, or the cause is a regression in the tool: `EraRule.regression`). The notes
        say why and which releases. False when no set of tools was
        found."""
        self.era_tools.update(r.tool.lower() for r in rules)
        bounds = {r.tool.lower(): r.bound for r in rules}
        kept = [p for p in self.build_pins if _pinned_name(p).lower() not in bounds]
        date = commit_date(Path(self.session.source)) if dated else None
        source = ".reposim/era-build.in"
        await self.session.write_helper(source, ("\n".join(bounds.values()) + "\n").encode())
        pins: list[str] = []
        if date is not None and self.uv is not None:
            target = f"{self.venv}.era-build.txt"
            argv = [
                self.uv, "pip", "compile", "--quiet", "--python", self.python,
                "--exclude-newer", date, "--only-binary", ":all:", "--no-header",
                "--no-annotate", "-o", target, source,
            ]  # fmt: skip
            result = await self.sh(" ".join(shlex.quote(a) for a in argv) + " 2>&1")
            if result.exit_code == 0:
                read = await self.sh(f"cat {shlex.quote(target)}")
                lines = read.output.decode("utf-8", "replace").splitlines()
                pins = [x.strip() for x in lines if checked_requirement(x.strip())]
        when = f"as of the project's date ({date[:10]})" if pins and date else "below that release"
        pins = pins or list(bounds.values())
        pins = sorted({*kept, *pins}, key=str.lower)
        target = f"{self.venv}.build-constraints.txt"
        written = await self.sh(
            f"printf '%s\\n' {' '.join(shlex.quote(p) for p in pins)} > {shlex.quote(target)}"
        )
        if written.exit_code != 0:
            return False
        self.build_constraints, self.build_pins = target, pins
        self.era_dated = when != "below that release"
        if not dated and not any(r.regression for r in rules):
            self.notes.append(
                f"the build tools as of the project's date failed otherwise "
                f"({_last_error_line(output)}); built again with the newest below the release "
                f"that removed what the build uses: {', '.join(pins)}"
            )
            return True
        causes = "; ".join(f"{r.cause()} ({era_evidence(output, r)})" for r in rules)
        self.notes.append(
            f"the build failed on an old-era cause: {causes}; built again with the build tools "
            f"{when}: {', '.join(pins)}"
        )
        return True

    async def versions(self) -> dict[str, str]:
        script = (
            "import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name'].lower(): d.version for d in m.distributions()"
            " if d.metadata['Name']}))"
        )
        data = await self.python_json(script)
        if data is None:
            return {}
        return {str(k): str(v) for k, v in data.items()}


MISSING_HEADER = re.compile(r"fatal error: [\w/.+-]+\.h: No such file")
# The build backend has no PEP 660 hook (setuptools before 64): no editable install can work.
NO_EDITABLE = re.compile(r"has no attribute 'build_editable'|missing the 'build_editable' hook")
MIN_TEST_SECONDS = 60.0
_UV_FINAL = re.compile(
    r"No solution found when resolving|Failed to parse|not found in the package registry|"
    r"we can conclude that|was not found in the package registry"
)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[:200_000]
    except OSError:
        return ""


MAX_OWN_SOURCES = 3000  # the project's .py files read for the classes it defines


def _own_sources(root: Path) -> list[Path]:
    """The project's own Python files (not a virtualenv's, a build's or version control's)."""
    skip = {".git", ".hg", ".tox", ".nox", ".venv", "venv", "build", "node_modules", ".eggs"}
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("site-packages"))
        found += [Path(folder) / f for f in sorted(files) if f.endswith(".py")]
        if len(found) >= MAX_OWN_SOURCES:
            return found[:MAX_OWN_SOURCES]
    return found


def _last_error_line(output: str) -> str:
    """The last line of `output` that says `error:` (a compiler's, a build's), cut short."""
    lines = [x.strip() for x in output.splitlines() if re.search(r"\berror:", x)]
    compiler = [x for x in lines if re.search(r":\d+:\d+: error:", x)]
    return ((compiler or lines or ["no error line"])[-1])[:200]


def _uv_builds_what_pip_would_not(output: str) -> bool:
    """uv failed building a dependency from source where pip takes a published wheel: a Rust
    or other toolchain download (blocked here), or a build the project's [tool.uv] forced."""
    return bool(
        re.search(
            r"Cargo, the Rust package manager|rustup|can't find Rust compiler|"
            r"Failed to (build|download) `|Building source distribution|no-binary",
            output,
        )
    )


async def run_setup(
    session: Session, options: SetupOptions | None = None, *, params: dict[str, Any] | None = None
) -> SetupResult:
    """Set up the session's workspace; records a `setup` workflow run and returns its result.

    On return the session's shell has the environment activated and `session.test_command`
    is the test command the oracle used, so F5 and `reposim test` in the same session run it.
    """
    options = options or SetupOptions()
    t0 = time.monotonic()
    with WorkflowRun(session, WORKFLOW, params=dict(params or {})) as run:
        result = await _ladder(session, run, options)
        result.seconds = time.monotonic() - t0
        if result.verdict.test_command:
            session.test_command = result.verdict.test_command
        run.result(**result.to_dict())
    return result


async def _ladder(session: Session, run: WorkflowRun, options: SetupOptions) -> SetupResult:
    source = Path(session.source)
    with run.stage("detect") as detail:
        project = detect(source)
        imports = scan(source) if project.language == "python" else ImportScan()
        detail.update(
            language=project.language,
            build_backend=project.build_backend,
            c_build=project.c_build,
            extras=project.extras,
            requirement_files=project.requirement_files,
            pytest_plugins=project.pytest_plugins,
            python_requires=project.python_requires,
            hints=project.hints,
            files=imports.files,
            files_with_syntax_errors=imports.files_with_errors,
            imports=sorted(imports.required),
        )
    env = _Env(session, options)
    if project.language == "c":
        return await _c_ladder(session, run, env, project)
    if project.language != "python":
        verdict = Verdict(Tier.NONE, Category.NO_TESTS, "no Python or C project found")
        run.step("oracle", detail=verdict.to_dict())
        return SetupResult(verdict, project)
    state = RepairState(
        local=imports.local,
        project=project.name or _pkg_info(Path(project.root), "Name"),
        imported=imported_tops(imports),
        nose_classes=nose_style_classes(
            [_read_text(Path(project.root) / m) for m in imports.test_modules[:400]]
        ),
        own_classes=defined_classes([_read_text(p) for p in _own_sources(Path(project.root))]),
    )
    repairs: list[dict[str, Any]] = []
    verdict = await _python_ladder(env, run, project, imports, state, options, repairs)
    return SetupResult(
        verdict,
        project,
        python=env.python,
        venv=env.venv,
        installer="uv" if env.uv else "pip",
        uv=env.uv,
        installed=env.installed,
        repairs=repairs,
        system_packages=state.system_packages,
        commands=env.commands,
        unresolved_imports=state.unresolved,
        resolution=env.resolution,
        lock=await _lock(env, project) if verdict.ready else [],
        build_constraints=env.build_pins,
        ignored_options=env.ignored_options,
        interpreter=env.interpreter,
        no_deadline=env.no_deadline,
        exec_tmp=env.exec_tmp,
        rejected=env.rejected,
        notes=list(dict.fromkeys(env.notes)),  # a second ladder (pypy3) repeats some
    )


async def _python_ladder(
    env: _Env,
    run: WorkflowRun,
    project: Project,
    imports: ImportScan,
    state: RepairState,
    options: SetupOptions,
    repairs: list[dict[str, Any]],
    interpreter: str = "python3",
) -> Verdict:
    install_failure: Diagnosis | None = None
    with run.stage("environment") as detail:
        await _make_venv(env, options, interpreter)
        detail.update(venv=env.venv, python=env.python, uv=env.uv, interpreter=interpreter)
    with run.stage("project") as detail:
        version = _pkg_info(Path(project.root), "Version")
        if version is not None:
            # An unpacked sdist under a fresh git history (no tags): setuptools-scm and
            # hatch-vcs would call it 0.1.dev1 and the resolver would pick releases of its
            # dependants from years ago. PKG-INFO knows the real version.
            await env.sh(f"export SETUPTOOLS_SCM_PRETEND_VERSION={shlex.quote(version)}")
            detail.update(pretend_version=version)
        if project.installable:
            if project.c_extensions:
                await _python_headers(env, state, detail)
            ok, output = await _install_project(env, project)
            if ok:
                await _time_travel(env, project)
                detail.update(resolution=env.resolution)
            detail.update(installed=ok)
            if not ok:
                install_failure = diagnose(output, fallback=Category.DEPENDENCY)
                detail.update(failed=True, category=str(install_failure.category))
                detail.update(evidence=install_failure.evidence)
        else:
            detail.update(installed=False, reason="no pyproject.toml or setup.py")
    if install_failure is not None and OLD_CYTHON_C.search(install_failure.evidence or ""):
        with run.stage("project", after="cython") as detail:
            regenerated = await _regenerate_cython(env, project)
            detail.update(regenerated=regenerated)
            if regenerated:
                ok, output = await _install_project(env, project)
                detail.update(installed=ok)
                if ok:
                    install_failure = None
                    await _time_travel(env, project)
                    detail.update(resolution=env.resolution)
                else:
                    install_failure = diagnose(output, fallback=Category.DEPENDENCY)
                    detail.update(failed=True, evidence=install_failure.evidence)
    if install_failure is not None and interpreter != "python3":
        # The project does not install on the older interpreter (a dependency with no wheel for
        # PyPy whose source build fails, or is cut at the budget: patsy 0.5.2's NumPy and SciPy
        # builds took 305 s on pypy3): no further rung can do better than this Python's verdict,
        # and each would take its minute past the budget.
        return Verdict(
            Tier.NONE, install_failure.category, install_failure.evidence, install_failure.subject
        )
    if install_failure is not None:
        install_failure = await _system_before_tests(
            env, run, project, install_failure, state, repairs
        )
    with run.stage("requirements") as detail:
        for rel in project.requirement_files:
            ok, _ = await env.install([], options=["-r", rel], what=f"-r {rel}")
            detail.setdefault("files", {})[rel] = ok
        if project.extra_requirements:
            await _install_each(env, list(project.extra_requirements), detail)
    with run.stage("test-runner") as detail:
        wanted = ["pytest", *project.pytest_plugins]
        if "nose" in imports.required:
            # deap 1.3.1: tests written for nose (`with_setup` setup/teardown functions), which
            # pytest ran until 8.0 removed its nose support; under today's the setup never runs.
            wanted[0] = NOSE_ERA_PYTEST
            env.notes.append(
                f"the tests import nose ({imports.required['nose']}): {NOSE_ERA_PYTEST}, the "
                "pytest that still ran nose-style tests (8.0 removed that support)"
            )
        await _install_each(env, wanted, detail)
        await _runner_that_starts(env, detail)
    dists: list[str] = []
    if options.install_imports:
        with run.stage("imports") as detail:
            missing = await _missing_imports(env, sorted(imports.required))
            resolution: Resolution = await resolve_imports(missing, _probe(env))
            dists = sorted(set(resolution.distributions.values()))
            detail.update(
                missing=missing,
                distributions=dists,
                unresolved=resolution.unresolved,
                probed=resolution.probed,
            )
            state.unresolved.update(resolution.unresolved)
            if dists:
                await _install_each(env, dists, detail)
    versions = await env.versions()
    state.versions = versions
    if install_failure is None:
        scanned = dists if options.install_imports else []
        state.nearest = tuple(await _nearest_requirements(env, project, scanned))
    with run.stage("oracle") as detail:
        verdict = await _oracle(env, project, imports, install_failure, options)
        detail.update(verdict.to_dict())
    # Repair rounds. After a fix only the test files that failed run again (what the fix can
    # change), which says whether it helped and what to repair next; the whole suite runs once
    # more before the verdict is given, since an install or a downgrade can break other tests.
    round_no = 0
    unconfirmed = False  # fixes applied since the whole suite last ran
    last_round = 0.0  # how long the last round (fix and re-run) took
    whole = verdict.seconds  # how long the whole suite took last
    suite_ready = verdict.ready  # the whole suite's last run was ready: fixes only add
    while True:
        fix = None
        if round_no < options.repair_rounds:
            fix = _next_fix(verdict, state, additive_only=suite_ready)
            moving = _next_fix(verdict, state) if suite_ready and fix is None else None
            if moving is not None:
                env.notes.append(
                    f"not tried, since the whole suite was ready and it would move what is "
                    f"installed: {moving.kind} ({moving.reason})"
                )
        # A round, then the whole suite to confirm it: both must fit.
        if fix is not None and not _time_for(env, last_round + whole):
            env.notes.append(
                f"repairs stopped at the time budget ({options.budget:.0f} s) after "
                f"{round_no} round(s); not tried: {fix.kind} ({fix.reason})"
            )
            fix = None
        if fix is None:
            if not unconfirmed:
                break
            unconfirmed = False
            with run.stage("oracle", round=round_no, whole_suite=True) as detail:
                verdict = await _oracle(env, project, imports, install_failure, options)
                detail.update(verdict.to_dict())
            whole, suite_ready = verdict.seconds, verdict.ready
            continue  # what the whole suite shows may still be repaired, rounds permitting
        round_no += 1
        started = time.monotonic()
        fixes = [fix, *_together(fix, verdict, state)]
        ok = await _apply_round(env, run, fixes, state, round_no, repairs)
        if not ok:
            continue
        reinstalled = False
        if (
            any(f.kind in ("binary", "system") for f in fixes)
            and project.installable
            and install_failure
        ):
            ok, output = await _install_project(env, project)
            install_failure = None if ok else diagnose(output, fallback=Category.DEPENDENCY)
            reinstalled = True
        state.versions = await env.versions()
        if verdict.retest and not reinstalled:
            files = verdict.retest
            with run.stage("retest", round=round_no) as detail:
                verdict = await _run_test_command(
                    env, TestCommand("pytest", tuple(files), "retest"), imports, options
                )
                detail.update(verdict.to_dict(), files=files)
            unconfirmed = True
        else:
            with run.stage("oracle", round=round_no) as detail:
                verdict = await _oracle(env, project, imports, install_failure, options)
                detail.update(verdict.to_dict())
            unconfirmed = False
            whole, suite_ready = verdict.seconds, verdict.ready
        last_round = time.monotonic() - started
    if _cut_and_passing(verdict, env.killed_tests):
        verdict = await _sample_and_repair(env, run, verdict, state, options, repairs, round_no)
    if interpreter == "python3" and _needs_older_python(verdict, project):
        older = await _on_older_python(env, run, project, imports, state, options, repairs, verdict)
        if older is not None:
            return older
    return verdict


# Debian's PyPy: the Python 3.9 language (bookworm's only interpreter older than its 3.11, which
# dropped `inspect.getargspec` and others), with the venv module and the C API headers.
OLDER_PYTHON = "pypy3"
OLDER_PYTHON_PACKAGES = ("pypy3", "pypy3-venv", "pypy3-dev")
OLDER_PYTHON_VERSION = "3.9"
OLDER_PYTHON_SECONDS = 180.0  # installing it (143 s at load ~16, most of it byte-compiling)
_DECLARED_NEWEST = re.compile(r"declares Python 3\.(\d+) at the newest")


def _needs_older_python(verdict: Verdict, project: Project) -> bool:
    """A python-version verdict whose cause an older interpreter removes: the project's own
    code failing on today's Python while it declares none newer than 3.10 (the evidence says
    so), or a `python_requires` that excludes this Python but admits 3.9. A project that needs
    a newer Python than this one is not this case."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if verdict.ready or verdict.category is not Category.PYTHON_VERSION:
        return False
    declared = _DECLARED_NEWEST.search(verdict.evidence or "")
    if declared is not None:
        return int(declared.group(1)) <= 10
    if project.python_requires:
        try:
            spec = SpecifierSet(project.python_requires)
        except InvalidSpecifier:
            return False
        if not spec.contains(OLDER_PYTHON_VERSION):
            return False
        if not spec.contains("3.11"):
            return True
    # editdistance 0.6.0: its build fails on C that Cython generated for Pythons before 3.11
    # (`longintrepr.h`); it lists Python 3.5-3.9 in its classifiers.
    newest = newest_classified(Path(project.root))
    return newest is not None and newest <= 10


def newest_classified(root: Path) -> int | None:
    """The newest Python 3 minor version the project's classifiers list (PKG-INFO, else
    setup.py, setup.cfg or pyproject.toml), None when they list none."""
    for name in ("PKG-INFO", "setup.py", "setup.cfg", "pyproject.toml"):
        path = root / name
        if path.is_file():
            found = re.findall(
                r"Programming Language :: Python :: 3\.(\d+)\b", path.read_text(errors="replace")
            )
            if found:
                return max(int(n) for n in found)
    return None


async def _on_older_python(
    env: _Env,
    run: WorkflowRun,
    project: Project,
    imports: ImportScan,
    state: RepairState,
    options: SetupOptions,
    repairs: list[dict[str, Any]],
    verdict: Verdict,
) -> Verdict | None:
    """autograd 1.3, parsimonious 0.8.1 and patsy 0.5.2 in the hard corpus need a Python
    older than 3.11 and the image has none: Debian's PyPy (the Python 3.9 language) is
    installed as root, and the ladder runs again in a venv of it. The notes say so; the
    generated Dockerfile installs it and makes the venv with it. None when it cannot run here
    (not a container, no time left in the budget, the install failed)."""
    reason = f"the project needs a Python older than this one: {(verdict.evidence or '')[:200]}"
    if env.session.description.kind != "docker":
        return None
    if not _time_for(env, OLDER_PYTHON_SECONDS + 2 * MIN_TEST_SECONDS):
        env.notes.append(
            f"not tried: Debian's {OLDER_PYTHON} (Python {OLDER_PYTHON_VERSION}), since {reason} "
            f"(the time budget, {options.budget:.0f} s, has too little left)"
        )
        return None
    fix = Fix("system", reason=reason, system_packages=OLDER_PYTHON_PACKAGES)
    with run.stage("older-python", packages=list(OLDER_PYTHON_PACKAGES)) as detail:
        ok = await _install_system(env, fix, state)
        detail.update(installed=ok)
        repairs.append({"round": 0, "fix": "interpreter", "reason": reason, "ok": ok})
    if not ok:
        env.notes.append(f"Debian's {OLDER_PYTHON} did not install: {reason}")
        return None
    env.notes.append(
        f"the ladder ran again on Debian's {OLDER_PYTHON} (the Python {OLDER_PYTHON_VERSION} "
        f"language), since {reason}"
    )
    before = (env.venv, env.python, env.interpreter, env.resolution)
    env.interpreter = OLDER_PYTHON
    env.constraints = None
    env.build_constraints = None
    env.build_pins = []
    env.era_tools = set()
    env.era_dated = False
    env.resolution = {"mode": "today"}
    env.killed_tests = []
    env.ignored_options = []
    env.no_deadline = False
    env.exec_tmp = False
    env.test_folder = False
    env.no_build_isolation = False
    state.tried = set()
    older = await _python_ladder(
        env, run, project, imports, state, options, repairs, interpreter=OLDER_PYTHON
    )
    if older.ready or older.tier.rank > verdict.tier.rank:
        return older
    # No further on the older interpreter: the verdict and the environment stay this Python's.
    env.notes.append(f"on Debian's {OLDER_PYTHON} the ladder got no further: {older.line()}")
    env.venv, env.python, env.interpreter, env.resolution = before
    await env.sh(f"export VIRTUAL_ENV={env.venv} PATH={env.venv}/bin:$PATH")
    return None


def _next_fix(verdict: Verdict, state: RepairState, *, additive_only: bool = False) -> Fix | None:
    """The fix the run behind `verdict` calls for next, or None. With `additive_only` (the whole
    suite was ready already), the first fix that only adds to the environment: one that moves
    what is there could break what passed (networkx 2.5, stop 44: ready+ at 95.9% with two test
    modules not importable for want of system libraries; after libglib2.0-0, the retest of those
    two files alone was short of ready, and the nearest-date rung it then took brought NumPy 2
    and pytest 6.0 back, and the verdict fell to `installed`)."""
    return next(
        (f for f in _fixes(verdict, state) if not additive_only or f.kind in ADDITIVE_FIXES), None
    )


def _fixes(verdict: Verdict, state: RepairState) -> Iterator[Fix]:
    """The fixes for the run behind `verdict`, in the order they are tried (see _next_fix)."""
    deadline = _deadline_in(verdict.output_tail or "") or verdict.deadline
    if not verdict.ready and deadline is not None:
        # Before the diagnosis: numdifftools 0.9.39's failures were these, and the diagnosis
        # named a pytest config warning printed after them.
        off = Fix("no-deadline", reason=f"hypothesis: {deadline}")
        if off.key not in state.tried:
            yield off
    noexec = _noexec_in(verdict.output_tail or "") or verdict.noexec
    if not verdict.ready and noexec is not None:
        # Before the diagnosis: cffi 1.15.0's tests build shared objects in /tmp and load them,
        # and /tmp here is a noexec tmpfs; the diagnosis named the ImportError.
        tmp = Fix("exec-tmp", reason=f"a shared object in /tmp did not load: {noexec}")
        if tmp.key not in state.tried:
            yield tmp
    if not verdict.ready and verdict.relative_reads is not None:
        # Before the diagnosis: bitstring 3.1.9's tests open `smalltestfile` from test/, the
        # folder they were run from; the diagnosis named the KeyError one of them raised.
        folder = Fix("test-folder", reason=verdict.relative_reads)
        if folder.key not in state.tried:
            yield folder
    for module in verdict.missing if not verdict.ready else ():
        # Before the diagnosis: numdifftools 0.9.39's code warned that line_profiler, which it
        # imports in a try block, was missing; two tests failed on what it then did not do,
        # and the diagnosis named a pytest config warning. Only a module the project imports.
        if module.split(".")[0] in state.imported:
            evidence = f"the project warned: No module named '{module}'"
            fix = plan(Diagnosis(Category.MODULE_NOT_FOUND, evidence, module), state)
            if fix is not None:
                yield replace(fix, reason=f"{fix.reason}; {evidence}")
    era = _era_wanted(verdict, state)
    if era is not None:
        yield era
    if not verdict.ready and verdict.category is not None:
        fix = plan(Diagnosis(verdict.category, verdict.evidence or "", verdict.subject), state)
        if fix is not None:
            yield fix
    if verdict.cause is not None:
        # A run cut at its time limit: what its failures show.
        fix = plan(verdict.cause, state)
        if fix is not None:
            yield fix
    for skipped in verdict.skipped_diagnoses:
        # A ready verdict that left test modules out: repair what made them not import.
        fix = plan(skipped, state)
        if fix is not None:
            yield fix
    if not verdict.ready and state.nearest and verdict.category in NEAREST_CAUSES:
        # Last: no rule names the cause, and today's releases of dependencies the project's
        # date had no wheel here for are in the environment.
        fix = _nearest_fix(
            state,
            "today's releases of the dependencies that had no wheel for this Python at the "
            "project's date: their releases nearest that date instead",
        )
        if fix.key not in state.tried:
            yield fix


def _nearest_fix(state: RepairState, reason: str) -> Fix:
    return Fix("nearest-date", reason=reason, modules=state.nearest)


def _era_wanted(verdict: Verdict, state: RepairState) -> Fix | None:
    """The nearest-date rung before the rules' pins, when names today's releases removed are
    seen in two or more of the dependencies it resolves (those pinned back already, and those
    the run's diagnosis and its failures' causes name). seaborn 0.11.2 (2021, at today's
    matplotlib, pandas, NumPy and SciPy): one pin a round (matplotlib's register_cmap, pandas'
    iteritems, NumPy 2's binary interface, SciPy's trapz, matplotlib's GrouperView.join), each
    round followed by a run of the whole suite, and the budget ran out before the rung, which
    takes one moment's releases of all of them, came last. None when not this case."""
    if verdict.ready or not state.nearest:
        return None
    fix = _nearest_fix(state, "")
    if fix.key in state.tried:
        return None
    wanted = {_normal(_pinned_name(r)) for r in state.nearest}
    seen = state.moved & wanted
    shown = [verdict.cause, *verdict.causes]
    if verdict.category is not None:
        shown.insert(0, Diagnosis(verdict.category, verdict.evidence or "", verdict.subject))
    for diagnosis in filter(None, shown):
        rule = plan(diagnosis, state)
        dependency = moved_back(rule) if rule is not None else None
        if dependency in wanted:
            seen.add(dependency)
    if len(seen) < 2:
        return None
    return _nearest_fix(
        state,
        f"names today's releases removed are used from {len(seen)} of the dependencies that "
        f"had no wheel for this Python at the project's date ({', '.join(sorted(seen))}): "
        "their releases nearest that date, all at once, instead of a pin each",
    )


# Fixes that only add to the environment (a distribution, a Debian package, setup's plugin
# modules): independent of each other, so those one run shows go in one round, before the one
# (re-)run that tells whether they helped. cffi 1.15.0 (stop 41): libffi-dev, then a whole
# suite run of 450 s at a quarter of a CPU, before the `py` its failures had shown all along.
ADDITIVE_FIXES = ("install", "system", "no-deadline", "ignore-option", "exec-tmp")
MAX_FIXES_A_ROUND = 4


def _together(first: Fix, verdict: Verdict, state: RepairState) -> list[Fix]:
    """The other additive fixes the run behind `verdict` shows beside `first` (an additive
    one): what `_next_fix` names next, then the rules for its failures' other causes
    (`Verdict.causes`), each once, at most MAX_FIXES_A_ROUND in all. A fix that changes
    what is there (a downgrade, a pin, another resolution) waits for its own round."""
    if first.kind not in ADDITIVE_FIXES:
        return []
    tried = set(state.tried)
    found: list[Fix] = []
    try:
        state.tried.add(first.key)
        while len(found) < MAX_FIXES_A_ROUND - 1:
            fix = _next_fix(verdict, state)
            if fix is None or fix.kind not in ADDITIVE_FIXES:
                fix = next(
                    (
                        f
                        for f in (plan(cause, state) for cause in verdict.causes)
                        if f is not None and f.kind in ADDITIVE_FIXES
                    ),
                    None,
                )
            if fix is None:
                break
            found.append(fix)
            state.tried.add(fix.key)
    finally:
        state.tried = tried
    return found


async def _apply_round(
    env: _Env,
    run: WorkflowRun,
    fixes: list[Fix],
    state: RepairState,
    round_no: int,
    repairs: list[dict[str, Any]],
    after: str | None = None,
) -> bool:
    """Applies `fixes` as one repair round (a stage and a `repairs` entry each): whether any
    applied. A fix that did not apply is named as failed; the others stand."""
    applied = False
    for fix in fixes:
        state.tried.add(fix.key)
        with run.stage("repair", round=round_no, fix=fix.kind, reason=fix.reason) as detail:
            ok = await _apply(env, fix, state)
            moved = moved_back(fix) if ok else None
            if moved is not None:
                state.moved.add(moved)
            detail.update(applied=ok, requirements=list(fix.requirements))
            if after:
                detail["after"] = after
            repairs.append({"round": round_no, "fix": fix.kind, "reason": fix.reason, "ok": ok})
            if not ok:
                detail["failed"] = True
        applied = applied or ok
    return applied


# What the project's own code or tests do wrong with a dependency's newer behaviour (filterpy
# 1.4.5 on NumPy 2 and SciPy 1.17: "only 0-dimensional arrays can be converted to Python
# scalars", "Input vector should be 1-D"), not a build, a time limit or the runner.
NEAREST_CAUSES = (
    Category.TEST_FAILURES,
    Category.ATTRIBUTE_ERROR,
    Category.IMPORT_ERROR,
    Category.NAME_ERROR,
    Category.COLLECTION,
)


def _time_for(env: _Env, seconds: float) -> bool:
    """Whether `seconds` more (a round and the whole-suite run that confirms it) fit the budget."""
    if env.deadline is None:
        return True
    return time.monotonic() + seconds <= env.deadline


async def _lock(env: _Env, project: Project) -> list[str]:
    """`name==version` of every distribution in the venv but the project (editable or local):
    what a rebuild installs to be the same environment."""
    if env.uv is not None:
        command = f"{env.uv} pip freeze --python {env.python} --exclude-editable"
    else:
        command = f"{env.python} -m pip freeze --exclude-editable --disable-pip-version-check"
    result = await env.sh(f"{command} 2>/dev/null")
    lines = result.output.decode("utf-8", "replace").splitlines()
    own = {_normal(n) for n in (project.name, _pkg_info(Path(project.root), "Name")) if n}
    return sorted(
        line.strip()
        for line in lines
        if re.match(r"^[A-Za-z0-9][\w.-]*==[\w.+!-]+$", line.strip())
        and _normal(line.split("==")[0]) not in own | {"pip"}
    )


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


async def reassess(
    session: Session, result: SetupResult, options: SetupOptions | None = None
) -> Verdict:
    """Ask the oracle again about an environment a ladder built (after a person's or a model's
    command): the same checks and test command, no installs."""
    options = options or SetupOptions()
    env = _Env(session, options)
    env.python = result.python or "python3"
    env.venv = result.venv or ""
    env.uv = result.uv
    if result.project.language == "c":
        command = result.verdict.test_command or "make test"
        tests = await session.run_tests(
            command=command, actor=Actor.SYSTEM, timeout=options.test_timeout
        )
        return _judge(tests, count_generic(tests.output, tests.exit_code), command, options)
    imports = scan(Path(session.source))
    return await _oracle(env, result.project, imports, None, options)


async def _make_venv(env: _Env, options: SetupOptions, interpreter: str = "python3") -> None:
    home = (await env.sh('printf %s "$HOME"')).output.decode().strip() or "/tmp"
    session = env.session
    in_container = session.description.kind == "docker"
    base = f"{home}/.reposim" if in_container else session.private_dir
    env.venv = options.venv_dir or f"{base}/venv"
    if interpreter != "python3":
        env.venv = f"{env.venv}-{interpreter}"
    if options.use_uv:
        env.uv = await _find_uv(env, home, in_container)
    made = False
    if env.uv is not None:
        # --seed: pip is in the venv, so the pip fallback (and the index probe) can run.
        result = await env.sh(f"{env.uv} venv --seed -q {env.venv} --python {interpreter} 2>&1")
        made = result.exit_code == 0
    if not made:
        await env.sh(f"{interpreter} -m venv {env.venv} 2>&1", timeout=300)
    env.python = f"{env.venv}/bin/python"
    # Later commands in this session (the terminal, F5) use the environment too.
    await env.sh(f"export VIRTUAL_ENV={env.venv} PATH={env.venv}/bin:$PATH")


async def _find_uv(env: _Env, home: str, in_container: bool) -> str | None:
    """uv in the environment: on its PATH; else this machine's uv binary copied into the
    container (same OS and architecture: seconds, where `pip install uv` under load can take a
    minute); else installed with pip."""
    found = await env.sh(f"command -v uv || ls {home}/.local/bin/uv 2>/dev/null")
    lines = found.output.decode().strip().splitlines()
    if found.exit_code == 0 and lines:
        return lines[-1].strip()
    if in_container:
        copied = await _copy_host_uv(env, home)
        if copied is not None:
            return copied
    installed = await env.sh(
        "(python3 -m pip install --user --break-system-packages -q uv >/dev/null 2>&1 "
        f"|| python3 -m pip install --user -q uv >/dev/null 2>&1) && ls {home}/.local/bin/uv",
        timeout=300,
    )
    lines = installed.output.decode().strip().splitlines()
    return lines[-1].strip() if installed.exit_code == 0 and lines else None


async def _copy_host_uv(env: _Env, home: str) -> str | None:
    import platform

    try:
        import uv as uv_package

        binary = Path(uv_package.find_uv_bin())
    except (ImportError, FileNotFoundError):
        return None
    machine = await env.sh("uname -sm")
    if machine.output.decode().split() != [platform.system(), platform.machine()]:
        return None
    staging = ".reposim/uv"
    data = await asyncio.to_thread(binary.read_bytes)
    await env.session.write_helper(staging, data)
    target = f"{home}/.local/bin/uv"
    moved = await env.sh(
        f"mkdir -p {home}/.local/bin && mv {staging} {target} && chmod +x {target} && "
        f"{target} --version"
    )
    return target if moved.exit_code == 0 else None


TIME_TRAVEL_AGE = 365 * 24 * 3600  # a commit older than this resolves as of its date


def commit_date(root: Path) -> str | None:
    """The checkout's commit date (ISO 8601), or None outside git."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--format=%cI"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proc.stdout.strip()
    return text if proc.returncode == 0 and text else None


async def _time_travel(env: _Env, project: Project) -> None:
    """Dependencies as of the commit's date. After the project installed (build tools and all
    from today's index, so old sdists still build), its declared requirements (and those of
    the test extras) are resolved again with `uv pip compile --exclude-newer DATE
    --only-binary :all:`, which picks the newest release of that date with a wheel for this
    Python; those pins are installed and constrain every later install (`-c`). A package uv
    names as having no usable wheel (or no release) before the date takes today's releases
    (`--exclude-newer-package`), the rest stay as of the date, and the result names those
    packages. When no set is found that way, today's index stays, and the reason is recorded."""
    from datetime import UTC, datetime

    from packaging.requirements import Requirement

    date = commit_date(Path(project.root))
    if date is None or env.uv is None:
        env.resolution = {"mode": "today", "reason": "no commit date" if date is None else "no uv"}
        return
    age = datetime.now(UTC).timestamp() - datetime.fromisoformat(date).timestamp()
    if age < TIME_TRAVEL_AGE:
        env.resolution = {"mode": "today", "date": date, "reason": "a recent commit"}
        return
    requirements = await _declared_requirements(env, project)
    if not requirements:
        env.resolution = {"mode": "today", "date": date, "reason": "no declared requirements"}
        return
    source = ".reposim/time-travel.in"  # a helper file: the session writes only there
    target = f"{env.venv}.constraints.txt"
    await env.session.write_helper(source, ("\n".join(requirements) + "\n").encode())
    # Packages with no usable wheel for this Python as of the date (an old numpy has no wheel
    # for today's interpreter, and building it fails) take today's releases; the rest stay as
    # of the commit. Each name comes from uv's own answer about the index, and is checked.
    today: list[str] = []
    text = ""
    for _attempt in range(TIME_TRAVEL_LIFTS):
        result, text = await _compile_as_of(
            env, date, {name: LIFTED for name in today}, source, target
        )
        if result.exit_code == 0:
            break
        new = [n for n in unavailable_as_of(text) if n not in today]
        if not new:
            break
        today += new
    else:
        result = None
    declared = {_normal(Requirement(r).name) for r in requirements}
    if result is not None and result.exit_code == 0 and declared <= {_normal(n) for n in today}:
        # Every declared requirement takes today's releases: that is no time travel.
        result, text = None, "no usable wheel for this Python then for " + ", ".join(today)
    if result is not None and result.exit_code == 0:
        ok, text = await env.install([], options=["-r", target], what=f"as of {date[:10]}")
        if ok and today:
            # Only what travelled constrains later installs: a package that took today's
            # release stays free for a repair to pin below it (numpy<2 for np.NaN).
            travelled = f"{env.venv}.travelled.txt"
            drop = await env.sh(
                " ".join(
                    shlex.quote(a)
                    for a in [env.python, "-c", _DROP_PINS, target, travelled, *today]
                )
            )
            ok = drop.exit_code == 0
            target = travelled
        if ok:
            env.constraints = target
            env.resolution = {"mode": "as-of-commit", "date": date}
            if today:
                env.resolution["today"] = sorted(today)
                env.resolution["reason"] = (
                    "no usable wheel for this Python as of the commit: "
                    + ", ".join(sorted(today))
                    + " (today's releases)"
                )
            return
    env.resolution = {
        "mode": "today",
        "date": date,
        "reason": "the index as of the commit has no installable set for this Python: "
        + (text if text.startswith("no usable wheel") else diagnose(text).evidence)[:200],
    }
    if today:
        env.resolution["tried_today"] = sorted(today)


_DROP_PINS = (
    "import re, sys\n"
    "norm = lambda n: re.sub(r'[-_.]+', '-', n).lower()\n"
    "drop = {norm(n) for n in sys.argv[3:]}\n"
    "lines = open(sys.argv[1]).read().splitlines()\n"
    "keep = [x for x in lines if norm(re.split(r'[=<>!~ ;\\[]', x.strip())[0]) not in drop]\n"
    "open(sys.argv[2], 'w').write('\\n'.join(keep) + '\\n')\n"
)
TIME_TRAVEL_LIFTS = 8  # compile attempts, each lifting the date for the packages uv names
LIFTED = "2100-01-01T00:00:00Z"  # a package's date limit that lets today's releases in
_UNAVAILABLE = re.compile(
    r"Wheels are required for `([A-Za-z0-9][\w.-]*)`|"
    r"`([A-Za-z0-9][\w.-]*)` was filtered by `exclude-newer`|"
    r"there are no versions of ([A-Za-z0-9][\w.-]*)"
)


def unavailable_as_of(output: str) -> list[str]:
    """The packages uv says have nothing usable before the date limit (no wheel for this
    Python, or no release then), each a valid distribution name, in the order named."""
    found: list[str] = []
    for match in _UNAVAILABLE.finditer(output):
        name = next(g for g in match.groups() if g)
        if valid_distribution_name(name) and name not in found:
            found.append(name)
    return found


async def _compile_as_of(
    env: _Env, date: str, lifts: dict[str, str], source: str, target: str
) -> tuple[ExecResult, str]:
    """`uv pip compile` of `source` into `target` as of `date`, wheels only, each package of
    `lifts` as of its own moment instead (`--exclude-newer-package`): the run and its output."""
    assert env.uv is not None
    argv = [
        env.uv, "pip", "compile", "--quiet", "--python", env.python, "--exclude-newer", date,
        *(f"--exclude-newer-package={name}={moment}" for name, moment in lifts.items()),
        "--only-binary", ":all:", "--no-header", "--no-annotate", "-o", target, source,
    ]  # fmt: skip
    result = await env.sh(
        " ".join(shlex.quote(a) for a in argv) + " 2>&1", timeout=env.install_timeout()
    )
    return result, result.output.decode("utf-8", "replace")


async def _nearest_requirements(env: _Env, project: Project, scanned: list[str]) -> list[str]:
    """The requirements the nearest-date rung resolves: the project's declared requirements and
    the distributions the import scan installed, when its commit is old enough for time travel
    and some of them were left at today's releases (time travel found no set, or lifted the
    packages that had no wheel here then, or there was nothing declared to travel with).
    Empty when this is not the case."""
    from datetime import UTC, datetime

    date = commit_date(Path(project.root))
    if date is None or env.uv is None or env.interpreter != "python3":
        return []
    if datetime.now(UTC).timestamp() - datetime.fromisoformat(date).timestamp() < TIME_TRAVEL_AGE:
        return []
    if env.resolution.get("mode") == "as-of-commit" and not env.resolution.get("today"):
        return []  # everything is as of the date already
    wanted = [*await _declared_requirements(env, project), *scanned]
    return sorted({r for r in wanted if checked_requirement(r) is not None})


async def _nearest_date(env: _Env, requirements: list[str]) -> bool:
    """filterpy 1.4.5 (2018-10-10) declares numpy, scipy and matplotlib, none of which had a
    wheel for Python 3.11 then, so time travel took today's releases (NumPy 2, SciPy 1.17) and
    10 of its 68 tests failed on their newer behaviour, with no name a rule could pin. Here
    the project's requirements are resolved as of its date again (`uv pip compile
    --exclude-newer DATE --only-binary :all:`), and each package uv says has nothing usable
    then takes, instead of today's releases, those up to one common moment: the first after
    the date at which each of them had a wheel here (the index's upload times,
    `pins.nearest_moment`), so they come from one time and agree with each other. The set is
    installed and constrains later installs; False (and the environment as it was) when no set
    is found or it does not install."""
    date = commit_date(Path(env.session.source))
    if date is None or env.uv is None or not requirements:
        return False
    source = ".reposim/nearest-date.in"  # a helper file: the session writes only there
    target = f"{env.venv}.nearest.txt"
    await env.session.write_helper(source, ("\n".join(requirements) + "\n").encode())
    lifted: list[str] = []
    moment: str | None = None
    for _attempt in range(2 * TIME_TRAVEL_LIFTS):
        lifts = {name: moment or date for name in lifted}
        result, text = await _compile_as_of(env, date, lifts, source, target)
        if result.exit_code == 0:
            break
        new = [n for n in unavailable_as_of(text) if n not in lifted]
        if not new:
            env.notes.append(
                f"no set of releases nearest the project's date ({date[:10]}) resolves: "
                + diagnose(text).evidence[:200]
            )
            return False
        for name in new:
            releases = await env.python_json(RELEASES_SCRIPT, name)
            pairs = [
                (str(r[0]), str(r[1] or ""))
                for r in releases or []
                if isinstance(r, list) and len(r) == 2
            ]
            first = nearest_moment(pairs, date)
            if first is None:
                env.notes.append(f"{name} has no release with a wheel here after {date[:10]}")
                return False
            moment = max(moment or first, first)
        lifted += new
    else:
        return False
    before = env.constraints
    env.constraints = None  # the set replaces time travel's pins, which it was resolved beside
    ok, _ = await env.install([], options=["-r", target], what=f"nearest {date[:10]}")
    if not ok:
        env.constraints = before
        return False
    env.constraints = target
    day = (moment or date)[:10]
    env.resolution = {
        "mode": "as-of-commit",
        "date": date,
        "nearest": {"moment": moment, "packages": sorted(lifted)},
        "reason": f"no usable wheel for this Python as of the commit: {', '.join(sorted(lifted))}"
        f" (their releases as of {day}, the nearest date they had one here)",
    }
    env.notes.append(
        f"resolved as of the project's date ({date[:10]}), with {', '.join(sorted(lifted))} "
        f"as of {day}, the nearest date all had a wheel for this Python (not today's releases)"
    )
    return True


async def _declared_requirements(env: _Env, project: Project) -> list[str]:
    """The installed project's Requires-Dist whose markers hold here (with its test extras)."""
    from packaging.requirements import InvalidRequirement, Requirement

    name = project.name or _pkg_info(Path(project.root), "Name")
    if not name:
        return []
    script = (
        "import importlib.metadata as m, json, sys\n"
        "try:\n    print(json.dumps(m.requires(sys.argv[1]) or []))\n"
        "except m.PackageNotFoundError:\n    print('[]')\n"
    )
    declared = await env.python_json(script, name)
    if declared is None:
        return []
    out: list[str] = []
    for text in declared:
        try:
            requirement = Requirement(str(text))
        except InvalidRequirement:
            continue
        if requirement.url or not valid_distribution_name(requirement.name):
            continue
        extras = ["", *project.extras]
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": e}) for e in extras
        ):
            continue
        requirement.marker = None
        out.append(str(requirement))
    return sorted(set(out))


def _pkg_info(root: Path, field: str) -> str | None:
    """A field of an sdist's PKG-INFO (None outside an sdist, or without the field)."""
    info = root / "PKG-INFO"
    if not info.is_file():
        return None
    match = re.search(rf"^{field}:\s*(\S+)", info.read_text(errors="replace"), re.M)
    return match.group(1) if match else None


def _toml_has_no_project(path: Path) -> bool:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(errors="replace"))
    except (OSError, tomllib.TOMLDecodeError):
        return True
    return "project" not in data and "poetry" not in (data.get("tool") or {})


# C that an old Cython generated for the Pythons before 3.11, which moved CPython's internals
# (PyWavelets 1.1.1: `_pywt.c:253:12: fatal error: longintrepr.h: No such file or directory`)
OLD_CYTHON_C = re.compile(r"fatal error: longintrepr\.h: No such file")
_CYTHON_GENERATED = re.compile(rb"Generated by Cython \d")
MAX_GENERATED = 200  # C files read for Cython's first line
CYTHON_ERA = "cython<3"


def cython_generated(root: Path) -> list[str]:
    """The C/C++ files of the tree that Cython generated and whose .pyx sits beside them (what
    a build with Cython can write again), relative to `root`."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in {".git", "build", ".tox", ".venv", "venv"})
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix not in (".c", ".cpp") or not path.with_suffix(".pyx").is_file():
                continue
            try:
                with path.open("rb") as handle:
                    head = handle.read(400)
            except OSError:
                continue
            if _CYTHON_GENERATED.search(head):
                found.append(path.relative_to(root).as_posix())
            if len(found) >= MAX_GENERATED:
                return found
    return found


async def _regenerate_cython(env: _Env, project: Project) -> bool:
    """PyWavelets 1.1.1 (stop 44's fresh pins) ships C an old Cython generated, which includes
    CPython's internal longintrepr.h (moved in 3.11); the ladder then tried PyPy, where it did
    not build either. A person deletes the generated C whose .pyx is there and builds with the
    Cython of its era (below 3, which current code no longer compiles the same): the C files
    go (from the container's copy of the tree), Cython below 3 and the build's tools go in the
    venv, and the project builds without isolation so that its setup.py finds that Cython.
    False when no such file is there (editdistance 0.6.0 ships no .pyx) or the tools did not
    install."""
    root = Path(project.root)
    generated = cython_generated(root)
    if not generated:
        return False
    removed = await env.sh("rm -f -- " + " ".join(shlex.quote(g) for g in generated))
    if removed.exit_code != 0:
        return False
    setup_py = _read_text(root / "setup.py") + _read_text(root / "pyproject.toml")
    tools = [CYTHON_ERA, "setuptools", "wheel"]
    if re.search(r"\bnumpy\b", setup_py):
        tools.append("numpy")  # the build's own `numpy.get_include()`
    ok, _ = await env.install(tools)
    if not ok:
        return False
    env.no_build_isolation = True
    shown = ", ".join(generated[:3]) + (
        f" and {len(generated) - 3} more" if len(generated) > 3 else ""
    )
    env.notes.append(
        f"the build failed on C an old Cython generated for Pythons before 3.11 (longintrepr.h): "
        f"{shown} removed (their .pyx are there) and built again with {CYTHON_ERA} without build "
        "isolation, before any other interpreter"
    )
    return True


async def _install_project(env: _Env, project: Project) -> tuple[bool, str]:
    """Editable with the test extras; without them; then not editable. The first that works."""
    extras = f"[{','.join(project.extras)}]" if project.extras else ""
    attempts = [["-e", f".{extras}"]]
    tests_only = [e for e in project.extras if re.match(r"^(tests?|testing)$", e, re.I)]
    if tests_only and len(tests_only) < len(project.extras):
        # A dev or all extra often pulls in tools that do not install; the test extra matters.
        attempts.append(["-e", f".[{','.join(tests_only)}]"])
    if extras:
        attempts.append(["-e", "."])
    attempts.append([f".{extras}"])
    output = ""
    for args in attempts:
        if args[0] == "-e" and NO_EDITABLE.search(output):
            continue  # the build tools in force cannot install in editable mode
        ok, text = await env.install([], options=args, what=" ".join(args))
        if ok:
            return True, text
        output = text
        header = MISSING_HEADER.search(text)
        if header and ("Python.h" in header.group(0) or "@ file://" in text):
            # The project's own sources (or any C code: Python's headers) failed on a missing
            # header: every other way builds them again the same way. The repair (its Debian
            # package) comes first, then the project installs again.
            break
    return False, output


async def _install_each(env: _Env, requirements: list[str], detail: dict[str, Any]) -> None:
    """All at once (one resolution), and one by one when that fails so one bad name costs one."""
    if not requirements:
        return
    ok, _ = await env.install(requirements)
    if ok:
        detail.setdefault("installed", []).extend(requirements)
        return
    for requirement in requirements:
        ok, _ = await env.install([requirement])
        detail.setdefault("installed" if ok else "not_installed", []).append(requirement)


NOSE_ERA_PYTEST = "pytest<8"
RUNNER_PACKAGES = ("pytest", "py")  # the runner and the library old pytest releases import

# A test module of one passing test, run by the installed pytest outside the project: the
# runner starts, loads its plugins and rewrites a test module's asserts on this Python.
_RUNNER_PROBE = (
    'd=$(mktemp -d) && printf "def test_probe():\\n    assert 1\\n" > "$d/test_probe.py" && '
    'cd "$d" && {python} -m pytest -q -p no:cacheprovider test_probe.py 2>&1; '
    'c=$?; rm -rf "$d"; exit $c'
)


async def _runner_starts(env: _Env) -> bool:
    check = await env.sh(_RUNNER_PROBE.format(python=shlex.quote(env.python)))
    return check.exit_code == 0


_PLUGINS = (
    "import importlib.metadata as m, json; "
    "print(json.dumps(sorted({d.metadata['Name'].lower() for d in m.distributions() "
    "if d.metadata['Name'] and any(e.group == 'pytest11' for e in d.entry_points)})))"
)


async def _pytest_plugins(env: _Env) -> list[str]:
    """The installed distributions that register a pytest plugin (a `pytest11` entry point)."""
    result = await env.sh(f"{env.python} -c {shlex.quote(_PLUGINS)}")
    try:
        names = json.loads(result.output.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return []
    return [str(n) for n in names if checked_requirement(str(n)) is not None]


async def _runner_that_starts(env: _Env, detail: dict[str, Any]) -> None:
    """The installed pytest may not run a test on today's Python: as of the commit (pint 0.17:
    pytest 6.2.2 with py 1.10 fails on 3.11 with `AttributeError: __spec__` before collecting
    a test), or pinned by the project (pyrsistent 0.18.0's `pytest<5`: 4.6 starts but cannot
    rewrite a test module, `required field "lineno" missing from alias`). Then the runner
    takes a newer release than the one installed, outside the time-travel pins and the
    project's pin; when it still does not run a test, its plugins as of then move too (pint:
    pytest-mpl 0.13 is no plugin pytest 9 loads, `PluginValidationError` for
    `pytest_report_header`), then py. The pins of whatever moved are dropped so later
    installs agree, and the notes say so."""
    if await _runner_starts(env):
        return
    evidence = diagnose(env.last_output).evidence
    before = await env.versions()
    if "pytest" not in before:
        return
    runner = f"pytest>{before['pytest']}"
    constraints, env.constraints = env.constraints, None
    try:
        ok, _ = await env.install([runner])
        starts = ok and await _runner_starts(env)
        plugins = [p for p in await _pytest_plugins(env) if p in before] if not starts else []
        if plugins:
            newer = [f"{p}>{before[p]}" for p in plugins]
            ok, _ = await env.install([runner, *newer])
            if not ok:  # one of them has no newer release: each alone
                for requirement in newer:
                    await env.install([runner, requirement])
            starts = await _runner_starts(env)
        if not starts and "py" in before:
            ok, _ = await env.install([runner, f"py>{before['py']}"])
            starts = ok and await _runner_starts(env)
    finally:
        env.constraints = constraints
    after = await env.versions()
    moved = sorted(n for n, v in after.items() if before.get(n) != v)
    if moved and constraints:
        argv = [env.python, "-c", _DROP_PINS, constraints, constraints, *moved]
        await env.sh(" ".join(shlex.quote(a) for a in argv))
    dropped = [] if starts else await _drop_broken_plugins(env)
    if dropped:
        starts = await _runner_starts(env)
        detail["plugins_removed"] = dropped
        env.notes.append(
            f"the pytest plugin {', '.join(dropped)} (from the project's requirements) cannot "
            "load on this pytest, and no release of it can: removed from the environment"
        )
    if not moved:
        return
    detail["runner_lifted"] = {n: after[n] for n in moved}
    env.notes.append(
        f"pytest {before.get('pytest')} (as of the commit or as the project pins it) does not "
        f"run on this Python ({evidence[:120]}); the runner takes a newer release: "
        + ", ".join(f"{n} {after[n]}" for n in moved)
        + ("" if starts else " (it still does not run a test)")
    )


# The distribution that registers the pytest plugin named argv[1] (a `pytest11` entry point).
_PLUGIN_OWNER = (
    "import importlib.metadata as m, sys\n"
    "for d in m.distributions():\n"
    "    if any(e.group == 'pytest11' and e.name == sys.argv[1] for e in d.entry_points):\n"
    "        print(d.metadata['Name'])\n"
    "        break\n"
)
_REJECTED_PLUGIN = re.compile(r"PluginValidationError: Plugin '([\w.-]+)'")


async def _drop_broken_plugins(env: _Env) -> list[str]:
    """Uninstall the pytest plugins that keep the runner from starting, once no release moved
    them past it (opt-einsum 3.3.0's test extra brings pytest-pep8 1.0.6, last released in 2014,
    which pytest 9 rejects: `PluginValidationError: Plugin 'pep8' for hook
    'pytest_collect_file'`): as a person would, since no test of the project needs it to run.
    The plugin is named by the runner's own error; its distribution by its entry point."""
    dropped: list[str] = []
    for _ in range(3):
        if await _runner_starts(env):
            break
        rejected = _REJECTED_PLUGIN.search(env.last_output)
        if rejected is None:
            break
        owner = await env.sh(
            " ".join(shlex.quote(a) for a in (env.python, "-c", _PLUGIN_OWNER, rejected.group(1)))
        )
        lines = owner.output.decode("utf-8", "replace").split()
        dist = lines[-1] if lines else ""
        if not valid_distribution_name(dist) or dist in dropped or dist.lower() == "pytest":
            break
        if env.uv is not None:
            argv = [env.uv, "pip", "uninstall", "--python", env.python, "--", dist]
        else:
            argv = [env.python, "-m", "pip", "uninstall", "-y", "-q", "--", dist]
        removed = await env.sh(" ".join(shlex.quote(a) for a in argv) + " 2>&1")
        if removed.exit_code != 0:
            break
        dropped.append(dist)
    return dropped


async def _missing_imports(env: _Env, names: list[str]) -> list[str]:
    if not names:
        return []
    script = (
        "import importlib.util, sys\n"
        "for n in sys.argv[1:]:\n"
        "    try:\n"
        "        found = importlib.util.find_spec(n) is not None\n"
        "    except Exception:\n"
        "        found = False\n"
        "    if not found: print(n)\n"
    )
    result = await env.sh(
        f"{env.python} -c {shlex.quote(script)} {' '.join(shlex.quote(n) for n in names)}"
    )
    return [line.strip() for line in result.output.decode().splitlines() if line.strip()]


def import_roots(project: Project) -> tuple[str, ...]:
    """The folder (relative to the root) that holds the project's own packages: "src" for a
    src layout, "." for a flat one, none when it has no package."""
    root = Path(project.root)
    for base in ("src", "."):
        if _packages_in(root / base):
            return (base,)
    return ()


def _packages_in(base: Path) -> list[str]:
    if not base.is_dir():
        return []
    return [
        entry.name
        for entry in sorted(base.iterdir())
        if entry.is_dir()
        and (entry / "__init__.py").is_file()
        and re.match(r"^[A-Za-z_]\w*$", entry.name)
        and not re.match(r"^(tests?|testing|docs?|examples?|benchmarks?|scripts?)$", entry.name)
    ]


# The top-level names the project's installed distribution provides (its `top_level.txt`),
# for the distributions installed from a local tree: the project, editable or not.
INSTALLED_TOP_LEVEL_SCRIPT = (
    "import importlib.metadata as m\n"
    "for d in m.distributions():\n"
    "    if '\"dir_info\"' in (d.read_text('direct_url.json') or ''):\n"
    "        print(d.read_text('top_level.txt') or '')\n"
)


async def installed_top_level(env: _Env) -> list[str]:
    """What the installed project provides, as its metadata says: a folder of the tree is not
    always a package of the project (regex 2021.11.10 maps `regex` to regex_3/ on Python 3 and
    ships regex_2/ in Python 2 beside it). Empty when the metadata does not say (flit, hatch),
    and the folders decide. Private names are left out: the public packages import them when
    they need them (PyYAML 5.4.1 lists `_yaml`, its optional extension, which the build leaves
    out without libyaml; `yaml` then runs in pure Python, as PyYAML means it to)."""
    result = await env.sh(f"{env.python} -c {shlex.quote(INSTALLED_TOP_LEVEL_SCRIPT)}")
    if result.exit_code != 0:
        return []
    names = result.output.decode("utf-8", "replace").split()
    keep = [
        n
        for n in dict.fromkeys(names)
        if re.match(r"^[A-Za-z]\w*$", n)
        and not re.match(r"^(tests?|testing|docs?|examples?|benchmarks?|scripts?)$", n)
    ]
    return keep[:8]


# The running Python and the newest `Programming Language :: Python :: 3.N` classifier of the
# distributions installed from a local tree (the project).
NEWEST_DECLARED_SCRIPT = (
    "import importlib.metadata as m, re, sys\n"
    "newest = 0\n"
    "for d in m.distributions():\n"
    "    if '\"dir_info\"' in (d.read_text('direct_url.json') or ''):\n"
    "        for c in d.metadata.get_all('Classifier') or []:\n"
    "            x = re.fullmatch(r'Programming Language :: Python :: 3\\.(\\d+)', c.strip())\n"
    "            newest = max(newest, int(x.group(1))) if x else newest\n"
    "print(sys.version_info[1], newest)\n"
)


def imported_tops(imports: ImportScan) -> list[str]:
    """The top-level names the project's code imports (unguarded, then guarded)."""
    names = [n.split(".")[0] for n in (*imports.required, *imports.optional)]
    return list(dict.fromkeys(names))


async def _older_python(
    env: _Env, diagnosis: Diagnosis, project: Project, imports: ImportScan
) -> Diagnosis:
    """The project's own package failing to import, in its own code, on a Python newer than
    any it declares (patsy 0.5.2: `TypeError: '>' not supported between instances of
    'NoneType' and 'sys.version_info'` from its eval.py on 3.11; it lists 3.6-3.9): the cause is
    the interpreter, so the category is python-version and the evidence says so. A name a
    dependency removed (seaborn 0.11.2: `matplotlib.cm.register_cmap`; numdifftools 0.9.39:
    numpy's `finfo.machar`) is not the interpreter: a pin fixes it, and the category stays.
    The failed import's output stays the environment's last output (the verdict shows it)."""
    output = env.last_output
    try:
        return await _interpreter_or(env, diagnosis, project, imports, output)
    finally:
        env.last_output = output


async def _interpreter_or(
    env: _Env, diagnosis: Diagnosis, project: Project, imports: ImportScan, output: str
) -> Diagnosis:
    if diagnosis.category in (
        Category.MODULE_NOT_FOUND,
        Category.SYSTEM_LIBRARY,
        Category.PYTHON_VERSION,
        Category.NETWORK,
    ):
        return diagnosis
    if (
        diagnosis.category in (Category.ATTRIBUTE_ERROR, Category.IMPORT_ERROR)
        and diagnosis.subject
        and ":" in diagnosis.subject
    ):
        name = project.name or _pkg_info(Path(project.root), "Name")
        if await removed_from(env, diagnosis.subject, name, imported_tops(imports)) is not None:
            return diagnosis
    root = env.session.workspace_path.rstrip("/") + "/"
    frames = re.findall(r'^\s*File "([^"]+)", line \d+', output, re.M)
    if not frames or not frames[-1].startswith(root) or "/site-packages/" in frames[-1]:
        return diagnosis  # raised in a dependency (or no traceback): not the project's code
    result = await env.sh(f"{env.python} -c {shlex.quote(NEWEST_DECLARED_SCRIPT)}")
    words = result.output.decode("utf-8", "replace").split()
    if result.exit_code != 0 or len(words) != 2 or not all(w.isdigit() for w in words):
        return diagnosis
    running, newest = int(words[0]), int(words[1])
    if not newest or newest >= running:
        return diagnosis
    where = frames[-1].removeprefix(root)
    return Diagnosis(
        Category.PYTHON_VERSION,
        f"{where}: {diagnosis.evidence} (the project declares Python 3.{newest} at the newest; "
        f"this is 3.{running})"[:400],
        diagnosis.subject,
    )


def _top_packages(project: Project, imports: ImportScan) -> list[str]:
    """The project's own importable top-level packages (tests and tooling left out)."""
    root = Path(project.root)
    for base in (root / "src", root):
        found = _packages_in(base)
        if found:
            return found[:8]
    return []


async def _oracle(
    env: _Env,
    project: Project,
    imports: ImportScan,
    install_failure: Diagnosis | None,
    options: SetupOptions,
) -> Verdict:
    tier = Tier.NONE if install_failure is not None else Tier.INSTALLED
    packages = await installed_top_level(env) if install_failure is None else []
    packages = packages or _top_packages(project, imports)
    if packages:
        statement = "; ".join(f"import {p}" for p in packages)
        limit = min(options.import_timeout, env.test_timeout())
        command = f"{env.python} -c {shlex.quote(statement)}"
        result = await env.sh(f"{command} 2>&1", timeout=limit)
        if result.timed_out and install_failure is None:
            # lmfit 1.0.2 at load ~50: the shell's `Killed` line is no import error.
            return Verdict(
                tier,
                Category.TIMEOUT,
                f"importing the project was still going when its time limit ({limit:.0f} s) "
                f"ended it: {statement}",
                output_tail=env.last_output[-4000:],
            )
        if result.exit_code != 0:
            diagnosis = diagnose(env.last_output, fallback=Category.IMPORT_ERROR)
            if install_failure is not None:
                diagnosis = install_failure
            else:
                diagnosis = await _older_python(env, diagnosis, project, imports)
            return Verdict(
                tier,
                diagnosis.category,
                diagnosis.evidence,
                diagnosis.subject,
                output_tail=env.last_output[-4000:],
            )
    verdict = None
    partial_script = False  # a test script ran, but fewer tests than the test files define
    candidates = project_test_commands(Path(project.root))[:2]
    if project.converts_2to3 and install_failure is None:
        # deap 1.3.1: its build converts the package (and the tests inside it) from Python 2
        # as it installs it; the tree stays Python 2 (`print` statements, `dict.iteritems`).
        # The tests run in the installed copy, as `setup.py test` ran them in its build.
        names = tuple(p for p in packages if re.fullmatch(r"[A-Za-z_]\w*", p))
        if names:
            converted = TestCommand("pytest", ("--pyargs", *names), "the build's 2to3 copy")
            candidates.insert(0, replace(converted, installed_copy=True))
    for candidate in candidates:
        # The project's own command first (CI, tox, nox, scripts, Makefile, README); it decides
        # unless it runs no test at all (then the default runners try).
        own = await _run_test_command(env, candidate, imports, options)
        own = await _without_modules_that_stop_it(env, candidate, own, project, imports, options)
        ran = sum(own.tests.get(k, 0) for k in ("passed", "failed", "error"))
        partial = _ran_fewer_than_defined(own, imports, "the test script")
        if candidate.runner == "script" and partial is not None:
            # Pillow 8.4.0: tox.ini runs selftest.py (a few doctests) before pytest. A script
            # that runs fewer tests than the test files define is not the suite: the next
            # command decides, and if none does, this is no ready verdict.
            verdict, partial_script = partial, True
            continue
        if ran or own.ready or own.category is Category.TIMEOUT:
            # A run cut at its limit decides too: another runner of the same suite would not
            # fit either (emcee 3.0.2: the default run after it took the task past its limit).
            verdict, partial_script = own, False
            break
    if partial_script and verdict is not None and _spent(env, "the default pytest run"):
        return _installed_or_not(verdict, install_failure)
    if verdict is None or partial_script:
        default = await _run_test_command(env, DEFAULT_PYTEST, imports, options)
        ran = sum(default.tests.get(k, 0) for k in ("passed", "failed", "error"))
        verdict = default if verdict is None or ran else verdict
    root_modules = tuple(n for n in ROOT_TEST_MODULES if (Path(project.root) / n).is_file())
    if (
        verdict.category is Category.NO_TESTS
        and (root_modules or project.test_dirs)
        and _spent(env, "a root test module, unittest discovery and suite scripts")
    ):
        return _installed_or_not(verdict, install_failure)
    if verdict.category is Category.NO_TESTS and root_modules:
        # A root `test.py` (python-slugify 5.0.2) is no name pytest collects by default; named
        # on the command line, pytest collects it (its TestCase classes and test functions).
        named = TestCommand("pytest", root_modules, "root test module")
        own = await _run_test_command(env, named, imports, options)
        if sum(own.tests.get(k, 0) for k in ("passed", "failed", "error")):
            verdict = own
    if verdict.category is Category.NO_TESTS and project.test_dirs:
        unittest = await _unittest(env, project, imports, options)
        if unittest is not None:
            verdict = unittest
    if verdict.category is Category.NO_TESTS:
        # No file discovery looks for: a script in the test folder that runs the suite itself
        # (feedparser 6.0.8's tests/runtests.py) is it.
        for script in suite_scripts(Path(project.root), project.test_dirs)[:2]:
            own = await _run_test_command(env, script, imports, options)
            own = await _without_modules_that_stop_it(env, script, own, project, imports, options)
            if sum(own.tests.get(k, 0) for k in ("passed", "failed", "error")):
                verdict = _ran_fewer_than_defined(own, imports, "the suite script") or own
                break
    return _installed_or_not(verdict, install_failure)


LEAVE_OUT_RUNNER = "reposim_leave_out"
LEAVE_OUT_SOURCE = """\
# Written by reposim setup: `python -m reposim_leave_out PATHS SCRIPT ARGS...` runs the
# project's test script as `python SCRIPT ARGS...` does, except that importing a test module
# whose file ends with one of PATHS (joined by ':') raises ImportError: a module that stops
# the script on this Python is left out the way the script leaves out one that does not import.
import importlib.machinery
import os
import runpy
import sys

LEFT_OUT = tuple("/" + p.lstrip("/") for p in sys.argv[1].split(":") if p)


class LeftOut:
    @staticmethod
    def find_spec(name, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = os.path.realpath(spec.origin) if spec is not None and spec.origin else ""
        if LEFT_OUT and origin.endswith(LEFT_OUT):
            raise ImportError(f"left out by reposim setup: {origin} stops the test script here")
        return None


sys.meta_path.insert(0, LeftOut)
if sys.argv[2] == "-m":  # a test-runner module of the project (`python -m pkg.test.runtests`)
    sys.argv = sys.argv[3:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    script = sys.argv[2]
    sys.argv = sys.argv[2:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
"""
MAX_LEFT_OUT = 3  # test modules left out of a suite script's run


async def _without_modules_that_stop_it(
    env: _Env,
    test: TestCommand,
    verdict: Verdict,
    project: Project,
    imports: ImportScan,
    options: SetupOptions,
) -> Verdict:
    """docutils 0.17.1: its own test command, `test/alltests.py`, imports every test module
    itself and builds most of the suite from each module's `suite()` (pytest collects a fifth of
    it); on 3.11 one module raises TypeError at import and the script stops there, before any
    test. The script leaves out a module that raises ImportError (named, its tests skipped):
    the script runs again with the module that stopped it raising ImportError (setup's runner
    module, `python -m reposim_leave_out PATH SCRIPT`), up to three modules, and the verdict
    names each with why it did not import (raised in its own code on a Python newer than the
    project declares: written for another Python), judged as pytest's collection errors are.
    A script that stops at a left-out module again does not skip one: its first verdict stays."""
    first = verdict
    left_out: list[tuple[str, Diagnosis]] = []
    while len(left_out) < MAX_LEFT_OUT and (crash := module_crash(verdict)) is not None:
        path, _ = crash
        if any(path == p for p, _ in left_out):
            env.notes.append(
                f"{test.args[-1] if test.args else test.source} stopped at a test module left "
                f"out of it ({path}): it does not skip a module that does not import"
            )
            return first
        if _spent(env, f"the test script again without {path}"):
            break
        diagnosis = diagnose(verdict.output_tail, fallback=Category.COLLECTION)
        diagnosis = await _interpreter_or(env, diagnosis, project, imports, verdict.output_tail)
        left_out.append((path, diagnosis))
        if (await env.sh(write_plugin(env.python, LEAVE_OUT_RUNNER, LEAVE_OUT_SOURCE))).exit_code:
            return first
        paths = ":".join(p for p, _ in left_out)
        again = replace(test, args=("-m", LEAVE_OUT_RUNNER, paths, *test.args))
        verdict = await _run_test_command(env, again, imports, options)
    if not left_out or verdict is first:
        return first
    return with_modules_left_out(verdict, left_out, len(imports.test_modules))


def _installed_or_not(verdict: Verdict, install_failure: Diagnosis | None) -> Verdict:
    if install_failure is not None:
        # Tests that pass from the source tree do not show the project installs: every tier
        # from `installed` up implies it did.
        return Verdict(
            Tier.NONE,
            install_failure.category,
            install_failure.evidence,
            install_failure.subject,
            tests=verdict.tests,
            pass_ratio=verdict.pass_ratio,
            test_command=verdict.test_command,
            output_tail=verdict.output_tail,
            missing=verdict.missing,
            causes=verdict.causes,
            deadline=verdict.deadline,
            noexec=verdict.noexec,
            relative_reads=verdict.relative_reads,
        )
    return verdict


def _spent(env: _Env, what: str) -> bool:
    """Whether the budget is spent (less than a test run's minute left) after the oracle's
    first run: no further runner starts, since each would take at least that minute past the
    budget (said in the notes)."""
    left = env.budget_left()
    if left is None or left >= MIN_TEST_SECONDS:
        return False
    env.notes.append(
        f"not run: {what} (the time budget, {env.options.budget:.0f} s, had {max(0.0, left):.0f}"
        " s left)"
    )
    return True


def _judge(
    run: TestRunResult,
    counts: dict[str, int],
    command: str,
    options: SetupOptions,
    modules: int = 0,
    root: Path | None = None,
) -> Verdict:
    """The oracle's verdict on a test run of `command` with these per-test counts (`modules`:
    how many test modules it was to import, when known; `root`: the tree they ran from)."""
    verdict = verdict_from_tests(
        counts,
        output=run.output,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        command=command,
        min_tests=options.min_tests,
        modules=modules,
    )
    if not verdict.ready and run.structured:
        messages = [t.message for t in run.tests if t.outcome in ("failed", "error") and t.message]
        verdict.causes = failure_causes(messages)
        # numdifftools 0.9.39 (stop 42 run D): its cut run's two DeadlineExceeded failures
        # were above the 60 lines of tail (pytest's warnings summary came after them).
        verdict.deadline = next(filter(None, map(_deadline_in, messages)), None)
        verdict.noexec = next(filter(None, map(_noexec_in, messages)), None)
        verdict.relative_reads = relative_reads(run, root)
    return verdict


# The loader refusing a shared object on a noexec mount (glibc): `OSError: /tmp/ffi-1/tmpab12/
# _cffi__x209e6f68.cpython-311-x86_64-linux-gnu.so: failed to map segment from shared object`
_NOEXEC_TMP = re.compile(r"/tmp/\S+?\.so\b[^\n]*?: failed to map segment from shared object")


# A file a test could not open by a relative path: `FileNotFoundError: [Errno 2] No such file
# or directory: 'smalltestfile'`
_NOT_FOUND = re.compile(
    r"(?:FileNotFoundError|IOError|OSError): \[Errno 2\] No such file or "
    r"directory: '([^'/\n][^'\n]*)'"
)


def relative_reads(run: TestRunResult, root: Path | None) -> str | None:
    """When at least half of a run's failed tests could not open a file by a relative path
    that is not in the root they ran from but is in the failing test file's own folder (the
    folder the project runs them from: bitstring 3.1.9's `cd test`), what says so; else None."""
    failed = [t for t in run.tests if t.outcome in ("failed", "error")]
    if root is None or not failed:
        return None
    found: dict[str, str] = {}
    for test in failed:
        match = _NOT_FOUND.search(test.message or "")
        name = match.group(1) if match else ""
        module = test.id.split("::")[0]  # the test's file (`file` is where it raised)
        if not name or ".." in name.split("/") or not module.endswith(".py"):
            continue
        if (root / name).exists():
            continue
        folder = Path(module).parent
        where = (root / folder / name).resolve()
        if folder.parts and where.is_relative_to(root.resolve()) and where.exists():
            found[test.id] = f"{name} in {folder.as_posix()}/"
    if 2 * len(found) < len(failed):
        return None
    files = sorted(set(found.values()))
    return (
        f"{len(found)} of {len(failed)} failed tests could not open a file by a relative path "
        f"that is in their own folder, not the root: {', '.join(files[:3])}"
    )


def _noexec_in(text: str) -> str | None:
    """The loader's message in `text` that a shared object in /tmp could not be mapped."""
    found = _NOEXEC_TMP.search(text)
    return found.group(0)[:300] if found is not None else None


def _deadline_in(text: str) -> str | None:
    """Hypothesis's deadline message in `text`, if there is one."""
    found = _DEADLINE_MESSAGE.search(text) or DEADLINE_EXCEEDED.search(text)
    return found.group(0) if found is not None else None


DEFAULT_PYTEST = TestCommand("pytest", (), "default")
ROOT_TEST_MODULES = ("test.py", "tests.py")


async def _run_test_command(
    env: _Env, test: TestCommand, imports: ImportScan, options: SetupOptions
) -> Verdict:
    ran = _for_this_env(test, env)
    command = ran.command(env.python)
    # A whole-suite pytest run that the budget will cut is cut at half of what is left: the
    # rest runs a sample of it or repairs what its failures show (lz4 3.1.10 and seaborn 0.11.2
    # in the hard corpus: the run took the whole budget and neither could follow).
    whole = test.source != "retest" and is_pytest(command)
    run = await env.run_tests(command, share=WHOLE_SUITE_SHARE if whole else 1.0)
    counts = run.counts() if run.structured else count_generic(run.output, run.exit_code)
    modules = len(test.args) if test.source == "retest" else len(imports.test_modules)
    verdict = _judge(run, counts, command, options, modules, Path(env.session.source))
    if verdict.category is Category.KILLED and await _find_killed_test(env, ran, imports):
        return await _run_test_command(env, test, imports, options)
    verdict.skipped += [
        f"{left_out}: killed (SIGKILL) while it "
        + ("ran" if "::" in left_out else "was imported")
        + ", most likely by the container's memory limit; left out of the run"
        for left_out in env.killed_tests
    ]
    killed_modules = [m for m in env.killed_tests if "::" not in m]
    if verdict.ready and len(killed_modules) > max(1, modules // 4):
        # As for modules that do not import: more than a quarter of the suite left out is not
        # a ready suite.
        verdict = replace(
            verdict,
            tier=Tier.RUNS,
            category=Category.KILLED,
            evidence=f"{len(killed_modules)} of {modules} test modules were killed (SIGKILL) "
            f"while pytest imported them, most likely by the container's memory limit: "
            + ", ".join(killed_modules[:3]),
        )
    if run.timed_out and env.cut_cpu is not None:
        # How much of the limit the container could run: a suite starved by the machine's
        # load reads very differently from one that is slow on its own.
        verdict.evidence = (
            f"{verdict.evidence} (the container had {env.cut_cpu:.0f} s of CPU in the run's "
            f"{run.duration:.0f} s)"
        )
    verdict.seconds = run.duration
    verdict.retest = failing_files(run, Path(env.session.source))
    return verdict


MAX_KILLED_TESTS = 3
WHOLE_SUITE_SHARE = 0.5  # of the budget left, for a whole-suite pytest run (see above)


IGNORED_OPTIONS_PLUGIN = "reposim_ignored_options"
_IGNORED_OPTIONS_SOURCE = """\
# Written by reposim setup: options the project's pytest config passes that no plugin loading
# here provides (a plugin no release of which loads in today's pytest); they are accepted and
# do nothing, so the rest of the config still applies. Loaded with -p {name}.
IGNORED = {flags!r}


def pytest_addoption(parser):
    group = parser.getgroup("reposim", "options reposim setup accepts and ignores")
    for flag in IGNORED:
        dest = "reposim_ignored_" + flag.lstrip("-").replace("-", "_")
        group.addoption(flag, action="store_true", dest=dest, help="ignored: no plugin here")
"""


SAMPLE_PLUGIN = "reposim_sample"
SAMPLE_MAX = 2000  # tests in a sample
SAMPLE_MIN = 20
_SAMPLE_SOURCE = """\
# Written by reposim setup: keeps a sample of the collected tests, spread over every test file
# (evenly spaced within each, each file's share by its size): -p {name} --reposim-sample N.


def pytest_addoption(parser):
    parser.addoption("--reposim-sample", type=int, default=0, help="run a sample of N tests")


def pytest_collection_modifyitems(session, config, items):
    wanted = config.getoption("reposim_sample")
    if not wanted or len(items) <= wanted:
        return
    files = {{}}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    kept = []
    for group in files.values():
        share = max(1, round(wanted * len(group) / len(items)))
        step = len(group) / min(share, len(group))
        kept += [group[int(i * step)] for i in range(min(share, len(group)))]
    chosen = set(map(id, kept))
    config.hook.pytest_deselected(items=[i for i in items if id(i) not in chosen])
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"reposim-sample: {{len(kept)}} of {{len(items)}} collected tests, "
            f"{{len(files)}} test files"
        )
    items[:] = [i for i in items if id(i) in chosen]
"""
_SAMPLE_LINE = re.compile(r"reposim-sample: (\d+) of (\d+) collected tests, (\d+) test files")


def _cut_and_passing(verdict: Verdict, killed: list[str]) -> bool:
    """A pytest run of the suite the time limit stopped, with every module imported and at
    least 95% of the tests that ran passing: a sample can decide. Tests the memory limit
    killed (`killed`, left out of the run and named) and at most one module killed as it was
    imported do not stop it (lz4 3.1.10: 14,131 of 14,131 passed, `test_huge` and
    `test_stream_2.py` left out, and no sample ran, so the cut was the verdict)."""
    ran = sum(verdict.tests.get(k, 0) for k in ("passed", "failed", "error"))
    named = [s.split(": ")[0] for s in verdict.skipped]
    return (
        verdict.category is Category.TIMEOUT
        and verdict.tier is Tier.RUNS
        and ran >= 2 * SAMPLE_MIN
        and (verdict.pass_ratio or 0.0) >= READY_RATIO
        and all(n in killed for n in named)
        and len([n for n in named if "::" not in n]) <= 1
        and " -m pytest " in f"{verdict.test_command or ''} "
    )


async def _sample_and_repair(
    env: _Env,
    run: WorkflowRun,
    cut: Verdict,
    state: RepairState,
    options: SetupOptions,
    repairs: list[dict[str, Any]],
    round_no: int,
) -> Verdict:
    """A sample of a cut suite decides (`_sampled`); when the sample falls short on a cause a
    rule repairs, the fix is applied and a sample runs again, within the repair rounds and the
    budget. hmmlearn 0.2.7: the cut run passed 110 of 110, and a sample of 56, spread over every
    test file, failed 19 on nose-style `setup()` that pytest 8 no longer calls; the sample's
    failures were final and the fix (pytest<8) was never tried."""
    while True:
        with run.stage("sample") as detail:
            verdict, short = await _sampled(env, cut, options)
            detail.update(verdict.to_dict())
        if short is None:
            return verdict
        fix = _next_fix(short, state) if round_no < options.repair_rounds else None
        if fix is None:
            return verdict
        # The fix, then another sample as long as the last one took: both must fit.
        if not _time_for(env, 2 * short.seconds + MIN_TEST_SECONDS):
            env.notes.append(
                f"repairs stopped at the time budget ({options.budget:.0f} s) after the sample; "
                f"not tried: {fix.kind} ({fix.reason})"
            )
            return verdict
        round_no += 1
        fixes = [fix, *_together(fix, short, state)]
        ok = await _apply_round(env, run, fixes, state, round_no, repairs, after="sample")
        if not ok:
            return verdict
        state.versions = await env.versions()
        env.notes.append(
            f"a sample of the cut suite fell short ({short.line()}): repaired "
            f"({'; '.join(f.reason for f in fixes)}), and a new sample decides"
        )


async def _sampled(
    env: _Env, cut: Verdict, options: SetupOptions
) -> tuple[Verdict, Verdict | None]:
    """lz4 3.1.10: the suite ran into its time limit after 19,012 tests, all passed. pytest
    collects every module before it runs a test, so the cut run showed the suite imports; a
    sample of the collected tests, spread over every test file (half as many as the cut run
    got through, at most SAMPLE_MAX), runs and decides. The verdict names the sample and what
    the whole run did; a sample cut at its limit leaves the timeout verdict as it was, and a
    sample short of ready adds its result to the evidence, and is returned beside it (with the
    run's time) for a repair."""
    if env.deadline is not None and env.deadline - time.monotonic() < MIN_TEST_SECONDS:
        # No room left in the budget for a run: a sample would take the batch's limit.
        env.notes.append("no time left in the budget for a sample of the suite")
        return cut, None
    ran = sum(cut.tests.get(k, 0) for k in ("passed", "failed", "error"))
    wanted = min(SAMPLE_MAX, ran // 2)
    source = _SAMPLE_SOURCE.format(name=SAMPLE_PLUGIN)
    written = await env.sh(write_plugin(env.python, SAMPLE_PLUGIN, source))
    if written.exit_code != 0 or not cut.test_command:
        return cut, None
    command = f"{cut.test_command} -p {SAMPLE_PLUGIN} --reposim-sample {wanted}"
    run = await env.run_tests(command)
    counts = run.counts() if run.structured else count_generic(run.output, run.exit_code)
    line = _SAMPLE_LINE.search(run.output)
    if run.timed_out or line is None:
        return cut, None
    kept, collected, files = (int(g) for g in line.groups())
    sample = _judge(run, counts, cut.test_command, options)
    if not sample.ready:
        evidence = f"{cut.evidence}; a sample of {kept} tests: {sample.line()}"
        return replace(cut, evidence=evidence), replace(sample, seconds=run.duration)
    decided = replace(
        sample,
        seconds=run.duration,
        skipped=[*sample.skipped, *cut.skipped],  # what the memory limit killed, named
        sample=(
            f"{kept} of {collected} collected tests, from all {files} test files; the whole "
            f"suite ran into its time limit after {ran} tests ({cut.tests.get('passed', 0)} "
            "passed)"
        ),
    )
    return decided, None


def write_ignored_options(python: str, flags: list[str]) -> str:
    """The command that writes setup's plugin module accepting and ignoring `flags` into the
    site-packages of `python`'s environment: one line (the module's text goes as a JSON
    string), so the generated Dockerfile runs the same command as setup did."""
    source = _IGNORED_OPTIONS_SOURCE.format(name=IGNORED_OPTIONS_PLUGIN, flags=flags)
    return write_plugin(python, IGNORED_OPTIONS_PLUGIN, source)


def write_plugin(python: str, name: str, source: str) -> str:
    """The command that writes a pytest plugin module of setup's own (NAME.py holding
    `source`) into the site-packages of `python`'s environment, on one line: the text goes as
    a JSON string."""
    script = (
        "import json, pathlib, sys, sysconfig; "
        "pathlib.Path(sysconfig.get_paths()['purelib'], sys.argv[1] + '.py')"
        ".write_text(json.loads(sys.argv[2]))"
    )
    return f"{python} -c {shlex.quote(script)} {name} {shlex.quote(json.dumps(source))}"


async def _ignore_options(env: _Env, flags: tuple[str, ...]) -> bool:
    """numdifftools 0.9.39: `--pep8` in addopts. A plugin module of setup's own in the venv's
    site-packages registers each flag (checked: `--name`) as an option that does nothing; every
    later pytest run loads it (`-p`), and the notes name the flags."""
    new = [f for f in flags if IGNORABLE_OPTION.match(f) and f not in env.ignored_options]
    if not new:
        return False
    flags_now = [*env.ignored_options, *new]
    result = await env.sh(write_ignored_options(env.python, flags_now))
    if result.exit_code != 0:
        return False
    env.ignored_options = flags_now
    env.notes.append(
        f"the project's pytest config passes {', '.join(new)}, which no plugin that loads here "
        f"provides: accepted and ignored (-p {IGNORED_OPTIONS_PLUGIN}, a module setup wrote "
        "in the venv), the rest of the config applies"
    )
    return True


# hypothesis's own words for an example slower than its deadline (200 ms unless the project
# sets one): `DeadlineExceeded: Test took 412.31ms, which exceeds the deadline of 200.00ms`.
# A timing that was not the same twice: `Unreliable test timings! On an initial run, this test
# took 412.31ms, which exceeded the deadline of 200.00ms, but on a subsequent run it took ...`.
# The traceback's source lines (`raise DeadlineExceeded(runtime, ...)`) name it too: the line
# with the timing is preferred as the reason.
DEADLINE_EXCEEDED = re.compile(r"DeadlineExceeded\b|Unreliable test timings!")
_DEADLINE_MESSAGE = re.compile(
    r"DeadlineExceeded: [^\n]*?took [\d.]+ ?ms[^\n]*?deadline of [\d.]+ ?ms"
)
NO_DEADLINE_PLUGIN = "reposim_no_deadline"
NO_DEADLINE_SOURCE = """\
# Written by reposim setup: hypothesis's per-example deadline off (a profile loaded before the
# tests), since examples ran past it by the machine's load, not the code. Loaded with
# -p reposim_no_deadline. A deadline the project sets itself (@settings(deadline=...), a
# profile of its own) is left out too: settings made after this module inherit None.
from hypothesis import settings

settings.register_profile("reposim-no-deadline", deadline=None)
settings.load_profile("reposim-no-deadline")
_made = settings.__init__


def _without_deadline(self, parent=None, **kwargs):
    kwargs.pop("deadline", None)
    _made(self, parent, **kwargs)


settings.__init__ = _without_deadline
"""


async def _no_deadline(env: _Env, reason: str) -> bool:
    """numdifftools 0.9.39 at load 20-30: its hypothesis tests failed with DeadlineExceeded (an
    example took longer than hypothesis's 200 ms, or than the 500-800 ms its tests set
    themselves), a timing of the loaded machine, not a defect. A plugin module of setup's own
    loads a hypothesis profile without a deadline and drops the deadline a test sets; every
    later pytest run loads it (-p), the notes say so, and the generated Dockerfile writes it."""
    if not await _write_plugin(
        env,
        NO_DEADLINE_PLUGIN,
        NO_DEADLINE_SOURCE,
        f"hypothesis's per-example deadline turned off ({reason}): a timing of this machine's "
        f"load, not of the code (-p {NO_DEADLINE_PLUGIN}, a module setup wrote in the venv)",
    ):
        return False
    env.no_deadline = True
    return True


async def _write_plugin(env: _Env, name: str, source: str, note: str) -> bool:
    """Write one of setup's own pytest plugins into the venv; on success the note says so."""
    result = await env.sh(write_plugin(env.python, name, source))
    if result.exit_code != 0:
        return False
    env.notes.append(note)
    return True


EXEC_TMP_PLUGIN = "reposim_exec_tmp"
EXEC_TMP_SOURCE = """\
# Written by reposim setup: /tmp here is a tmpfs mounted noexec, and the project's tests load
# shared objects they build in temporary folders ("failed to map segment from shared object").
# Temporary files go to a folder beside the venv instead, for the tests and what they start (a
# compiler). Loaded with -p reposim_exec_tmp.
import os
import sys
import tempfile

_folder = os.path.join(sys.prefix, "reposim-tmp")
os.makedirs(_folder, exist_ok=True)
os.environ["TMPDIR"] = _folder
tempfile.tempdir = _folder
"""


async def _exec_tmp(env: _Env, reason: str) -> bool:
    """cffi 1.15.0 (stop 43 run E): its tests compile C into /tmp and load the result, and /tmp
    in RepoSim's containers is a tmpfs mounted noexec (Docker's default for --tmpfs), so the
    loader refused 17 of the 24 failures of a cut run of 850 tests and 80 of the 100 of a
    sample of 416. When /tmp is mounted noexec, a plugin module of setup's own gives the tests
    a temporary folder beside the venv (TMPDIR and `tempfile.tempdir`); every later pytest run
    loads it (-p), the notes say so, and the generated Dockerfile writes it. False when /tmp
    is not noexec (not this cause)."""
    mounts = await env.sh("awk '$2 == \"/tmp\" {print $4}' /proc/mounts")
    if "noexec" not in mounts.output.decode("utf-8", "replace").split(","):
        env.notes.append(f"/tmp is not mounted noexec here, so not that: {reason}")
        return False
    if not await _write_plugin(
        env,
        EXEC_TMP_PLUGIN,
        EXEC_TMP_SOURCE,
        f"/tmp is mounted noexec here and {reason}: the tests take a temporary folder beside "
        f"the venv (-p {EXEC_TMP_PLUGIN}, a module setup wrote in the venv)",
    ):
        return False
    env.exec_tmp = True
    return True


TEST_FOLDER_PLUGIN = "reposim_test_folder"
TEST_FOLDER_SOURCE = """\
# Written by reposim setup: the project's tests open files by paths relative to their own
# folder, which the project runs them from (`cd test`); each test runs with its file's folder
# as the working directory, and the one before is put back after it. Loaded with
# -p reposim_test_folder.
import os

import pytest


@pytest.fixture(autouse=True)
def _reposim_test_folder(request):
    path = getattr(request.node, "path", None)
    before = os.getcwd()
    if path is not None:
        os.chdir(os.path.dirname(str(path)))
    try:
        yield
    finally:
        os.chdir(before)
"""


async def _test_folder(env: _Env, reason: str) -> bool:
    """bitstring 3.1.9 (stop 44's fresh pins): its tests open `smalltestfile` and `test.m1v`,
    which sit beside them in test/, by relative paths (the project runs them from that folder);
    from the root 33 of 546 failed. A plugin module of setup's own runs each test in its file's
    folder; every later pytest run loads it (-p), the notes say so, and the generated
    Dockerfile writes it."""
    if not await _write_plugin(
        env,
        TEST_FOLDER_PLUGIN,
        TEST_FOLDER_SOURCE,
        f"{reason}: each test runs in its file's folder (-p {TEST_FOLDER_PLUGIN}, a module setup "
        "wrote in the venv)",
    ):
        return False
    env.test_folder = True
    return True


def _for_this_env(test: TestCommand, env: _Env) -> TestCommand:
    """A pytest command with the tests runs were killed in deselected (ids checked when found)
    and setup's plugins for ignored options and hypothesis's deadline loaded."""
    if test.runner != "pytest":
        return test
    words = ["-p", IGNORED_OPTIONS_PLUGIN] if env.ignored_options else []
    if env.no_deadline:
        words += ["-p", NO_DEADLINE_PLUGIN]
    if env.exec_tmp:
        words += ["-p", EXEC_TMP_PLUGIN]
    if env.test_folder:
        words += ["-p", TEST_FOLDER_PLUGIN]
    for left_out in env.killed_tests:
        words += ["--deselect" if "::" in left_out else "--ignore", left_out]
    return replace(test, args=(*test.args, *words)) if words else test


async def _find_killed_test(env: _Env, test: TestCommand, imports: ImportScan) -> bool:
    """After a pytest run was killed before it reported (lz4 3.1.10: test_huge allocates 4 GB,
    the container's limit is 2 GB), run it again verbose and unbuffered to see which test it
    was in; that test (a file of the checkout, at most three such tests or modules) is left out
    of every later run and named in the verdict, as a person would deselect it. Killed while
    no test ran (pytest importing the test modules): each test module is collected alone, and
    the one whose import is killed is left out (`--ignore`)."""
    if test.runner != "pytest" or len(env.killed_tests) >= MAX_KILLED_TESTS:
        return False
    if "--pyargs" in test.args:
        return False
    run = await env.run_tests(test.command(env.python, verbose=True))
    if run.exit_code != 137:
        return False
    test_id = killed_test(run.output)
    if test_id is None:
        return await _find_killed_module(env, test, imports)
    if test_id in env.killed_tests:
        return False
    path = Path(test_id.split("::")[0])
    root = Path(env.session.source)
    if path.is_absolute() or ".." in path.parts or not (root / path).is_file():
        return False
    env.killed_tests.append(test_id)
    env.notes.append(
        f"the test run was killed (SIGKILL) in {test_id}, most likely by the container's "
        "memory limit: that test is left out (--deselect) and named in the verdict"
    )
    return True


MAX_COLLECTION_PROBES = 60


async def _find_killed_module(env: _Env, test: TestCommand, imports: ImportScan) -> bool:
    """The test module whose import was killed: each module the command collects (the scan's
    test modules under the paths it names), collected alone (`--collect-only`); the first one
    killed (exit 137) is left out. At most MAX_COLLECTION_PROBES modules are tried."""
    root = Path(env.session.source)
    paths = [a for a in test.args if not a.startswith("-") and (root / a).exists()]
    modules = [
        m
        for m in imports.test_modules
        if m not in env.killed_tests
        and (not paths or any(m == p or m.startswith(p.rstrip("/") + "/") for p in paths))
    ]
    if not modules or len(modules) > MAX_COLLECTION_PROBES:
        return False
    for module in modules:
        probe = TestCommand("pytest", ("--collect-only", module), "collection probe")
        result = await env.sh(f"{probe.command(env.python)} >/dev/null 2>&1", timeout=300)
        if result.exit_code == 137:
            env.killed_tests.append(module)
            env.notes.append(
                f"the test run was killed (SIGKILL) while pytest imported {module}, most likely "
                "by the container's memory limit (collected alone, it is killed too): that "
                "module is left out (--ignore) and named in the verdict"
            )
            return True
    return False


def interrupt_at(command: str, timeout: float) -> float | None:
    """When a pytest run is interrupted (SIGINT, as by Ctrl+C) before its limit: pytest then
    stops and still prints its summary and writes its report of the tests that ran, which the
    limit's kill would lose (the kill stays as the backstop). None for other runners."""
    if not is_pytest(command) or timeout < 20:
        return None
    return timeout - min(45.0, 0.3 * timeout)


async def _cpu_seconds(env: _Env) -> float | None:
    """The container's CPU time so far, from the engine (None off Docker)."""
    description = env.session.description
    if description.kind != "docker" or not description.container:
        return None
    container = description.container

    def read() -> float | None:
        import docker.errors

        from backends.docker_engine import connect

        client = connect()
        try:
            stats = client.api.stats(container, stream=False, one_shot=True)
            return int(stats["cpu_stats"]["cpu_usage"]["total_usage"]) / 1e9
        except (docker.errors.DockerException, KeyError, TypeError, ValueError):
            return None
        finally:
            client.close()

    return await asyncio.to_thread(read)


def failing_files(run: TestRunResult, root: Path) -> list[str]:
    """The test files of a pytest run that hold every failed, erroring or unimportable test,
    each a file of the checkout; empty when some failure has no such file (a doctest of an
    installed module, a crash, a timeout): then only the whole suite can tell."""
    if not run.structured or run.timed_out or run.exit_code in (2, 3, 4):
        return []
    files = {t.id.split("::")[0] for t in run.tests if t.outcome in ("failed", "error")}
    files.update(path for path, _ in collection_errors(run.output))
    checked = []
    for name in sorted(files):
        path = Path(name)
        if (
            not name.endswith(".py")
            or name.startswith("-")
            or path.is_absolute()
            or ".." in path.parts
            or not (root / path).is_file()
        ):
            return []
        checked.append(name)
    return checked


async def _unittest(
    env: _Env, project: Project, imports: ImportScan, options: SetupOptions
) -> Verdict | None:
    """unittest discovery in the test folder with the file pattern the project uses, for
    suites pytest does not see. `-t .` only where the folder is a package (otherwise its
    modules are imported as top-level ones). A run killed at its time limit is a timeout, and
    one that ran fewer tests than the test files define is not ready."""
    folder = project.test_dirs[0]
    root = Path(project.root)
    pattern = unittest_pattern(root / folder)
    top = " -t ." if (root / folder / "__init__.py").is_file() else ""
    command = (
        f"{env.python} -m unittest discover -s {shlex.quote(folder)}{top} -p {shlex.quote(pattern)}"
    )
    run = await env.run_tests(command)
    counts = count_generic(run.output, run.exit_code)
    if "Ran " not in run.output and not run.timed_out:
        return None
    verdict = _judge(run, counts, command, options)
    verdict.seconds = run.duration
    return _ran_fewer_than_defined(verdict, imports, "unittest discovery") or verdict


def _ran_fewer_than_defined(verdict: Verdict, imports: ImportScan, runner: str) -> Verdict | None:
    """A ready verdict from a run of fewer than 80% of the `def test...` functions the test
    files define is not the suite's: runs/collection, naming the counts (else None)."""
    defined = imports.test_functions
    ran = sum(verdict.tests.get(k, 0) for k in ("passed", "failed", "error"))
    if not verdict.ready or not defined or ran >= 0.8 * defined:
        return None
    return Verdict(
        Tier.RUNS,
        Category.COLLECTION,
        f"{runner} ran {ran} tests; the test files define {defined} test functions, so the "
        "rest were never run",
        tests=verdict.tests,
        pass_ratio=verdict.pass_ratio,
        test_command=verdict.test_command,
        output_tail=verdict.output_tail,
    )


def unittest_pattern(folder: Path) -> str:
    """The discovery pattern the test files follow: test*.py, *_test.py or *_tests.py."""
    names = [p.name for p in folder.rglob("*.py")] if folder.is_dir() else []
    counts = {
        "test*.py": sum(n.startswith("test") for n in names),
        "*_tests.py": sum(n.endswith("_tests.py") for n in names),
        "*_test.py": sum(n.endswith("_test.py") for n in names),
    }
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] else "test*.py"


async def _apply(env: _Env, fix: Fix, state: RepairState) -> bool:
    if fix.kind == "ignore-option":
        return await _ignore_options(env, fix.options)
    if fix.kind == "no-deadline":
        return await _no_deadline(env, fix.reason)
    if fix.kind == "exec-tmp":
        return await _exec_tmp(env, fix.reason)
    if fix.kind == "test-folder":
        return await _test_folder(env, fix.reason)
    if fix.kind == "system":
        return await _install_system(env, fix, state)
    if fix.kind == "removed":
        return await _pin_removed(env, fix.modules[0], state)
    if fix.kind == "nearest-date":
        if not await _nearest_date(env, list(fix.modules)):
            return False
        # The set holds the project's test extras as of its date, the runner among them, which
        # the test-runner stage may have lifted for not starting here (hmmlearn 0.2.7, stop 44:
        # its `tests` extra took pytest 7.0.0 back, the retest stopped at start-up on
        # `HookimplMarker.__call__() got an unexpected keyword argument 'wrapper'`, and the
        # verdict was no-tests): the same check and lift again.
        await _runner_that_starts(env, {})
        return True
    requirements = list(fix.requirements)
    if fix.modules:
        # Import names from a traceback: the table or the index decides, never a guess.
        resolution = await resolve_imports(list(fix.modules), _probe(env))
        state.unresolved.update(resolution.unresolved)
        requirements += sorted(set(resolution.distributions.values()))
        if not requirements:
            return False
    if fix.kind == "downgrade":
        # A pin below a release leaves the packages that require a newer one broken (pandas
        # 3.1 needs numpy>=2.0.2; `numpy<2` alone made networkx's pandas tests unimportable):
        # they go into the same resolution, unversioned, so the resolver moves them to
        # releases that agree with the pin.
        requirements += await dependents(env, [_pinned_name(r) for r in requirements])
    options = list(fix.options)
    if env.interpreter != "python3":
        # On pypy3 a release without a wheel for it is a source build (NumPy's: many minutes):
        # a repair takes wheels only, and fails at once where there is none.
        options += ["--only-binary", ":all:"]
    ok, _ = await env.install(requirements, options=options)
    return ok


async def removed_from(
    env: _Env, subject: str, project: str | None, imported: list[str]
) -> Removed | None:
    """The installed dependency a removed name belongs to (simulator/setup/pins.py), or None
    (the standard library, the project itself, nothing found). `imported`: the top-level
    names the project's code imports, searched first for an object's class."""
    tops = [t for t in imported if re.fullmatch(r"[A-Za-z_]\w*", t)]
    found = await env.python_json(REMOVED_FROM_SCRIPT, subject, project or "", *tops)
    if not isinstance(found, dict):
        return None
    removed = Removed(*(str(found.get(k) or "") for k in ("dist", "module", "object", "attr")))
    if not valid_distribution_name(removed.dist) or not all(
        re.fullmatch(r"[A-Za-z_][\w.]*", p) for p in (removed.module, removed.attr)
    ):
        return None
    if removed.object and not re.fullmatch(r"[A-Za-z_]\w*", removed.object):
        return None
    return removed


async def _pin_removed(env: _Env, subject: str, state: RepairState) -> bool:
    """Pin the dependency that lost `subject` at a release that still has it: the newest
    before the project's date with a wheel here, else the newest later one that has it (a
    bisection over the index's releases older than the installed one, each installed alone and
    asked). The dependency's dependents move with the pin; the notes say what was chosen and
    why. False (and the installed release put back) when no release has it."""
    removed = await removed_from(env, subject, state.project, state.imported)
    if removed is None:
        return False
    dist = removed.dist
    installed = state.versions.get(dist.lower()) or state.versions.get(_normal(dist))
    releases = await env.python_json(RELEASES_SCRIPT, dist)
    if not isinstance(releases, list):
        return False
    pairs = [(str(r[0]), str(r[1] or "")) for r in releases if isinstance(r, list) and len(r) == 2]
    date = commit_date(Path(env.session.source))
    found = candidates(pairs, date, installed)
    if env.constraints:
        # A time-travel pin of this dependency is what lacks the name: it goes.
        argv = [env.python, "-c", _DROP_PINS, env.constraints, env.constraints, dist]
        await env.sh(" ".join(shlex.quote(a) for a in argv))
    check = " ".join(
        shlex.quote(a)
        for a in (env.python, "-c", HAS_SCRIPT, removed.module, removed.object, removed.attr)
    )

    async def has(version: str) -> int:
        ok, _ = await env.install([f"{dist}=={version}"], options=["--no-deps"])
        code = (await env.sh(check)).exit_code if ok else 2
        return 2 if code is None else code

    chosen, why = None, ""
    day = (date or "")[:10]
    if found.before is not None and await has(found.before) == 0:
        chosen = found.before
        why = f"the newest release before the project's date ({day})"
    elif date is not None:
        # No release of the project's time has a wheel for this Python (or it does not import
        # here): the nearest later one that has the name behaves most like what the project
        # was written against.
        nearest = await nearest_with(found.after, has)
        chosen = nearest.chosen
        why = (
            f"the release nearest the project's date ({day}) that has a wheel here and still "
            "has it (none before that date installs here)"
        )
        if chosen is None and nearest.rest:
            chosen = await newest_with(nearest.rest, has)
            why = (
                "the newest release that still has it (the releases nearest the project's "
                f"date, {day}, do not import here)"
            )
    else:
        chosen = await newest_with(found.after, has)
        why = "the newest release that still has it (none before the project's date does here)"
    if chosen is None:
        if installed:
            await env.install([f"{dist}=={installed}"], options=["--no-deps"])
        env.notes.append(f"{removed.name} is gone from {dist}; no release with a wheel here has it")
        return False
    requirements = [f"{dist}=={chosen}", *await dependents(env, [dist])]
    ok, _ = await env.install(requirements)
    if ok:
        env.notes.append(
            f"{removed.name} is gone from {dist} {installed}: pinned {dist}=={chosen}, {why}"
        )
    return ok


def _pinned_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]


# The installed distributions that require one of argv's names (extras left out), except the
# ones installed from a local tree (the project itself, editable or not: the index's release of
# that name must not replace it).
DEPENDENTS_SCRIPT = (
    "import importlib.metadata as m, re, sys\n"
    "norm = lambda n: re.sub(r'[-_.]+', '-', n).lower()\n"
    "targets = {norm(a) for a in sys.argv[1:]}\n"
    "found = set()\n"
    "for d in m.distributions():\n"
    "    name = d.metadata['Name']\n"
    "    if not name or norm(name) in targets:\n"
    "        continue\n"
    "    origin = d.read_text('direct_url.json') or ''\n"
    "    if 'dir_info' in origin or 'file:' in origin:\n"
    "        continue\n"
    "    for r in d.requires or []:\n"
    "        head = re.match(r'\\s*([A-Za-z0-9][A-Za-z0-9._-]*)', r)\n"
    "        if head and norm(head.group(1)) in targets and not re.search(r'extra\\s*==', r):\n"
    "            found.add(norm(name))\n"
    "print('\\n'.join(sorted(found)))\n"
)


async def dependents(env: _Env, names: list[str]) -> list[str]:
    """The installed distributions (from the index) that require one of `names`."""
    names = [n for n in names if valid_distribution_name(n)]
    if not names:
        return []
    argv = [env.python, "-c", DEPENDENTS_SCRIPT, *names]
    result = await env.sh(" ".join(shlex.quote(a) for a in argv))
    if result.exit_code != 0:
        return []
    lines = result.output.decode("utf-8", "replace").splitlines()
    return [line.strip() for line in lines if valid_distribution_name(line.strip())]


def _probe(env: _Env) -> Callable[[list[str]], Awaitable[dict[str, list[str] | None]]]:
    async def probe(names: list[str]) -> dict[str, list[str] | None]:
        argv = [env.python, "-c", PROBE_SCRIPT, *names]
        result = await env.sh(" ".join(shlex.quote(a) for a in argv), timeout=600)
        return parse_probe_output(result.output.decode("utf-8", "replace"))

    return probe


DEBIAN_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")


_HAS_PYTHON_H = (
    "import os, sysconfig; "
    "print(os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"
)


async def _system_before_tests(
    env: _Env,
    run: WorkflowRun,
    project: Project,
    failure: Diagnosis,
    state: RepairState,
    repairs: list[dict[str, Any]],
) -> Diagnosis | None:
    """A build that failed for want of a Debian package (a missing header or library the
    repair rules name): the package goes in as root and the project is built again before any
    test runs (round 0). Otherwise the oracle's first run is the whole suite on a tree the
    build left without its extension, which can reach no tier (cffi 1.15.0, stop 44: 570 s of
    its 1,200-s budget on `ffi.h` missing, then libffi-dev, and the budget cut what followed).
    The install's diagnosis after it: None once the project installs."""
    for _ in range(MAX_FIXES_A_ROUND):  # a second missing header shows after the first
        fix = plan(failure, state)
        if fix is None or fix.kind != "system" or fix.key in state.tried:
            return failure
        if not await _apply_round(env, run, [fix], state, 0, repairs, after="the build"):
            return failure
        with run.stage("project", after=fix.kind) as detail:
            ok, output = await _install_project(env, project)
            if ok:
                await _time_travel(env, project)
                detail.update(resolution=env.resolution)
            detail.update(installed=ok)
            if ok:
                env.notes.append(f"{fix.reason}: installed before any test ran (as root)")
                return None
            failure = diagnose(output, fallback=Category.DEPENDENCY)
            detail.update(failed=True, category=str(failure.category), evidence=failure.evidence)
    return failure


async def _python_headers(env: _Env, state: RepairState, detail: dict[str, Any]) -> None:
    """A project whose setup.py builds extension modules needs Python.h; when this Python has
    none, its Debian package goes in before the project does. Where the repair loop would
    get there after a failed build (one build and a round later), an optional extension
    (pyrsistent 0.18.0's pvectorc) fails quietly: the install succeeds without the module
    its top_level.txt names, and no fix follows from `No module named 'pvectorc'`."""
    check = await env.sh(f"{env.python} -c {shlex.quote(_HAS_PYTHON_H)}")
    if check.output.decode("utf-8", "replace").strip().endswith("True"):
        return
    package = HEADER_PACKAGES["Python.h"]
    fix = Fix(
        "system",
        (),
        f"setup.py builds C extensions and this Python has no Python.h: Debian package {package}",
        system_packages=(package,),
    )
    ok = await _install_system(env, fix, state)
    detail.update(python_headers=package if ok else f"{package} not installed")
    if ok:
        env.notes.append(f"{fix.reason}, installed before the project (as root)")


async def _install_system(env: _Env, fix: Fix, state: RepairState) -> bool:
    """Debian packages, installed as root in the container (setup has the network); the
    session's user is not root, so this goes through the engine, and the trajectory gets a note
    with the command and its outcome. On other backends they are only recorded (the generated
    Dockerfile installs them). The package lists come from the host's copy for the image when
    there is one (simulator/setup/aptlists.py)."""
    session = env.session
    description = session.description
    container = description.container if description.kind == "docker" else None
    packages = [p for p in fix.system_packages if DEBIAN_PACKAGE.match(p)]
    if container is None:
        state.system_packages.extend(p for p in packages if p not in state.system_packages)
        return False
    lists = await _package_lists(env, container)
    if not packages:
        for library in fix.modules:
            # A header (`mpfr.h`) or a shared library (`libgobject-2.0.so.0`)
            lookup = HEADER_LOOKUP if library.endswith(".h") else SYSTEM_LOOKUP
            code, out = await run_as_root(container, lookup, [library], timeout=600)
            found = out.strip().splitlines()[-1:] if code == 0 else []
            session.note(
                f"setup: looked up the Debian package that ships {library}: "
                + (found[0] if found else "none found"),
                actor=Actor.SYSTEM,
            )
            packages += [p for p in found if DEBIAN_PACKAGE.match(p)]
    if not packages:
        return False
    code, out = await run_as_root(container, _INSTALL, packages, timeout=900)
    if code != 0 and lists is Lists.CACHED and FETCH_FAILED.search(out):
        # The copied lists name files the mirror has since replaced: fetch them, once.
        await _package_lists(env, container, refresh=True)
        code, out = await run_as_root(container, _INSTALL, packages, timeout=900)
    session.note(
        f"setup (as root): apt-get install {' '.join(packages)} -> exit {code}\n{out[-800:]}",
        actor=Actor.SYSTEM,
    )
    if code == 0:
        state.system_packages.extend(p for p in packages if p not in state.system_packages)
    return code == 0


# The install's own exit status, not tail's (sh has no pipefail: the status goes through a file).
_INSTALL = (
    f"DEBIAN_FRONTEND=noninteractive {APT} install -y -qq --no-install-recommends -- "
    '"$@" >/tmp/.apt-install 2>&1; code=$?; tail -5 /tmp/.apt-install; '
    "rm -f /tmp/.apt-install; exit $code"
)


async def _package_lists(env: _Env, container: str, *, refresh: bool = False) -> Lists:
    """The container's package lists (see `ensure_lists`), and a note saying where from."""
    started = time.monotonic()
    lists = await ensure_lists(container, env.session.description.image_id, refresh=refresh)
    if lists is not Lists.PRESENT:
        where = {
            Lists.CACHED: "copied from the host, fetched earlier for this image",
            Lists.FETCHED: "fetched (apt-get update) and kept on the host for this image",
            Lists.MISSING: "apt-get update failed",
        }[lists]
        env.session.note(
            f"setup: package lists {where} ({time.monotonic() - started:.1f} s)",
            actor=Actor.SYSTEM,
        )
    return lists


# -- C projects ----------------------------------------------------------------------------------

C_COMMANDS: dict[str, tuple[str, str]] = {
    # build system -> (configure and build, test)
    "cmake": (
        "cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug && cmake --build build -j2",
        "ctest --test-dir build --output-on-failure",
    ),
    "meson": ("meson setup build && meson compile -C build", "meson test -C build"),
    "autotools": (
        "( [ -x configure ] || autoreconf -fi ) && ./configure && make -j2",
        "make check",
    ),
    "make": ("make -j2", "make test || make check"),
    "build.sh": ("bash build.sh", "( [ -x test.sh ] && bash test.sh ) || make test"),
}


async def _c_ladder(session: Session, run: WorkflowRun, env: _Env, project: Project) -> SetupResult:
    """Build with the tree's build system, then run its tests. A tree carrying more than one
    (zlib: CMakeLists.txt and a hand-written ./configure) gets the next one when a build fails,
    as a person would; the notes say which failed and which built."""
    systems = project.c_builds or [project.c_build or "make"]
    failed: list[tuple[str, str]] = []  # (build system, its output) for each build that failed
    for build_system in systems:
        build, test = C_COMMANDS[build_system]
        with run.stage("build", system=build_system) as detail:
            result = await env.sh(f"({build}) 2>&1", timeout=env.install_timeout())
            detail.update(exit_code=result.exit_code)
            if result.exit_code != 0:
                detail["failed"] = True
        if result.exit_code == 0:
            break
        failed.append((build_system, env.last_output))
    if failed and result.exit_code == 0:
        env.notes.append(
            f"the {', '.join(name for name, _ in failed)} build failed "
            f"({diagnose(failed[0][1], fallback=Category.BUILD).evidence.strip()}); "
            f"built with {build_system} instead: {build}"
        )
    if build_system == "make" and result.exit_code == 0:
        test = await _make_test_target(session)
    if result.exit_code != 0:
        # Every build failed: the first (the tree's main build system) is the evidence.
        output = failed[0][1]
        diagnosis = diagnose(output, fallback=Category.BUILD)
        if len(failed) > 1:
            env.notes.append("also tried and failed: " + ", ".join(name for name, _ in failed[1:]))
        verdict = Verdict(
            Tier.NONE,
            diagnosis.category if diagnosis.category is not Category.UNKNOWN else Category.BUILD,
            diagnosis.evidence,
            diagnosis.subject,
            output_tail=output[-4000:],
        )
    else:
        env.commands.append(build)
        with run.stage("oracle") as detail:
            tests = await session.run_tests(
                command=test, actor=Actor.SYSTEM, timeout=env.options.test_timeout
            )
            counts = count_generic(tests.output, tests.exit_code)
            verdict = _judge(tests, counts, test, env.options)
            if verdict.tier is Tier.COLLECTS and verdict.category is Category.NO_TESTS:
                verdict.tier = Tier.INSTALLED
            detail.update(verdict.to_dict())
    return SetupResult(verdict, project, installer="make", commands=env.commands, notes=env.notes)


async def _make_test_target(session: Session) -> str:
    result = await session.exec(
        "make -qp 2>/dev/null | grep -E '^(test|check|tests):' | head -1", actor=Actor.SYSTEM
    )
    target = result.output.decode().split(":")[0].strip()
    return f"make {target}" if target else "make test"
