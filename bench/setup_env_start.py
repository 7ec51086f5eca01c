"""A session on a saved environment (`reposim setup --save-env`): how fast it starts.

Reference: `docker run --rm IMAGE true` with the CLI, on the saved image itself, alternated with
ours in the same run. Ours: opening a session on the saved image (`--env NAME`: a container from
it, the checkout copied in) until its first command has answered. Issue 24's goal:
ours <= 1.2x docker run of the image.

    uv run python bench/setup_env_start.py [N] [--lock /work/wt/timing.lock]

It sets up a small fixture project with --save-env first (untimed, outside the lock), takes the
timing lock (flock) only for the timed runs, and removes the image at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _docker_common import IMAGE, load_note, median, pct

from simulator.backend_factory import BackendOptions, make_backend
from simulator.session import Session
from simulator.setup.envimage import prune_environments
from simulator.setup.runner import SetupRequest, setup_repository


def fixture_repo() -> Path:
    """A project that needs an install (PyYAML) and writes a module at install time."""
    root = Path(tempfile.mkdtemp(prefix="reposim-envstart-"))
    files = {
        "setup.py": """
            from pathlib import Path
            from setuptools import setup
            Path("settings/_built.py").write_text("BUILT = True\\n")
            setup(
                name="settings", version="0.1", packages=["settings"], install_requires=["PyYAML"]
            )
        """,
        "settings/__init__.py": "import yaml\nfrom settings._built import BUILT\n",
        "tests/test_settings.py": """
            import yaml
            from settings import BUILT

            def test_load():
                assert yaml.safe_load("a: 1") == {"a": 1} and BUILT
        """,
        ".gitignore": "settings/_built.py\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "bench"], check=True, env=env)
    return root


def docker_run(image: str) -> float:
    started = time.perf_counter()
    subprocess.run(["docker", "run", "--rm", image, "true"], check=True, capture_output=True)
    return time.perf_counter() - started


async def session_ready(repo: Path, image: str) -> tuple[float, bool]:
    """Seconds until the session's first command has answered, and whether the project imports
    in it (untimed)."""
    started = time.perf_counter()
    backend = make_backend("docker", repo, options=BackendOptions(image=image))
    session = await Session.open(repo, backend=backend)
    try:
        await session.exec("echo ready")
        ready = time.perf_counter() - started
        check = await session.exec("python -c 'import settings, yaml'")
        return ready, check.exit_code == 0
    finally:
        await session.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=10)
    parser.add_argument("--lock", type=Path, help="a file to flock around the timed runs")
    args = parser.parse_args()
    n = args.n
    repo = fixture_repo()
    name = f"bench-envstart-{os.getpid()}"
    request = SetupRequest(image=IMAGE, save_env=True, env_name=name)
    outcome = asyncio.run(setup_repository(repo, request))
    if outcome.image is None:
        print(f"setup did not reach ready: {outcome.result.verdict.line()}")
        return 1
    image = outcome.image
    lock = args.lock.open("a") if args.lock else None
    try:
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # other timing benchmarks wait, and we wait for them
        docker_run(image)  # warm the image's layers once, for both
        reference: list[float] = []
        ours: list[float] = []
        imports = 0
        for _ in range(n):
            reference.append(docker_run(image))
            ready, ok = asyncio.run(session_ready(repo, image))
            ours.append(ready)
            imports += ok
        note = load_note()
    finally:
        if lock is not None:
            lock.close()
        prune_environments(budget=0, name=name)

    def row(label: str, values: list[float]) -> str:
        return (
            f"{label:34} median {median(values):.3f} s  p95 {pct(values, 0.95):.3f} s  "
            f"min {min(values):.3f} s  max {max(values):.3f} s"
        )

    print(f"saved environment start, image {image} (from {IMAGE}), {n} runs alternated")
    print(row("docker run --rm IMAGE true", reference))
    print(row("session on the saved env (ours)", ours))
    print(
        f"ratio (median ours / median docker run): {median(ours) / median(reference):.2f}x "
        f"(goal <= 1.2x); the project imported in {imports}/{n} sessions"
    )
    print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
