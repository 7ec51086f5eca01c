"""The traced harness workflow in a container: tracer, harness runs, coverage and mutants all
run in the container's own Python (which has no coverage.py: RepoSim brings its copy)."""

from __future__ import annotations

from pathlib import Path

from backends.docker import DockerBackend, DockerOptions
from simulator.events import Kind
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.conftest import RepoFactory
from tests.docker.conftest import TEST_IMAGE
from tests.harness.conftest import PROJECT


async def test_traced_harness_validates_in_a_container(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(PROJECT, name="shapes")
    targets = find_targets(repo, selectors=["clamp"])
    backend = DockerBackend(repo, DockerOptions.build(image=TEST_IMAGE))
    session = await Session.open(repo, backend=backend, trajectory_path=tmp_path / "t.jsonl")
    try:
        [problem] = await make_problems(
            session, targets, HarnessOptions(thresholds=Thresholds(repeats=2))
        )
    finally:
        await session.close()
    assert problem.validation is not None, problem.curation.reasons
    assert problem.validation.verdict == "valid", problem.validation.reasons
    assert problem.validation.coverage is not None
    assert (problem.validation.coverage["covered"], problem.validation.coverage["total"]) == (6, 6)
    assert problem.validation.mutation is not None
    assert (problem.validation.mutation["killed"], problem.validation.mutation["total"]) == (7, 10)
    events = read_trajectory(tmp_path / "t.jsonl").events
    notes = [e.payload["text"] for e in events if e.kind == Kind.NOTE]
    assert any(n.startswith("coverage was not installed") for n in notes)
    assert read_trajectory(tmp_path / "t.jsonl").header.backend.kind == "docker"
