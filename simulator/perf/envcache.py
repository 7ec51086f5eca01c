"""Per-revision trees and environments, made once and reused by every compare, mine and batch.

    $XDG_DATA_HOME/reposim/perf/<repo name>-<path hash>/
        trees/<commit>/                the revision's own tree (a private clone checked out there)
        trees/<commit>.lock            held (flock) by the one comparison side using that tree
        trees/.<commit>.private-<id>/  a side's own clone while the cached tree is held by another
        envs/<commit[:12]>-<inputs>/   env.json + venv/: what `--setup` made at that revision
    $XDG_DATA_HOME/reposim/perf/tools-<version>/   the in-environment programs and pyperf

`reposim perf gc` (`collect_garbage`) removes what is not held and was not used for a while.

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
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

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
        _clone_at(repo, commit, tmp)
        shutil.rmtree(tree, ignore_errors=True)
        tmp.replace(tree)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tree


class TreeLease:
    """A revision's tree held by one side of one comparison until `release()`.

    Sessions on the local backend work in place on the tree, so one tree serves one side at a
    time: two sessions in place on one tree (a second compare of the same commit at once, or
    side B of an A-vs-A compare) ran `git checkout --force` into each other's index.lock and
    set up, built and removed files under each other. The holder keeps an exclusive flock on
    `<tree>.lock`; a side that finds it held gets its own clone, removed at release."""

    def __init__(self, path: Path, lock: IO[str], *, private: bool) -> None:
        self.path = path
        self.private = private  # a clone of this side's own (the cached tree was held)
        self._lock: IO[str] | None = lock

    @property
    def private_venv(self) -> Path | None:
        """Where a setup on a private clone makes its venv: beside the clone, gone with it (the
        cache keeps only environments whose editable install points into a cached tree)."""
        return self.path.with_name(self.path.name + ".venv") if self.private else None

    def release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        try:
            if self.private:
                shutil.rmtree(self.path, ignore_errors=True)
                if self.private_venv is not None:
                    shutil.rmtree(self.private_venv, ignore_errors=True)
                Path(lock.name).unlink(missing_ok=True)
        finally:
            lock.close()  # closing the file drops the flock


def _try_lock(path: Path) -> IO[str] | None:
    """`path` opened and exclusively flocked, or None when another process (or another open
    file of this one) holds it."""
    handle = path.open("a")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def lease_tree(repo: Path, commit: str) -> TreeLease:
    """The revision's tree for one comparison side, held until the lease is released: the
    cached tree (made once, see `revision_tree`) when no one holds it, else a private clone."""
    trees = repo_dir(repo) / "trees"
    trees.mkdir(parents=True, exist_ok=True)
    lock = _try_lock(trees / f"{commit}.lock")
    if lock is not None:
        try:
            os.utime(lock.name)  # last use, for gc
            return TreeLease(revision_tree(repo, commit), lock, private=False)
        except BaseException:
            lock.close()
            raise
    path = trees / f".{commit}.private-{secrets.token_hex(4)}"
    lock = _try_lock(path.with_name(path.name + ".lock"))
    assert lock is not None  # a fresh random name: no one else has it
    try:
        _clone_at(repo, commit, path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        lock.close()
        raise
    return TreeLease(path, lock, private=True)


def _clone_at(repo: Path, commit: str, dest: Path) -> None:
    _git(dest.parent, "clone", "-q", "--no-checkout", str(repo.resolve()), str(dest))
    _git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit)


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
    with contextlib.suppress(OSError):
        os.utime(key.directory / MANIFEST)  # last use, for gc
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


STALE_CLONE = 3600.0  # seconds after which a half-made clone (no lock, a crash) is garbage


@dataclass
class GcReport:
    """What `collect_garbage` removed (or would remove, on a dry run) and what it kept."""

    removed: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)  # held by a running comparison: kept
    images: list[str] = field(default_factory=list)  # saved environment images now unreferenced
    freed: int = 0  # bytes

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _size(path: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(folder) / name).lstat().st_size
    return total


def collect_garbage(
    older_than: float, *, keep_tools: Path | None = None, dry_run: bool = False
) -> GcReport:
    """Remove from the perf cache what no comparison holds and none used for `older_than`
    seconds: revision trees (their last lease), environments (their last lookup; a local one
    also when its tree is gone, since its editable install points into that tree), private
    clones whose holder is gone, half-made clones, tools of other versions than `keep_tools`.
    A tree held by a running comparison, and the environments of its commit, are kept."""
    report = GcReport()
    now = time.time()
    root = cache_root()
    if not root.is_dir():
        return report

    def remove(path: Path) -> None:
        report.removed.append(str(path))
        report.freed += _size(path) if path.is_dir() else 0
        if not dry_run:
            shutil.rmtree(path, ignore_errors=True)

    def old(path: Path, limit: float = older_than) -> bool:
        try:
            return now - path.stat().st_mtime > limit
        except OSError:
            return True

    for entry in sorted(root.iterdir()):
        if entry.name.startswith("tools-"):
            if entry.is_dir() and entry != keep_tools and old(entry):
                remove(entry)
        elif entry.is_dir():
            _collect_repo(entry, older_than, old, remove, report, dry_run)
    return report


def _collect_repo(
    folder: Path,
    older_than: float,
    old: Any,
    remove: Any,
    report: GcReport,
    dry_run: bool,
) -> None:
    trees = folder / "trees"
    held: set[str] = set()  # commits whose tree a comparison holds now
    gone: set[str] = set()  # commits whose cached tree is (or will be) gone
    if trees.is_dir():
        for tree in sorted(p for p in trees.iterdir() if p.is_dir()):
            lock_file = tree.with_name(tree.name + ".lock")
            private = ".private-" in tree.name
            if tree.name.startswith(".") and not private:
                if old(tree, STALE_CLONE):  # a clone interrupted before it was renamed
                    remove(tree)
                continue
            used = lock_file if lock_file.exists() else tree  # trees made before locks: the dir
            lock = _try_lock(lock_file)
            if lock is None:
                report.in_use.append(str(tree))
                held.add(tree.name.split(".")[1] if private else tree.name)
                continue
            try:
                if private or old(used):
                    remove(tree)
                    if not private:
                        gone.add(tree.name)
                    if not dry_run:
                        lock_file.unlink(missing_ok=True)
            finally:
                lock.close()
    envs = folder / "envs"
    if not envs.is_dir():
        return
    for env in sorted(p for p in envs.iterdir() if p.is_dir()):
        manifest = env / MANIFEST
        try:
            data = json.loads(manifest.read_text())
        except (OSError, ValueError):
            data = {}
        commit = str(data.get("commit") or "")
        if commit in held:
            report.in_use.append(str(env))
            continue
        tree_missing = not (trees / commit).is_dir() or commit in gone
        local_broken = not data.get("image") and tree_missing
        if local_broken or old(manifest):
            if data.get("image"):
                report.images.append(str(data["image"]))
            remove(env)
