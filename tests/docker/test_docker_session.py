"""The session gateway on a container: recorded commands, structured tests, checkpoints."""

from __future__ import annotations

from pathlib import Path

from backends.docker import DockerBackend, DockerOptions
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.docker.conftest import TEST_IMAGE


async def test_run_tests_and_checkpoints_inside_the_container(
    sample_repo: Path, tmp_path: Path
) -> None:
    backend = DockerBackend(
        sample_repo, DockerOptions.build(image=TEST_IMAGE)
    )  # the session starts and stops it
    trajectory = tmp_path / "t.jsonl"
    session = Session(backend, source=sample_repo, trajectory_path=trajectory)
    await session.start()
    try:
        run = await session.run_tests()
        assert run.structured
        assert run.counts() == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}
        await session.checkpoint("before")
        await session.write("calc/ops.py", "broken = True\n")
        await session.create("new.txt", "hello\n")
        assert {c.path for c in await session.changes("before")} == {"calc/ops.py", "new.txt"}
        await session.restore("before")
        assert (await session.read("calc/ops.py")).startswith("def add")
        assert not await session.exists("new.txt")
        result = await session.exec("python -c 'import calc.ops; print(calc.ops.add(2, 3))'")
        assert result.output == b"5\n"
    finally:
        await session.close()
    recorded = read_trajectory(trajectory)
    assert recorded.problem is None
    assert recorded.header.backend.kind == "docker"
    assert str(recorded.header.backend.image_id).startswith("sha256:")
    assert (sample_repo / "calc/ops.py").read_text().startswith("def add")  # host untouched
