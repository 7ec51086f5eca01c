"""The environment a local session's commands run in: the user's, never RepoSim's own.

Started the documented way (`uv run reposim open`), RepoSim runs inside its own virtualenv and
`uv run` exports that venv (its bin/ first on PATH, VIRTUAL_ENV, UV_RUN_RECURSION_DEPTH). A
session that inherited it would run the user's tests with RepoSim's Python and plugins, and
`pip install` in the terminal would install into RepoSim. So that venv is taken out again, and
the repository's own venv (`.venv/` or `venv/` with a pyvenv.cfg) is put in its place.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

REPO_VENV_NAMES = (".venv", "venv")
UV_RUN_VARS = ("UV_RUN_RECURSION_DEPTH", "VIRTUAL_ENV_PROMPT")
"""Set by `uv run` / venv activation for the process they start, not by the user."""


def repository_venv(root: Path) -> Path | None:
    """The repository's own virtualenv, if it has one."""
    for name in REPO_VENV_NAMES:
        candidate = root / name
        if (candidate / "pyvenv.cfg").is_file() and (candidate / "bin").is_dir():
            return candidate
    return None


def _own_venvs(environ: Mapping[str, str]) -> set[str]:
    """The bin/ folders of the virtualenv RepoSim itself runs in (if any)."""
    found: set[str] = set()
    if sys.prefix != sys.base_prefix:
        found.add(str((Path(sys.prefix) / "bin").resolve()))
    active = environ.get("VIRTUAL_ENV")
    if active:
        found.add(str((Path(active) / "bin").resolve()))
    return found


def session_environment(
    source: Path, environ: Mapping[str, str] | None = None, *, drop_prefix: str = "REPOSIM_"
) -> dict[str, str]:
    """`environ` (default os.environ) without RepoSim's own settings (variables starting with
    `drop_prefix`) and venv, with the repository's venv at `source` activated when there is one."""
    environ = os.environ if environ is None else environ
    own = _own_venvs(environ)
    env = {
        k: v
        for k, v in environ.items()
        if not k.startswith(drop_prefix) and k != "VIRTUAL_ENV" and k not in UV_RUN_VARS
    }
    path = [
        p for p in env.get("PATH", "").split(os.pathsep) if p and str(Path(p).resolve()) not in own
    ]
    venv = repository_venv(source)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        path.insert(0, str(venv / "bin"))
    env["PATH"] = os.pathsep.join(path) if path else os.defpath
    return env
