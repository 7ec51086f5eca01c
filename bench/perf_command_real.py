"""Command cost on a real project (issue 28): `reposim perf compare --command` beside a by-hand
interleaved ABBA x 10 of the same command, from one run.

The project: pyflakes, three releases from PyPI's sdists (sha256 pinned below), one commit per
release in a fresh git repository (tags 3.0.1, 3.1.0, 3.2.0). The command lints a fixed copy of
standard-library packages (outside the trees, the same input for both sides) with the
checkout's own pyflakes (`python -m pyflakes`, run from the checkout's root, the default
--cwd); pyflakes exits 1 when it reports something, so the command accepts 0 and 1. A few
seconds of CPU per run: the "multi-second command" of the issue.

For each pair of consecutive releases (`--pairs`, two by default): a by-hand ABBA x 10 (40 runs,
a fresh process each, each release's checkout as its working directory; the paired t interval
of the rounds, as perf_accuracy.py's by-hand) and the CLI, `reposim perf compare PATH --a A --b
B --command CMD --json` with its default settings, back to back, which goes first alternating.
Printed per pair: each side's elapsed seconds and CPU seconds (the processes it ran and waited
for), the interval and its width, and the cost for the same width, cost x width^2 (the width
shrinks as 1/sqrt(runs)), ours over by hand. Target: <= 2x. The by-hand reference uses the timer
ours chose (CPU time on a busy machine).

Run: uv run python bench/perf_command_real.py [--pairs 2] [--packages asyncio email ...]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._perf_fixture import git
from bench.perf_accuracy import SameWidthCost, command_by_hand, cpu_used, row

RELEASES = {
    "3.0.1": "ec8b276a6b60bd80defed25add7e439881c19e64850afd9b346283d4165fd0fd",
    "3.1.0": "a0aae034c444db0071aa077972ba4768d40c830d9539fd45bf4cd3f8f6992efc",
    "3.2.0": "1c61603ff154621fb2a9172037d84dca3500def8c8b630657d1701f026f8af3f",
}
PACKAGES = ("asyncio", "email", "logging", "unittest")


def sdists(folder: Path) -> dict[str, Path]:
    """The pinned sdists, downloaded once into `folder` (pip, no build, no dependencies)."""
    folder.mkdir(parents=True, exist_ok=True)
    found = {}
    for version, digest in RELEASES.items():
        path = folder / f"pyflakes-{version}.tar.gz"
        if not path.exists():
            subprocess.run(
                [
                    *(sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:"),
                    *("--no-deps", "-d", str(folder), f"pyflakes=={version}"),
                ],
                check=True,
            )
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise SystemExit(f"{path} is not the pinned release (sha256 differs)")
        found[version] = path
    return found


def history(root: Path, archives: dict[str, Path]) -> Path:
    """A git repository with one commit per release, in release order, each tagged."""
    repo = root / "pyflakes"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    for version, archive in archives.items():
        for entry in repo.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        with tarfile.open(archive) as tar:
            tar.extractall(root / "unpacked", filter="data")
        unpacked = root / "unpacked" / f"pyflakes-{version}"
        for entry in unpacked.iterdir():
            shutil.move(str(entry), repo / entry.name)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"pyflakes {version}")
        git(repo, "tag", version)
    return repo


def lint_input(root: Path, packages: list[str]) -> Path:
    """A copy of standard-library packages: the fixed input both sides lint."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dest = root / "input"
    for name in packages:
        shutil.copytree(stdlib / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def checkout(repo: Path, tag: str, dest: Path) -> Path:
    if not dest.exists():
        subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True)
        git(dest, "-c", "advice.detachedHead=false", "checkout", "-q", tag)
    return dest


def ours(
    repo: Path, a: str, b: str, command: str, out: Path
) -> tuple[dict[str, Any], float, float]:
    """`reposim perf compare --command` as a user runs it: its result, elapsed and CPU seconds."""
    reposim = shutil.which("reposim") or str(Path(sys.executable).parent / "reposim")
    t0, c0 = time.monotonic(), cpu_used()
    proc = subprocess.run(
        [
            *(reposim, "perf", "compare", str(repo), "--a", a, "--b", b),
            *("--command", command, "--out", str(out), "--json"),
        ],
        capture_output=True,
        text=True,
    )
    cost, cpu_cost = time.monotonic() - t0, cpu_used() - c0
    if proc.returncode != 0:
        raise SystemExit(f"reposim perf compare failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), cost, cpu_cost


class Verdict:
    """The result's verdict with the attributes `row` reads."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.speedup = data["speedup"]
        self.ci_low, self.ci_high = data["ci_low"], data["ci_high"]
        self.significant = data["significant"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=2, help="pairs of consecutive releases")
    parser.add_argument("--packages", nargs="+", default=list(PACKAGES))
    parser.add_argument("--sdists", type=Path, default=Path(tempfile.gettempdir()) / "pyflakes")
    args = parser.parse_args()
    print(f"start: {time.strftime('%H:%M:%S')}, uptime: {os.popen('uptime').read().strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = history(root, sdists(args.sdists))
        source = lint_input(root, args.packages)
        files = sum(1 for _ in source.rglob("*.py"))
        command = f"{sys.executable} -m pyflakes {source} > /dev/null; [ $? -le 1 ]"
        print(f"command: pyflakes over {files} files of {', '.join(args.packages)}")
        versions = list(RELEASES)
        same_width = SameWidthCost()
        for i, (a, b) in enumerate(itertools.pairwise(versions)):
            if i >= args.pairs:
                break
            trees = {
                "a": checkout(repo, a, root / f"tree-{a}"),
                "b": checkout(repo, b, root / f"tree-{b}"),
            }
            order = ("hand", "ours") if i % 2 == 0 else ("ours", "hand")
            rows: dict[str, dict[str, Any]] = {}
            timer = "cpu"
            for who in order:
                if who == "hand":
                    hand = command_by_hand(trees, command)
                    for name in ("wall", "cpu"):
                        rows[name] = row(
                            f"{a}->{b}", 0.0, hand[name], hand["cost"], f"by hand, {name}"
                        )
                        rows[name]["cpu_cost"] = hand["cpu_cost"]
                else:
                    result, cost, cpu_cost = ours(repo, a, b, command, root / f"ours-{a}-{b}")
                    timer = result["settings"]["timer"]
                    rows["ours"] = row(
                        f"{a}->{b}", 0.0, Verdict(result["verdict"]), cost, f"ours ({timer})"
                    )
                    rows["ours"]["cpu_cost"] = cpu_cost
                    rows["ours"]["values"] = result["a"]["values"] + result["b"]["values"]
                    rows["ours"]["protocol"] = result["environment"]["protocol"]
            ref, mine = rows[timer], rows["ours"]
            for shown in (rows["wall"], rows["cpu"], mine):
                print(
                    f"  {shown['how']:<16} speed-up {shown['speedup']:.3f}  CI "
                    f"{shown['ci'][0]:.3f}-{shown['ci'][1]:.3f} (width {shown['width']:.3f})  "
                    f"{'significant' if shown['significant'] else 'not significant':<15}  cost "
                    f"{shown['cost']:.0f} s elapsed, {shown['cpu_cost']:.0f} s CPU  load "
                    f"{shown['load']:.1f}"
                )
            print(f"  ours: {mine['values']} command runs; {mine['protocol']}")
            normalized, by_cpu = same_width.add(mine, ref)
            print(
                f"pair {a} -> {b}: cost for the same width, ours / by hand ({ref['how']}): "
                f"{normalized:.2f}x elapsed, {by_cpu:.2f}x CPU (target <= 2)",
                flush=True,
            )
        if same_width.ratios:
            print("\n" + same_width.summary("pyflakes command"), flush=True)
    print(f"end: {time.strftime('%H:%M:%S')}, uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
