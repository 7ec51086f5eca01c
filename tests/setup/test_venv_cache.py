"""A local `reposim setup` leaves its ready venv for the next session of the same repository;
once the project's inputs change, that venv is not used and the session says why."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backends.session_env import session_venv
from simulator import venvcache
from simulator.events import Kind
from simulator.session import open_session
from simulator.test_command import choose
from tests.setup.repos import setuptools_pyproject, write_repo

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def fixture_repo(root: Path) -> Path:
    """A src-layout package whose tests need it installed (nothing else)."""
    return write_repo(
        root,
        {
            "pyproject.toml": setuptools_pyproject("fixturepkg"),
            "src/fixturepkg/__init__.py": "def answer():\n    return 42\n",
            "tests/test_answer.py": """
                from fixturepkg import answer


                def test_answer():
                    assert answer() == 42
            """,
        },
    )


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


async def _python_of_a_new_session(repo: Path) -> tuple[str, str, dict[str, object], list[str]]:
    session = await open_session(repo, trajectory_path=repo.parent / "next.jsonl")
    notes: list[str] = []
    try:
        result = await session.exec(
            "python -c 'import fixturepkg; print(fixturepkg.__file__)'; which python"
        )
        description = session.description.as_dict()
        workspace = session.workspace_path
    finally:
        await session.close()
    for line in (repo.parent / "next.jsonl").read_text().splitlines()[1:]:
        if f'"kind": "{Kind.NOTE}"' in line or f'"kind":"{Kind.NOTE}"' in line:
            notes.append(line)
    return result.output.decode(), workspace, description, notes


async def test_setup_leaves_a_venv_the_next_session_uses(
    tmp_path: Path, homes: dict[str, str]
) -> None:
    repo = fixture_repo(tmp_path / "fixture")
    setup = await asyncio.to_thread(
        subprocess.run,
        [
            *(sys.executable, "-m", "reposim", "setup", str(repo), "--backend", "local"),
            *("--min-tests", "1", "--trajectory-dir", str(tmp_path / "traj")),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **homes},
        timeout=900,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    venv_lines = [line for line in setup.stdout.splitlines() if line.startswith("venv: ")]
    assert len(venv_lines) == 1, setup.stdout
    venv = Path(venv_lines[0].split()[1])
    assert venv.is_relative_to(Path(homes["XDG_DATA_HOME"]) / "reposim" / "venvs")
    assert (venv / "bin" / "python").exists()
    # The recorded test command runs in that venv; F5 and `reposim test` pick it.
    assert choose(repo, None) == f"{venv}/bin/python -m pytest -p no:cacheprovider " + (
        "--continue-on-collection-errors -q"
    )

    output, workspace, description, notes = await _python_of_a_new_session(repo)
    imported, python = output.strip().splitlines()
    assert python == str(venv / "bin" / "python")
    # The package comes from this session's workspace (its edits count), not setup's.
    assert imported == f"{workspace}/src/fixturepkg/__init__.py"
    assert (description["venv"], description["venv_from"]) == (str(venv), "setup")
    assert not notes

    # The project's inputs change: the venv no longer fits, is not used, and the session says so.
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'dependencies = ["attrs"]\n')
    output, _, description, notes = await _python_of_a_new_session(repo)
    assert str(venv) not in output
    assert "venv" not in description
    assert "pyproject.toml changed" in str(description["venv_stale"])
    assert len(notes) == 1 and "run `reposim setup` again" in notes[0]
    assert choose(repo, None) is None  # nor its test command
    shown = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "reposim", "exec", str(repo), "--", "true"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **homes},
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "is out of date (pyproject.toml changed since)" in shown.stderr


def test_a_repositorys_own_venv_wins_and_setup_that_fails_keeps_nothing(
    tmp_path: Path, homes: dict[str, str]
) -> None:
    repo = fixture_repo(tmp_path / "fixture")
    made = venvcache.new_venv_dir(repo)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(made)], check=True)
    venvcache.record(repo, made, test_command="python -m pytest", import_roots=("src",))
    found = venvcache.lookup(repo)
    assert found is not None and found.stale is None and found.venv == made
    # A later setup's venv replaces it; a failed one is discarded and leaves the old one.
    newer = venvcache.new_venv_dir(repo)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(newer)], check=True)
    venvcache.discard(newer)
    assert not newer.exists() and made.exists()
    newest = venvcache.new_venv_dir(repo)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(newest)], check=True)
    venvcache.record(repo, newest, test_command=None, import_roots=())
    assert not made.exists()
    found = venvcache.lookup(repo)
    assert found is not None and found.venv == newest
    assert session_venv(repo, found.prepared()) == newest
    own = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(own)], check=True)
    assert session_venv(repo, found.prepared()) == own
