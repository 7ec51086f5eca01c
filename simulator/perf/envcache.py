"""Per-revision trees and environments, made once and reused by every compare, mine and batch.

    $XDG_DATA_HOME/reposim/perf/<repo name>-<path hash>/
        trees/<commit>/                the revision's own tree (a private clone checked out there)
        envs/<commit[:12]>-<inputs>/   env.json + venv/: what `--setup` made at that revision

A revision is set up from its own tree: the setup ladder's detection reads the tree the session
is opened on, so each side's session opens on that side's tree (in place: the tree is ours, not
the user's checkout) and a 2022 revision gets its own `python_requires`, requirement files and
test tools, not HEAD's. An environment is keyed by (repository, commit, the hashes of the files
that decide what is installed, the interpreter asked for, the backend); a second compare, a
mine or a batch of the same revisions finds it and skips the setup. On the local backend the
key holds a venv (the project's editable install points into the cached tree, which stays);
on Docker it names the image the ready container was saved as.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator import venvcache
from simulator.paths import data_dir
from simulator.workflow import WorkflowFailure

SCHEMA = "reposim.perf-env/1"
MANIFEST = "env.json"


def cache_root() -> Path:
    return data_dir() / "perf"


def repo_dir(repo: Path) -> Path:
    repo = repo.resolve()
    digest = hashlib.sha256(str(repo).encode()).hexdigest()[:12]
    return cache_root() / f"{repo.name}-{digest}"


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise WorkflowFailure(f"git {args[0]} failed in {cwd}: {last}")
    return proc


def resolve(repo: Path, rev: str, label: str) -> str:
    """The commit `rev` names in the user's repository, or one clear sentence."""
    proc = _git(
        repo,
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        f"{rev}^{{commit}}",
        check=False,
    )
    commit = proc.stdout.strip()
    if proc.returncode != 0 or not commit:
        raise WorkflowFailure(f"Cannot check out {rev!r} for side {label}: no such revision.")
    return commit


def revision_tree(repo: Path, commit: str) -> Path:
    """The revision's own tree: a private clone of `repo` checked out at `commit`, made once.

    A plain local clone: git hard-links the objects on the same filesystem, and the tree stands
    on its own — a `--shared` clone's alternates point at the host's path, so a container given
    a copy of the tree found no commit ("reference is not a tree"). The user's checkout is never
    touched."""
    tree = repo_dir(repo) / "trees" / commit
    if (tree / ".git").exists() and _at(tree, commit):
        return tree
    tree.parent.mkdir(parents=True, exist_ok=True)
    tmp = tree.parent / f".{commit}.{secrets.token_hex(4)}"
    try:
        _git(tree.parent, "clone", "-q", "--no-checkout", str(repo.resolve()), str(tmp))
        _git(tmp, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)
        shutil.rmtree(tree, ignore_errors=True)
        tmp.replace(tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tree


def _at(tree: Path, commit: str) -> bool:
    proc = _git(tree, "rev-parse", "HEAD", check=False)
    return proc.returncode == 0 and proc.stdout.strip() == commit


@dataclass(frozen=True)
class EnvKey:
    repo: Path
    commit: str
    inputs: str  # sha256 over the dependency inputs of the revision's tree
    python: str  # the interpreter asked for ("" = the ladder's default)
    backend: str

    @classmethod
    def of(cls, repo: Path, commit: str, tree: Path, *, python: str, backend: str) -> EnvKey:
        hashes = venvcache.inputs(tree)
        digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
        return cls(repo.resolve(), commit, digest, python, backend)

    @property
    def directory(self) -> Path:
        extra = hashlib.sha256(f"{self.inputs}\0{self.python}\0{self.backend}".encode())
        return repo_dir(self.repo) / "envs" / f"{self.commit[:12]}-{extra.hexdigest()[:12]}"


@dataclass(frozen=True)
class CachedEnv:
    key: EnvKey
    python: str
    tier: str
    image: str | None  # Docker: the saved environment image
    made: float

    def detail(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "tier": self.tier,
            "image": self.image,
            "made": self.made,
            "cache": str(self.key.directory),
        }


def venv_dir(key: EnvKey) -> Path:
    """Where a local setup at this key makes its venv."""
    return key.directory / "venv"


def lookup(key: EnvKey) -> CachedEnv | None:
    """The environment made earlier for this key, if it is still there."""
    try:
        data = json.loads((key.directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    python = str(data.get("python") or "")
    image = data.get("image") or None
    if image is None and not (python and Path(python).exists()):
        return None
    return CachedEnv(key, python, str(data.get("tier")), image, float(data.get("made") or 0.0))


def record(key: EnvKey, *, python: str, tier: str, image: str | None = None) -> CachedEnv:
    key.directory.mkdir(parents=True, exist_ok=True)
    made = time.time()
    manifest = {
        "schema": SCHEMA,
        "repo": str(key.repo),
        "commit": key.commit,
        "inputs": key.inputs,
        "python_asked": key.python,
        "backend": key.backend,
        "python": python,
        "tier": tier,
        "image": image,
        "made": made,
    }
    tmp = key.directory / f".{MANIFEST}.{secrets.token_hex(4)}"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(key.directory / MANIFEST)
    return CachedEnv(key, python, tier, image, made)


def discard(key: EnvKey) -> None:
    with contextlib.suppress(OSError):
        (key.directory / MANIFEST).unlink()
    shutil.rmtree(venv_dir(key), ignore_errors=True)
