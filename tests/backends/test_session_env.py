"""A local session's commands run in the user's environment, not RepoSim's own virtualenv."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from backends.local import LocalBackend
from backends.session_env import session_environment


def _venv(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return root


def test_reposims_own_venv_is_stripped(tmp_path: Path) -> None:
    own = str(Path(sys.prefix) / "bin")
    environ = {
        "PATH": os.pathsep.join([own, "/usr/local/bin", "/usr/bin"]),
        "VIRTUAL_ENV": sys.prefix,
        "UV_RUN_RECURSION_DEPTH": "1",
        "REPOSIM_CONFIG_DIR": "/x",
        "HOME": "/home/u",
    }
    env = session_environment(tmp_path, environ)
    assert env["PATH"].split(os.pathsep) == ["/usr/local/bin", "/usr/bin"]
    assert "VIRTUAL_ENV" not in env
    assert "UV_RUN_RECURSION_DEPTH" not in env
    assert "REPOSIM_CONFIG_DIR" not in env
    assert env["HOME"] == "/home/u"


@pytest.mark.parametrize("name", [".venv", "venv"])
def test_the_repositorys_own_venv_is_used(tmp_path: Path, name: str) -> None:
    venv = _venv(tmp_path / name)
    env = session_environment(tmp_path, {"PATH": "/usr/bin", "VIRTUAL_ENV": "/elsewhere"})
    assert env["VIRTUAL_ENV"] == str(venv)
    assert env["PATH"].split(os.pathsep) == [str(venv / "bin"), "/usr/bin"]


async def test_the_session_shell_sees_the_repositorys_python(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    venv = _venv(repo / ".venv")
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\necho repo-python\n")
    python.chmod(0o755)
    backend = LocalBackend(repo, scratch_root=tmp_path / "scratch")
    await backend.start()
    try:
        result = await backend.exec('python; printf "%s|%s" "$VIRTUAL_ENV" "$PATH"')
    finally:
        await backend.stop()
    out = result.output.decode()
    assert out.startswith("repo-python\n")
    venv_var, path = out.splitlines()[1].split("|", 1)
    assert venv_var == str(venv)
    assert str(Path(sys.prefix) / "bin") not in path.split(os.pathsep)
