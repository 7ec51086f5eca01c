"""A real, pinned history for `reposim perf mine` (issue 28), built from consecutive sdist releases.

No git host is reachable from this machine (only package registries), so a project's own history
cannot be cloned. This builds the next best real thing: one commit per release of a project,
in release order, each commit's tree the release's sdist as published and its message the
release's own changelog section (so what the maintainers said about speed — "X was optimized" —
is what mining reads). A commit is then a whole release's diff, not one change: mining compares
each candidate release with the previous one on the function it changed most.

    uv run python bench/perf_mine_history.py DEST            # builds DEST (a git repository)
    uv run reposim perf mine DEST --out OUT --max 6           # then mine it (timing: take the lock)

Pinned: more-itertools 9.0.0 ... 10.5.0 (8 releases, 2022-2024; pure Python, its tests in the
sdist, a changelog in docs/versions.rst). Sdists come from PyPI with `pip download`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PROJECT = "more-itertools"
VERSIONS = ("9.0.0", "9.1.0", "10.0.0", "10.1.0", "10.2.0", "10.3.0", "10.4.0", "10.5.0")
CHANGELOG = "docs/versions.rst"


def download(version: str, into: Path) -> Path:
    found = list(into.glob(f"{PROJECT}-{version}.tar.gz"))
    if found:
        return found[0]
    # uv's venvs have no pip (and under `uv run` the `python3` on PATH is the venv's): pip
    # from uv's tool cache then (`uvx pip`, the package index's own pip)
    pip = [sys.executable, "-m", "pip"] if importlib.util.find_spec("pip") else ["uvx", "pip"]
    subprocess.run(
        [
            *pip,
            "download",
            "--no-binary",
            ":all:",
            "--no-deps",
            "-q",
            "-d",
            str(into),
            f"{PROJECT}=={version}",
        ],
        check=True,
    )
    return next(into.glob(f"{PROJECT}-{version}.tar.gz"))


def changelog_section(tree: Path, version: str) -> str:
    """The release's own section of its changelog (the lines under its `X.Y.Z` heading)."""
    text = (tree / CHANGELOG).read_text(encoding="utf-8")
    match = re.search(
        rf"^{re.escape(version)}\n-+\n(.*?)(?=^\d+\.\d+\.\d+\n-+\n|\Z)", text, re.M | re.S
    )
    return match.group(1).strip() if match else "(no changelog section)"


def build(dest: Path, cache: Path) -> list[tuple[str, str]]:
    if dest.exists():
        raise SystemExit(f"{dest} exists; give a new directory.")
    dest.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], check=True)
    made = []
    for version in VERSIONS:
        sdist = download(version, cache)
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
            (top,) = Path(tmp).iterdir()
            for entry in dest.iterdir():
                if entry.name != ".git":
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            for entry in top.iterdir():
                shutil.move(str(entry), dest / entry.name)
            when = int(max(member.mtime for member in tar.getmembers()))
        message = f"{PROJECT} {version}\n\n{changelog_section(dest, version)}\n"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "release",
            "GIT_AUTHOR_EMAIL": "release@reposim.invalid",
            "GIT_COMMITTER_NAME": "release",
            "GIT_COMMITTER_EMAIL": "release@reposim.invalid",
            "GIT_AUTHOR_DATE": f"@{when} +0000",
            "GIT_COMMITTER_DATE": f"@{when} +0000",
        }
        subprocess.run(["git", "-C", str(dest), "add", "-A"], check=True, env=env)
        subprocess.run(["git", "-C", str(dest), "commit", "-q", "-m", message], check=True, env=env)
        commit = subprocess.run(
            ["git", "-C", str(dest), "rev-parse", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        made.append((version, commit))
        print(f"{commit[:10]} {PROJECT} {version}", flush=True)
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dest", type=Path)
    parser.add_argument("--sdists", type=Path, help="where the sdists are kept (downloaded once)")
    args = parser.parse_args()
    cache = args.sdists or Path(tempfile.gettempdir()) / "reposim-mine-sdists"
    cache.mkdir(parents=True, exist_ok=True)
    build(args.dest, cache)


if __name__ == "__main__":
    main()
