"""The venv a successful local setup leaves for the next session of the same repository.

A local setup session builds its venv here rather than in its private folder (which dies with
it), and on success records it; `reposim open`, `exec`, `test`... on the same repository then
run in it when the repository has no venv of its own (backends/session_env.py):

    $XDG_DATA_HOME/reposim/venvs/<name>-<path hash>/
        env.json          what made it: the inputs' hashes, python, test command, import roots
        venv-<token>/     the venv (one per setup; a newer successful setup replaces it)

A repository is known by its absolute path. The venv is keyed to the files that decide what gets
installed (pyproject.toml, setup.py, setup.cfg, lockfiles, requirement files): once any of them
changes, the venv is stale and is not used, and the session says so (a system note) so the user
knows to run `reposim setup` again.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.session_env import PreparedVenv
from simulator.paths import venvs_dir

SCHEMA = "reposim.venv/1"
MANIFEST = "env.json"
INPUT_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "Pipfile",
    "Pipfile.lock",
)
"""Files at the repository's root whose contents decide what setup installs; with these, any
`*requirements*.txt|.in` at the root and every .txt/.in under requirements/."""


def _key_dir(source: Path) -> Path:
    source = source.resolve()
    digest = hashlib.sha256(str(source).encode()).hexdigest()[:12]
    return venvs_dir() / f"{source.name}-{digest}"


def inputs(source: Path) -> dict[str, str]:
    """sha256 of each file that decides what setup installs, by path relative to `source`."""
    found: list[Path] = [source / name for name in INPUT_FILES]
    for pattern in ("*requirements*.txt", "*requirements*.in"):
        found.extend(source.glob(pattern))
    folder = source / "requirements"
    if folder.is_dir():
        found.extend(p for p in folder.rglob("*") if p.suffix in (".txt", ".in"))
    hashes: dict[str, str] = {}
    for path in sorted(set(found)):
        if path.is_file():
            hashes[path.relative_to(source).as_posix()] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return hashes


@dataclass(frozen=True)
class CachedVenv:
    """A recorded venv: where it is, what made it and whether it still fits the repository."""

    source: Path
    venv: Path
    test_command: str | None
    import_roots: tuple[str, ...]
    made: float
    stale: str | None = None  # why it no longer fits, None when it does

    def prepared(self) -> PreparedVenv:
        return PreparedVenv(self.venv, self.import_roots, self.stale)


def new_venv_dir(source: Path) -> Path:
    """A fresh path (not yet created) for the venv a setup of `source` is about to make."""
    key = _key_dir(source)
    key.mkdir(parents=True, exist_ok=True)
    return key / f"venv-{secrets.token_hex(4)}"


def discard(venv: Path) -> None:
    """Remove a venv a setup made but that did not reach ready."""
    shutil.rmtree(venv, ignore_errors=True)


def record(
    source: Path, venv: Path, *, test_command: str | None, import_roots: tuple[str, ...]
) -> CachedVenv:
    """Make `venv` the one later sessions of `source` use; older venvs of `source` go."""
    source = source.resolve()
    key = _key_dir(source)
    manifest: dict[str, Any] = {
        "schema": SCHEMA,
        "source": str(source),
        "venv": str(venv),
        "test_command": test_command,
        "import_roots": list(import_roots),
        "inputs": inputs(source),
        "made": time.time(),
    }
    tmp = key / f".{MANIFEST}.{secrets.token_hex(4)}"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(key / MANIFEST)
    for old in key.glob("venv-*"):
        if old != venv:
            shutil.rmtree(old, ignore_errors=True)
    return CachedVenv(source, venv, test_command, import_roots, manifest["made"])


def lookup(source: Path) -> CachedVenv | None:
    """The venv setup left for `source`, if any, with `stale` set when it no longer fits."""
    source = source.resolve()
    try:
        data = json.loads((_key_dir(source) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    venv = Path(str(data.get("venv")))
    stale = _changed(data.get("inputs"), inputs(source))
    if stale is None and not (venv / "bin" / "python").exists():
        stale = f"{venv} is gone"
    return CachedVenv(
        source,
        venv,
        data.get("test_command"),
        tuple(str(r) for r in data.get("import_roots") or ()),
        float(data.get("made") or 0.0),
        stale,
    )


def _changed(recorded: object, now: dict[str, str]) -> str | None:
    """Why `now` differs from the recorded input hashes (None when it does not)."""
    before = recorded if isinstance(recorded, dict) else {}
    changed = sorted(name for name in set(before) | set(now) if before.get(name) != now.get(name))
    if not changed:
        return None
    listed = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (
        f"the venv `reposim setup` made for this repository is out of date ({listed} changed "
        "since); it is not used — run `reposim setup` again"
    )
