"""Rebuild the harness corpus: each pinned sdist downloaded, committed, and set up locally.

    uv run python bench/harness_corpus_build.py [--dest DIR] [--results FILE] [--only NAME ...]

Reads bench/harness_corpus.txt (NAME==VERSION per line, optionally followed by a comment
`# sha256:HEX`: the sdist must have that digest, else the project is left out); each sdist is
fetched with `pip download --no-binary :all: --no-deps`, unpacked into DEST/<name>-<version>/
and committed (bench/corpus/build_setup_corpus.py's steps: a project whose sdist ships no
tests is left out), then `reposim setup DIR --backend local` builds its venv (kept under
~/.local/share/reposim/venvs/, where later local sessions of the repository find it). A project
whose setup already has a ready verdict in --results is not set up again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus.build_setup_corpus import _commit, _download, _has_tests, pins, repo_dir, unpack

HERE = Path(__file__).resolve().parent
LIST = HERE / "harness_corpus.txt"
DEFAULT_DEST = Path.home() / ".cache" / "reposim" / "harness-corpus"
DEFAULT_RESULTS = HERE / "out" / "harness-corpus-setup.jsonl"
READY = ("ready", "ready+")


def venv_python(project: str) -> Path:
    """The Python of the venv `reposim setup` built for `project` (its newest)."""
    base = Path.home() / ".local/share/reposim/venvs"
    found = sorted(base.glob(f"{project}-*/venv-*/bin/python"))
    if not found:
        raise SystemExit(f"no venv for {project}: run bench/harness_corpus_build.py first.")
    return found[-1]


def digests(path: Path = LIST) -> dict[str, str]:
    """NAME -> the sha256 a pin's comment gives its sdist (`name==1.0  # sha256:HEX`)."""
    found = {}
    for raw in path.read_text().splitlines():
        line, _, comment = raw.partition("#")
        digest = re.search(r"\bsha256:([0-9a-f]{64})\b", comment)
        if line.strip() and digest:
            found[line.strip().partition("==")[0]] = digest.group(1)
    return found


def fetch(name: str, version: str, downloads: Path, digest: str | None) -> Path:
    """The pinned sdist, downloaded (or found in `downloads`); ValueError when its sha256 is
    not the one pinned."""
    sdist = _download(name, version, downloads)
    if digest is not None:
        got = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if got != digest:
            raise ValueError(f"{sdist.name} has sha256 {got}, the list pins {digest}")
    return sdist


def fetch_all(dest: Path, only: list[str] | None = None) -> list[Path]:
    downloads = dest / "_sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    repos = []
    pinned = digests()
    for name, version in pins(LIST):
        if only and name not in only:
            continue
        target = repo_dir(dest, name, version)
        if not (target / ".git").is_dir():
            try:
                unpack(fetch(name, version, downloads, pinned.get(name)), target)
            except Exception as exc:  # one bad pin never stops the rest
                print(f"  {name}=={version}: {exc}", file=sys.stderr)
                continue
            if not _has_tests(target):
                print(f"  {name}=={version}: the sdist ships no tests; left out", file=sys.stderr)
                continue
            _commit(target)
        repos.append(target)
    return repos


def verdicts(results: Path) -> dict[str, str]:
    """The latest setup tier per repository path recorded in `results`."""
    found: dict[str, str] = {}
    if results.exists():
        for line in results.read_text().splitlines():
            record = json.loads(line)
            verdict = (record.get("result") or {}).get("verdict") or {}
            source = str((record.get("payload") or {}).get("source") or record.get("key") or "")
            found[source] = str(verdict.get("tier") or record.get("status"))
    return found


def setup_all(repos: list[Path], results: Path) -> None:
    reposim = Path(sys.executable).parent / "reposim"
    for repo in repos:
        if verdicts(results).get(str(repo)) in READY:
            continue
        proc = subprocess.run(
            [str(reposim), "setup", str(repo), "--backend", "local"],
            capture_output=True,
            text=True,
            check=False,
        )
        # `reposim setup` ends with `NAME: TIER (passed/total) ...`
        tier = next(
            (
                line.split()[1]
                for line in proc.stdout.splitlines()
                if line.startswith(f"{repo.name}: ") and len(line.split()) > 1
            ),
            "exit " + str(proc.returncode),
        )
        results.parent.mkdir(parents=True, exist_ok=True)
        with results.open("a", encoding="utf-8") as handle:
            record = {"key": str(repo), "status": "done", "result": {"verdict": {"tier": tier}}}
            handle.write(json.dumps({**record, "payload": {"source": str(repo)}}) + "\n")
        tail = proc.stdout.strip().splitlines()[-3:]
        print(f"  {repo.name}: {tier} ({' / '.join(tail)})", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-setup", action="store_true")
    parser.add_argument("--only", nargs="*", default=None, help="these projects of the list")
    args = parser.parse_args()
    repos = fetch_all(args.dest, args.only)
    if not args.no_setup:
        setup_all(repos, args.results)
    found = verdicts(args.results)
    for repo in repos:
        print(f"{repo}\t{found.get(str(repo), '-')}")
    return 0 if repos else 1


if __name__ == "__main__":
    sys.exit(main())
