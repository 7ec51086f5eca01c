"""Rebuild the setup corpus: each pinned sdist downloaded, unpacked and committed to git.

    uv run python bench/corpus/build_setup_corpus.py [--dest DIR] [--jobs N]

Reads bench/corpus/setup_corpus.txt (NAME==VERSION per line), runs
`pip download --no-binary :all: --no-deps NAME==VERSION` for each (pip builds the metadata, so
this takes a few minutes), unpacks every archive into DEST/<name>-<version>/, checks that it
ships tests (a test_*.py or *_test.py file) and commits it, so a session starts from a clean
commit. Projects without tests are reported and left out. DEST defaults to
~/.cache/reposim/setup-corpus; downloads already there are reused.
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
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "setup_corpus.txt"
DEFAULT_DEST = Path.home() / ".cache" / "reposim" / "setup-corpus"


def pins(path: Path = LIST) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            out.append((name, version))
    return out


def repo_dir(dest: Path, name: str, version: str) -> Path:
    return dest / f"{name.lower().replace('_', '-')}-{version}"


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
    download = ["download", "-q", "--no-binary", ":all:", "--no-deps", "-d", str(downloads)]
    proc = subprocess.run(
        [*pip, *download, f"{name}=={version}"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        raise RuntimeError(f"pip download {name}=={version} failed: {' '.join(tail)}")
    for existing in downloads.iterdir():
        normal = existing.name.lower().replace("_", "-")
        if normal.startswith(f"{name.lower().replace('_', '-')}-{version}"):
            return existing
    raise RuntimeError(f"pip download {name}=={version} saved no archive")


def _unpack(archive: Path, target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
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
        if p.name.startswith("test_") or p.name.endswith("_test.py") or p.name == "tests.py"
    )


def _commit(root: Path) -> None:
    env = ["-c", "user.name=reposim-bench", "-c", "user.email=bench@reposim.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A", "-f"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "sdist"], check=True)


def build(dest: Path, jobs: int) -> list[Path]:
    downloads = dest / "_sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    ready: list[Path] = []

    def one(pin: tuple[str, str]) -> Path | None:
        name, version = pin
        target = repo_dir(dest, name, version)
        if (target / ".git").is_dir():
            return target
        archive = _download(name, version, downloads)
        _unpack(archive, target)
        tests = _has_tests(target)
        if not tests:
            shutil.rmtree(target)
            print(f"  {name}=={version}: the sdist ships no tests; left out", file=sys.stderr)
            return None
        _commit(target)
        print(f"  {name}=={version}: {tests} test files", file=sys.stderr)
        return target

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for pin, future in [(p, pool.submit(one, p)) for p in pins()]:
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
    args = parser.parse_args()
    built = build(args.dest, args.jobs)
    print(f"{len(built)} repositories in {args.dest}")
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main())
