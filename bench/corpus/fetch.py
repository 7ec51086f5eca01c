"""Fetch a pinned source distribution from the package index into a git repository.

    uv run python -m bench.corpus.fetch toolz==1.0.0 [--into DIR]

Runs `pip download --no-binary :all: --no-deps NAME==VERSION` (the sdist, with the tests it
ships), unpacks it under DIR (default ~/.cache/reposim/corpus) and commits it to a fresh git
repository, so sessions on it record a commit. A second call reuses what is there.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.corpus.build_setup_corpus import unpack

DEFAULT_DIR = Path.home() / ".cache" / "reposim" / "corpus"
GIT = ["git", "-c", "user.name=RepoSim corpus", "-c", "user.email=corpus@reposim.invalid"]


class FetchError(Exception):
    """The sdist could not be fetched or unpacked; the message is one clear sentence."""


def _pip() -> list[str]:
    for name in ("pip", "pip3"):
        found = shutil.which(name)
        if found:
            return [found]
    raise FetchError("no pip on the PATH to download the source distribution with.")


def fetch(spec: str, into: Path = DEFAULT_DIR) -> Path:
    """The unpacked, committed sdist of `spec` (NAME==VERSION)."""
    name, sep, version = spec.partition("==")
    if not sep or not name or not version:
        raise FetchError(f"pin the project as NAME==VERSION, not {spec!r}.")
    target = into / f"{name}-{version}"
    if (target / ".git").is_dir():
        return target
    with tempfile.TemporaryDirectory(prefix="reposim-sdist-") as scratch:
        proc = subprocess.run(
            [*_pip(), "download", "--no-binary", ":all:", "--no-deps", "-d", scratch, spec],
            capture_output=True,
            text=True,
            check=False,
        )
        archives = [p for p in Path(scratch).iterdir() if p.suffix in (".gz", ".zip")]
        if proc.returncode != 0 or not archives:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
            raise FetchError(f"pip could not download {spec}: {' '.join(tail) or 'no archive'}")
        into.mkdir(parents=True, exist_ok=True)
        unpack(archives[0], target)
    subprocess.run(["git", "init", "-q", "-b", "main", str(target)], check=True)
    subprocess.run([*GIT, "-C", str(target), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(target), "commit", "-q", "-m", spec], check=True)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="NAME==VERSION")
    parser.add_argument("--into", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args()
    try:
        print(fetch(args.spec, args.into))
    except FetchError as exc:
        print(f"fetch: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
