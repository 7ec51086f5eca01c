"""The environment a local session's commands run in: the user's, never RepoSim's own.

Started the documented way (`uv run reposim open`), RepoSim runs inside its own virtualenv and
`uv run` exports that venv (its bin/ first on PATH, VIRTUAL_ENV, UV_RUN_RECURSION_DEPTH). A
session that inherited it would run the user's tests with RepoSim's Python and plugins, and
`pip install` in the terminal would install into RepoSim. So that venv is taken out again, and
the repository's own venv (`.venv/` or `venv/` with a pyvenv.cfg) is put in its place, or,
when it has none, the venv `reposim setup` left for it (a `PreparedVenv` the engine finds in its
cache and hands over).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_VENV_NAMES = (".venv", "venv")
UV_RUN_VARS = ("UV_RUN_RECURSION_DEPTH", "VIRTUAL_ENV_PROMPT")
"""Set by `uv run` / venv activation for the process they start, not by the user."""


@dataclass(frozen=True)
class PreparedVenv:
    """A virtualenv made for the repository outside it (by the setup workflow)."""

    path: Path
    import_roots: tuple[str, ...] = ()
    """Workspace folders (relative, "." or "src") that hold the project's packages: put on
    PYTHONPATH, since the venv's editable install points at the workspace setup ran in."""
    stale: str | None = None
    """Why it must not be used (its inputs changed since it was made); None when it can be."""

    @property
    def usable(self) -> bool:
        return self.stale is None and (self.path / "bin").is_dir()


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


def session_venv(source: Path, prepared: PreparedVenv | None = None) -> Path | None:
    """The venv a session on `source` uses: the repository's own, else `prepared` if usable."""
    own = repository_venv(source)
    if own is not None:
        return own
    return prepared.path if prepared is not None and prepared.usable else None


def session_environment(
    source: Path,
    environ: Mapping[str, str] | None = None,
    *,
    drop_prefix: str = "REPOSIM_",
    prepared: PreparedVenv | None = None,
) -> dict[str, str]:
    """`environ` (default os.environ) without RepoSim's own settings (variables starting with
    `drop_prefix`) and venv, with the repository's venv at `source` activated when there is one,
    else the `prepared` one when it is usable."""
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
    venv = session_venv(source, prepared)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        path.insert(0, str(venv / "bin"))
    env["PATH"] = os.pathsep.join(path) if path else os.defpath
    return env


def with_import_roots(env: dict[str, str], workspace: Path, roots: tuple[str, ...]) -> None:
    """Put the workspace's package folders `roots` first on env's PYTHONPATH."""
    if not roots:
        return
    paths = [os.path.normpath(workspace / root) for root in roots]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
