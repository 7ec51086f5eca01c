"""Fixtures shared by every test folder: real git repositories on disk, and a check that every
trajectory a test writes under its own directory follows docs/trajectory.schema.json."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from simulator.session import Session
    from tests.agent.fake_llm import FakeLLM

GIT_ENV = {
    "GIT_AUTHOR_NAME": "RepoSim Tests",
    "GIT_AUTHOR_EMAIL": "tests@reposim.invalid",
    "GIT_COMMITTER_NAME": "RepoSim Tests",
    "GIT_COMMITTER_EMAIL": "tests@reposim.invalid",
}

RepoFactory = Callable[..., Path]

# A test run started in the background by a non-interactive shell (`cmd &`, as a CI wrapper or
# `nohup` does) inherits SIGINT ignored, and every process the tests start inherits that too: the
# tests of Ctrl+C in the terminal pane, of SIGINT to `reposim exec` and of an interrupt in a Docker
# session then wait in vain (the lead's background CI runs failed 7 such tests that pass in a
# terminal). The tests need what a user's terminal gives: Python's own SIGINT handler here, so the
# processes they start get the default action.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

WAIT = 180.0
"""How long a test waits for a state (a process started, a screen drawn, a notice shown) before it
fails: a deadline only, never a timing assertion, since a passing test waits no longer. Generous on
purpose: at load 20-135 on two cores, states that take a second alone took 60-120 s (stop 34);
pytest-timeout's 900 s stays the bound on a whole test."""

REPOSIM = [sys.executable, "-m", "reposim"]
"""The `reposim` command as a user runs it (this checkout's environment)."""


def reposim(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run `reposim ARGS` in a process of its own, its output captured as text; the exit status
    is the test's to check. `timeout` is an upper bound for a loaded machine."""
    return subprocess.run(
        [*REPOSIM, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )


USER_PYTEST_VENV = Path.home() / ".cache" / "reposim-tests" / "user-pytest-venv"


@pytest.fixture(scope="session", autouse=True)
def user_has_pytest_on_path() -> Iterator[None]:
    """Local sessions run in the user's environment, never RepoSim's own venv (see
    backends/session_env.py), so `python -m pytest` in a session finds whatever the user has.
    The stand-in for "the user has pytest on PATH": a small venv with pytest, made once (uv,
    from its cache) and shared by runs and xdist workers, its bin/ first on this process's PATH."""
    import fcntl
    import os
    import shutil

    venv = USER_PYTEST_VENV
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / "user-pytest-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = venv / "ready"
        if not ready.exists():
            shutil.rmtree(venv, ignore_errors=True)
            uv = shutil.which("uv") or "uv"
            clean = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
            subprocess.run([uv, "venv", "-q", str(venv)], check=True, env=clean)
            subprocess.run(
                [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "pytest"],
                check=True,
                env=clean,
            )
            ready.touch()
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{venv / 'bin'}{os.pathsep}{old}"
    try:
        yield
    finally:
        os.environ["PATH"] = old


@pytest.fixture(autouse=True)
def trajectories_follow_the_schema(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[None]:
    """After each test, every RepoSim trajectory under its tmp_path is validated against the
    published JSON Schema; a violation fails the test (in teardown), naming file and line.
    Tests that write broken files on purpose say so with @pytest.mark.malformed_trajectories."""
    yield
    if request.node.get_closest_marker("malformed_trajectories"):
        return
    from tests.schema_check import problems_under

    found = problems_under(tmp_path)
    if found:
        pytest.fail(
            f"{len(found)} trajectory lines break docs/trajectory.schema.json:\n"
            + "\n".join(found[:10]),
            pytrace=False,
        )


def git(repo: Path, *args: str) -> str:
    import os

    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return proc.stdout


def reposim_peak_rss(*args: str, timeout: float = 300) -> tuple[int, int, str]:
    """Run `reposim ARGS` with its stdout discarded: the peak RSS in KiB of it and its children
    (a parent process reads it from getrusage), its exit status and its stderr."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, subprocess, sys; "
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)",
            *REPOSIM,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    peak_kib, code = map(int, proc.stdout.split())
    return peak_kib, code, proc.stderr


@pytest.fixture
def make_repo(tmp_path: Path) -> RepoFactory:
    """Create a real git repository from {relative path: content} and commit it."""
    counter = 0

    def factory(files: dict[str, str], *, name: str | None = None, commit: bool = True) -> Path:
        nonlocal counter
        counter += 1
        repo = tmp_path / (name or f"repo{counter}")
        repo.mkdir(parents=True)
        for rel, content in files.items():
            target = repo / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        if commit:
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "initial")
        return repo

    return factory


SAMPLE_PROJECT = {
    "calc/__init__.py": "",
    "calc/ops.py": (
        "def add(a, b):\n    return a + b\n\n\n"
        "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
    ),
    "tests/test_ops.py": (
        "import pytest\n\nfrom calc.ops import add, mean\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        "@pytest.mark.skip(reason='not today')\n"
        "def test_skipped():\n    pass\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture exploded')\n\n\n"
        "def test_error(broken):\n    pass\n"
    ),
}


@pytest.fixture
def sample_repo(make_repo: RepoFactory) -> Path:
    """A small Python project whose suite has a pass, a failure, a skip and an error."""
    return make_repo(SAMPLE_PROJECT, name="sample")


SessionOn = Callable[..., Awaitable["Session"]]


@pytest.fixture
async def session_on(tmp_path: Path) -> AsyncIterator[SessionOn]:
    """Opens the session `reposim open REPO` would, recording to tmp_path/`trajectory` (by
    default `<repo name>.jsonl`), with Session.open's other options; every session it opened is
    closed after the test."""
    from simulator.session import Session

    opened: list[Session] = []

    async def open_(repo: Path, trajectory: str | None = None, **options: Any) -> Session:
        path = tmp_path / (trajectory or f"{repo.name}.jsonl")
        session = await Session.open(repo, trajectory_path=path, **options)
        opened.append(session)
        return session

    yield open_
    for session in opened:
        await session.close()


def project_fixtures(
    files: Mapping[str, str], *, repo: str, name: str, trajectory: str
) -> tuple[Callable[..., Path], Callable[..., Awaitable[Session]]]:
    """A folder's fixture project: a fixture called `repo` that commits `files` as
    tmp_path/`name`, and `session`, the session on it recording to tmp_path/`trajectory`.
    A folder's conftest binds both: `buggy_repo, session = project_fixtures(...)`."""

    def make(make_repo: RepoFactory) -> Path:
        return make_repo(dict(files), name=name)

    async def open_(request: pytest.FixtureRequest, session_on: SessionOn) -> Session:
        return await session_on(request.getfixturevalue(repo), trajectory)

    make.__doc__ = f"A real git repository `{name}` of the folder's fixture project."
    open_.__doc__ = f"A real session over `{repo}`, recording to tmp_path/{trajectory}."
    return pytest.fixture(name=repo)(make), pytest.fixture(name="session")(open_)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """The local OpenAI-compatible model server (tests/agent/fake_llm.py), closed after the test."""
    from tests.agent.fake_llm import FakeLLM

    server = FakeLLM().start()
    yield server
    server.close()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with slow or Docker tests first, each module kept whole (its module-scoped
    fixtures are built once), the rest in collection order. With xdist's work stealing
    (`--dist worksteal` in pyproject's addopts) the long container tests start early and the last
    tests left for an idle worker to take are short ones: in CI's run of 472f04d at load ~25 one
    worker ran the setup ladder's container tests alone for 15 minutes after the other finished."""

    def weight(item: pytest.Item) -> int:
        if item.get_closest_marker("slow"):
            return 0
        return 1 if item.get_closest_marker("docker") else 2

    first: dict[Path, int] = {}
    for item in items:
        first[item.path] = min(first.get(item.path, 2), weight(item))
    items.sort(key=lambda item: first[item.path])  # stable: collection order within a weight
