"""Rebuild the setup corpus: each pinned sdist downloaded, unpacked and committed to git.

    uv run python bench/corpus/build_setup_corpus.py [--list FILE] [--dest DIR] [--jobs N]

Reads bench/corpus/setup_corpus.txt (NAME==VERSION per line, an optional `# category` after
it; --list setup_corpus_hard.txt for the hard corpus), runs
`pip download --no-binary :all: --no-deps NAME==VERSION` for each (pip builds the metadata, so
this takes a few minutes; an sdist whose metadata today's build tools cannot make is fetched
again with the build tools of its era), unpacks every archive into DEST/<name>-<version>/,
checks that it ships tests (a test_*.py or *_test.py file) and commits it, so a session starts
from a clean commit. Projects without tests are reported and left out. DEST defaults to
~/.cache/reposim/setup-corpus; downloads already there are reused.

`debian:NAME` pins a C project: the source package NAME of Debian bookworm, fetched with
`apt-get source` through a private source list under DEST/_apt (the machine's apt
configuration is left alone), unpacked with its Debian patches applied and committed the same way.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "setup_corpus.txt"
DEFAULT_DEST = Path.home() / ".cache" / "reposim" / "setup-corpus"


def pins(path: Path = LIST) -> list[tuple[str, str]]:
    return [(name, version) for name, version, _ in categorised_pins(path)]


def categorised_pins(path: Path = LIST) -> list[tuple[str, str, str]]:
    """(name, version, category) per line; the category is the comment after the pin."""
    out = []
    for raw in path.read_text().splitlines():
        line, _, comment = raw.partition("#")
        line = line.strip()
        if line:
            name, _, version = line.partition("==")
            out.append((name, version, comment.strip() or "-"))
    return out


def repo_dir(dest: Path, name: str, version: str) -> Path:
    if name.startswith("debian:"):
        return dest / f"{name.split(':', 1)[1]}-debian"
    return dest / f"{name.lower().replace('_', '-')}-{version}"


# Build tools as of the corpus's releases (2018-2022): setuptools 58 dropped use_2to3, and
# Cython 3 (2023) no longer builds PyYAML 5's extension. Only for downloading (pip builds
# the metadata); setup itself meets each project with nothing pinned.
ERA_BUILD_TOOLS = ("setuptools<58", "cython<3")

DEBIAN_SOURCES = "deb-src http://deb.debian.org/debian bookworm main\n"


def _apt_options(dest: Path) -> list[str]:
    base = dest / "_apt"
    for sub in ("lists/partial", "cache/archives/partial"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    sources = base / "sources.list"
    if not sources.is_file():
        sources.write_text(DEBIAN_SOURCES)
    return [
        "-o",
        f"Dir::Etc::SourceList={sources}",
        "-o",
        "Dir::Etc::SourceParts=/dev/null",
        "-o",
        f"Dir::State::Lists={base / 'lists'}",
        "-o",
        f"Dir::Cache={base / 'cache'}",
    ]


def _debian_source(package: str, dest: Path, target: Path) -> None:
    """`apt-get source PACKAGE` (private source list), unpacked into `target`."""
    options = _apt_options(dest)
    if not any((dest / "_apt" / "lists").glob("*Sources*")):
        subprocess.run(["apt-get", *options, "update", "-qq"], check=True, capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            ["apt-get", *options, "source", "-qq", package],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
        folders = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if proc.returncode != 0 or len(folders) != 1:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
            raise RuntimeError(f"apt-get source {package} failed: {' '.join(tail)}")
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(folders[0]), target)


def _download(name: str, version: str, downloads: Path) -> Path:
    stem = re.compile(rf"^{re.escape(name)}-{re.escape(version)}\.(tar\.gz|zip)$", re.I)
    for existing in downloads.iterdir():
        if stem.match(existing.name.replace("_", "-")) or stem.match(existing.name):
            return existing
    pip, env = [sys.executable, "-m", "pip"], dict(os.environ)
    if subprocess.run([*pip, "--version"], capture_output=True, check=False).returncode != 0:
        # A uv venv has no pip: use the one outside it.
        venv_bin = str(Path(sys.prefix) / "bin")
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
        env.pop("VIRTUAL_ENV", None)
        pip = [shutil.which("pip3", path=env["PATH"]) or "pip3"]
    download = ["download", "-q", "--no-binary", name, "--no-deps", "-d", str(downloads)]
    proc = subprocess.run(
        [*pip, *download, f"{name}=={version}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        # pip builds the sdist's metadata with today's build tools, which an old setup.py may
        # not survive (deap 1.3.1's use_2to3, html5lib 1.1's pkg_resources, PyYAML 5.4.1 and
        # Cython 3): once more with the build tools of the releases' era.
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as constraints:
            constraints.write("".join(f"{c}\n" for c in ERA_BUILD_TOOLS))
            constraints.flush()
            proc = subprocess.run(
                [*pip, *download, f"{name}=={version}"],
                capture_output=True,
                text=True,
                check=False,
                env={**env, "PIP_CONSTRAINT": constraints.name},
            )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        raise RuntimeError(f"pip download {name}=={version} failed: {' '.join(tail)}")
    for existing in downloads.iterdir():
        normal = existing.name.lower().replace("_", "-")
        if normal.startswith(f"{name.lower().replace('_', '-')}-{version}"):
            return existing
    raise RuntimeError(f"pip download {name}=={version} saved no archive")


def unpack(archive: Path, target: Path) -> None:
    """The sdist `archive` unpacked as `target` (replaced if there), its top folder dropped."""
    with tempfile.TemporaryDirectory() as tmp:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
                # extractall leaves a zip's files dated now (tar keeps its times); the commit's
                # date is the newest file time, so each file gets the time the zip records.
                for info in zf.infolist():
                    stamp = time.mktime((*info.date_time, 0, 0, -1))
                    os.utime(Path(tmp) / info.filename, (stamp, stamp))
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(tmp, filter="data")
        (top,) = list(Path(tmp).iterdir())
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(top), target)


def _has_tests(root: Path) -> int:
    return sum(
        1
        for p in root.rglob("*.py")
        if p.name.startswith("test_")
        or p.name.endswith(("_test.py", "_tests.py"))
        or p.name in ("tests.py", "test.py")
        or p.parent.name in ("test", "tests")
    )


def _commit(root: Path) -> None:
    """One commit dated like the release: the newest file time in the archive (so setup's
    time-travel resolution sees the date a checkout of that release would have)."""
    env = ["-c", "user.name=reposim-bench", "-c", "user.email=bench@reposim.invalid"]
    newest = max((p.stat().st_mtime for p in root.rglob("*") if p.is_file()), default=0)
    dated = dict(os.environ)
    if newest > 0:
        stamp = f"@{int(newest)} +0000"
        dated.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A", "-f"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "sdist"], check=True, env=dated)


def build(dest: Path, jobs: int, listing: Path = LIST) -> list[Path]:
    downloads = dest / "_sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    ready: list[Path] = []

    def one(pin: tuple[str, str]) -> Path | None:
        name, version = pin
        target = repo_dir(dest, name, version)
        if (target / ".git").is_dir():
            return target
        if name.startswith("debian:"):
            _debian_source(name.split(":", 1)[1], dest, target)
            _commit(target)
            print(f"  {name}: Debian source package", file=sys.stderr)
            return target
        archive = _download(name, version, downloads)
        unpack(archive, target)
        tests = _has_tests(target)
        if not tests:
            shutil.rmtree(target)
            print(f"  {name}=={version}: the sdist ships no tests; left out", file=sys.stderr)
            return None
        _commit(target)
        print(f"  {name}=={version}: {tests} test files", file=sys.stderr)
        return target

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for pin, future in [(p, pool.submit(one, p)) for p in pins(listing)]:
            try:
                path = future.result()
            except Exception as exc:  # one bad pin never stops the rest
                print(f"  {pin[0]}=={pin[1]}: {exc}", file=sys.stderr)
                continue
            if path is not None:
                ready.append(path)
    return ready


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--list", type=Path, default=LIST, help="the pins (default: %(default)s)")
    args = parser.parse_args()
    listing = args.list if args.list.is_file() else HERE / args.list
    built = build(args.dest, args.jobs, listing)
    print(f"{len(built)} repositories in {args.dest}")
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main())
