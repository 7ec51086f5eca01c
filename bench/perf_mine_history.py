"""A real, pinned history for `reposim perf mine` (issue 28), built from consecutive sdist releases.

No git host is reachable from this machine (only package registries), so a project's own history
cannot be cloned. This builds the next best real thing: one commit per release of a project,
in release order, each commit's tree the release's sdist as published and its message the
release's own changelog section (so what the maintainers said about speed — "X was optimized" —
is what mining reads). A commit is then a whole release's diff, not one change: mining compares
each candidate release with the previous one on the function it changed most.

    uv run python bench/perf_mine_history.py DEST            # builds DEST (a git repository)
    uv run reposim perf mine DEST --out OUT --max 6           # then mine it (timing: take the lock)
    flock /work/wt/timing.lock uv run python bench/perf_mine_history.py DEST --check OUT

`--check OUT` (DEST built) checks mining against a by-hand measurement from one run: each
release's changed function on the path its release changed (its changelog says which), A (the
previous release) against B, interleaved ABBA x `--rounds` (3), each a fresh process timing
the statement with timeit's autorange (>= 0.2 s) and the CPU-time clock; then
`perf mine DEST --max 5 --budget 20s` into OUT; then a table: release, function, by hand per
path, mined (its verdict), kept. The target: every release a by-hand check finds >= 1.3x
faster on its changed path is kept. ~2 min by hand at load 5 (~15 min at load 40) and ~15-30
min of mining at load 10-30.

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


# (release, function, setup, statement, the path its release changed), by hand
CASES = (
    ("10.5.0", "all_equal", "d = [1] * 5", "all_equal(d)", "short equal input"),
    ("10.5.0", "all_equal", "d = [1] * 1000 + [2]", "all_equal(d)", "1,000 equal items"),
    ("10.4.0", "sliding_window", "d = [0, 1, 2, 3, 4]", "list(sliding_window(d, 4))", "5 items"),
    ("10.4.0", "sliding_window", "d = range(10000)", "list(sliding_window(d, 4))", "10,000, n=4"),
    ("10.4.0", "sliding_window", "d = range(10000)", "list(sliding_window(d, 2))", "10,000, n=2"),
    ("10.3.0", "collapse", "d = [[1, [2, [3, [4]]]], 'ab'] * 200", "list(collapse(d))", "nested"),
    ("10.2.0", "first", "d = []", "first(d, None)", "empty, a default"),
    ("10.2.0", "first", "d = [1, 2]", "first(d)", "non-empty"),
    ("10.0.0", "partition", "d = range(2000); f = bool", "[*map(list, partition(f, d))]", "2,000"),
)
ONE = """
import sys, time, timeit
sys.path.insert(0, sys.argv[1])
setup = f"from more_itertools import {sys.argv[4]}; {sys.argv[2]}"
timer = timeit.Timer(sys.argv[3], setup, timer=time.thread_time)
loops, seconds = timer.autorange()  # its last measurement, >= 0.2 s, after shorter ones
print(seconds / loops)
"""


def _commits(dest: Path) -> dict[str, tuple[str, str]]:
    """{release: (previous release's commit, its commit)} from DEST's history."""
    log = subprocess.run(
        ["git", "-C", str(dest), "log", "--reverse", "--format=%H %s"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    found = [line.split(" ", 1) for line in log if line]
    versions = [(commit, subject.rsplit(" ", 1)[-1]) for commit, subject in found]
    return {v: (versions[i - 1][0], c) for i, (c, v) in enumerate(versions) if i}


def _tree(dest: Path, commit: str, into: Path) -> Path:
    tree = into / commit[:10]
    if not tree.exists():
        subprocess.run(["git", "clone", "-q", str(dest), str(tree)], check=True)
        subprocess.run(
            ["git", "-C", str(tree), "-c", "advice.detachedHead=false", "checkout", "-q", commit],
            check=True,
        )
    return tree


def _one(tree: Path, setup: str, statement: str, function: str) -> float:
    """CPU seconds per run of `statement` at `tree`, in a fresh process (timeit's best of 3)."""
    proc = subprocess.run(
        [sys.executable, "-c", ONE, str(tree), setup, statement, function],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(proc.stdout)


def by_hand(dest: Path, rounds: int, trees: Path) -> dict[str, list[str]]:
    """{release: ["path: A/B median (min-max)", ...]}, ABBA x rounds of fresh processes."""
    import statistics

    commits = _commits(dest)
    out: dict[str, list[str]] = {}
    for release, function, setup, statement, path in CASES:
        a, b = (_tree(dest, commit, trees) for commit in commits[release])

        ratios = []
        for _ in range(rounds):
            ta1, tb1, tb2, ta2 = (_one(t, setup, statement, function) for t in (a, b, b, a))
            ratios += [ta1 / tb1, ta2 / tb2]
        text = (
            f"{path}: {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} pairs)"
        )
        print(f"by hand {release} {function}: {text}", flush=True)
        out.setdefault(release, []).append(text)
    return out


def check(dest: Path, out: Path, rounds: int) -> None:
    """By hand, then mined, then the table side by side (see the module's note)."""
    from simulator.perf import MeasureSettings
    from simulator.perf.mine import mine

    def uptime() -> str:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    print(f"start {uptime()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        hand = by_hand(dest, rounds, Path(tmp))
    print(f"by hand done {uptime()}", flush=True)
    result = mine(dest, out, limit=5, settings=MeasureSettings(budget=20.0))
    print(f"mined {uptime()}", flush=True)
    releases = {c: v for v, (_a, c) in _commits(dest).items()}
    print("\n| release | function | by hand, changed path | mined | kept |\n|---|---|---|---|---|")
    for candidate, verdict in result.verdicts():
        release = releases.get(candidate.commit, candidate.commit[:10])
        function = candidate.api.rsplit(".", 1)[-1]
        kept = "yes" if verdict.startswith("kept") else "**no**"
        paths = "; ".join(hand.get(release, ["(no by-hand case)"]))
        print(f"| {release} | {function} | {paths} | {verdict} | {kept} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dest", type=Path)
    parser.add_argument("--sdists", type=Path, help="where the sdists are kept (downloaded once)")
    parser.add_argument("--check", type=Path, metavar="OUT", help="by hand vs mined (DEST built)")
    parser.add_argument("--rounds", type=int, default=3, help="by-hand ABBA rounds per path")
    args = parser.parse_args()
    if args.check:
        check(args.dest, args.check, args.rounds)
        return
    cache = args.sdists or Path(tempfile.gettempdir()) / "reposim-mine-sdists"
    cache.mkdir(parents=True, exist_ok=True)
    build(args.dest, cache)


if __name__ == "__main__":
    main()
