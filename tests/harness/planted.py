"""Traced harnesses on a small real project, and the check that each catches a bug planted in
its target that the project's own tests catch (shared by the readable-value tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from simulator.dataset.schema import Problem
from simulator.harness.env import PythonEnv
from simulator.harness.format import readable_share
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from tests.conftest import RepoFactory
from tests.harness.conftest import Traced


@asynccontextmanager
async def rules_project(
    make_repo: RepoFactory,
    tmp_path: Path,
    package: str,
    rules: str,
    tests: str,
    qualnames: list[str],
) -> AsyncIterator[Traced]:
    """A session on a project of `package/rules.py` and `tests/test_rules.py`, with the traced
    problems of the targets named."""
    repo = make_repo(
        {f"{package}/__init__.py": "", f"{package}/rules.py": rules, "tests/test_rules.py": tests},
        name=package,
    )
    session = await Session.open(repo, trajectory_path=tmp_path / "t.jsonl")
    try:
        yield session, await traced_problems(session, repo, qualnames)
    finally:
        await session.close()


async def traced_problems(session: Session, repo: Path, qualnames: list[str]) -> dict[str, Problem]:
    """The traced problems of the targets named, by qualname (every one must be a target)."""
    targets = [t for t in find_targets(repo, filters=[]) if t.qualname in qualnames]
    assert sorted(t.qualname for t in targets) == sorted(qualnames)
    options = HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=0))
    return {p.target["qualname"]: p for p in await make_problems(session, targets, options)}


async def assert_readable_and_catching(
    session: Session,
    problems: dict[str, Problem],
    path: str,
    planted: dict[str, tuple[str, str]],
    tests: str = "tests/test_rules.py",
) -> None:
    """Every harness passes on the reference with every case readable (no pickle), and for
    each target `qualname -> (text in path, the bug that replaces it)` the project's tests and
    the harness both fail once the bug is planted."""
    env = PythonEnv()
    for qualname, (good, bad) in planted.items():
        harness, validation = problems[qualname].harness, problems[qualname].validation
        assert harness is not None and validation is not None, qualname
        assert validation.passed, validation.log
        readable, cases = readable_share(harness.text)
        assert readable == cases > 0, harness.text
        source = (await session.read_bytes(path)).decode()
        assert source.count(good) == 1, good
        await session.write(path, source.replace(good, bad))
        try:
            suite = await session.run_tests(tests, command=env.pytest())
            assert not suite.passed, f"the repository's tests miss the bug in {qualname}"
            run = await session.run_tests(harness.path, command=env.pytest(".reposim/harness"))
            assert not run.passed, f"the harness of {qualname} misses the planted bug"
        finally:
            await session.write(path, source)


async def check_planted(
    make_repo: RepoFactory,
    tmp_path: Path,
    package: str,
    files: tuple[str, str],
    planted: dict[str, tuple[str, str]],
    shown: dict[str, list[str]],
) -> None:
    """On the project `package` (files: its rules.py and tests/test_rules.py), each harness of
    the `planted` targets writes the expressions `shown` for it, is readable, and catches the
    planted bug its project's tests catch."""
    rules, tests = files
    async with rules_project(make_repo, tmp_path, package, rules, tests, list(planted)) as (
        session,
        problems,
    ):
        for qualname, expected in shown.items():
            text = problems[qualname].harness.text  # type: ignore[union-attr]
            for expression in expected:
                assert expression in text, (expression, text)
        await assert_readable_and_catching(session, problems, f"{package}/rules.py", planted)
