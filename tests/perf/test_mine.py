"""`perf mine` on a real history: one real speed-up, one commit that only claims one."""

from __future__ import annotations

import json
from pathlib import Path

from simulator.batch import BatchProgress
from simulator.perf import MeasureSettings
from simulator.perf.mine import candidates, mine
from tests.conftest import RepoFactory, git
from tests.perf.conftest import DESCRIBE_A, DESCRIBE_B, write


def test_candidates_come_from_keywords_and_hot_code(
    mining_repo: tuple[Path, dict[str, str]],
) -> None:
    repo, commits = mining_repo
    found = candidates(repo)
    # the README commit says "speed up" but changes no code; the root has no parent
    assert [c.commit for c in found] == [commits["noise"], commits["real"]]
    noise, real = found
    assert noise.api == "fastlib.core.describe" and noise.reasons == ["message says 'faster'"]
    assert real.api == "fastlib.core.checksum" and real.parent == commits["initial"]
    assert real.reasons == ["changes hot code: fastlib.core.checksum"]
    assert [c.commit for c in candidates(repo, limit=1)] == [commits["noise"]]


RELEASE_A = """def total(data):
    result = 0
    for x in data:
        result = result + x
    return result


def first(items):
    for item in items:
        return item


def describe(data):
    return str(len(data))
"""
# A release's diff: `total` made faster (3 lines), `describe` rewritten (more lines), and a new
# function (the most lines of all); its changelog names `total` as optimized, `describe` as changed.
RELEASE_B = """def total(data):
    return sum(data)


def first(items):
    for item in items:
        return item


def describe(data):
    count = len(data)
    if count == 0:
        return "nothing"
    if count == 1:
        return "one item"
    return f"{count} items"


def chunks(data, size):
    out = []
    for start in range(0, len(data), size):
        out.append(data[start : start + size])
    if out and len(out[-1]) < size:
        out[-1] = out[-1] + [None] * (size - len(out[-1]))
    return out
"""
CHANGELOG = """numlib 2.0

* New functions
    * :func:`chunks`
* Changes to existing functions
    * :func:`total` was optimized
    * :func:`describe` now says "nothing" for no data
    * the first example in the docs was fixed
"""


def test_the_function_a_release_says_it_made_faster_is_the_one_timed(
    make_repo: RepoFactory,
) -> None:
    repo = make_repo({"numlib/__init__.py": "", "numlib/core.py": RELEASE_A}, name="released")
    parent = git(repo, "rev-parse", "HEAD").strip()
    commit = write(repo, {"numlib/core.py": RELEASE_B}, CHANGELOG)
    (found,) = candidates(repo)
    assert (found.commit, found.parent) == (commit, parent)
    # named as made faster, then named, then the rest; `chunks` is new (nothing to time at the
    # parent) and "first" in plain English does not name `first`
    assert [name for name, _ in found.apis] == ["numlib.core.total", "numlib.core.describe"]
    assert found.api == "numlib.core.total"


def test_mining_keeps_the_real_speedup_only_and_resumes(
    mining_repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, commits = mining_repo
    out = tmp_path / "mined"
    result = mine(repo, out, settings=MeasureSettings.quick(timer="cpu"), threshold=1.3)
    verdicts = dict((c.commit, text) for c, text in result.verdicts())
    assert verdicts[commits["real"]].startswith("kept"), verdicts
    assert verdicts[commits["noise"]].startswith("dropped"), verdicts
    assert len(result.kept) == 1
    row = result.kept[0]
    assert (row.commit_a, row.commit_b) == (commits["initial"][:8], commits["real"][:8])
    assert row.target == "fastlib.core.checksum" and row.speedup > 1.3

    table = (out / "table.md").read_text().splitlines()
    assert table[0] == (
        "| Repo | Target API | Commit A | Commit B | Time A (s) | Time B (s) | Speedup "
        "| Opt % (std) |"
    )
    assert len(table) == 3 and commits["real"][:8] in table[2]
    assert json.loads((out / "table.json").read_text())[0]["commit_b"] == commits["real"][:8]
    problems = [json.loads(line) for line in (out / "problems.jsonl").read_text().splitlines()]
    assert len(problems) == 1
    assert problems[0]["base_commit"] == commits["initial"]
    assert problems[0]["reference_commit"] == commits["real"]
    assert "def bench():" in problems[0]["harness"]

    # a rerun finds both comparisons in the results store and measures nothing again
    progress: list[BatchProgress] = []
    again = mine(
        repo,
        out,
        settings=MeasureSettings.quick(timer="cpu"),
        threshold=1.3,
        on_progress=progress.append,
    )
    assert progress[0].skipped == 2 and progress[-1].done == 0
    assert [r.commit_b for r in again.kept] == [row.commit_b]


def test_a_later_revert_is_reported_beside_the_commit(
    mining_repo: tuple[Path, dict[str, str]],
) -> None:
    repo, commits = mining_repo
    # five commits later someone undoes the speed-up with git revert (the message says so)
    git(repo, "revert", "--no-edit", commits["real"])
    reverted = git(repo, "rev-parse", "HEAD").strip()
    found = {c.commit: c for c in candidates(repo)}
    real = found[commits["real"]]
    assert real.reverted_by is not None
    assert real.reverted_by["commit"] == reverted and real.reverted_by["how"] == "its message"
    assert "reverted by " + reverted[:10] in real.revert_note()
    assert found[commits["noise"]].reverted_by is None


def test_a_revert_by_hand_is_found_by_its_diff(
    mining_repo: tuple[Path, dict[str, str]],
) -> None:
    repo, commits = mining_repo
    # the describe() change undone by hand, under a message that does not say "revert"
    back = (repo / "fastlib/core.py").read_text().replace(DESCRIBE_B, DESCRIBE_A)
    undone = write(repo, {"fastlib/core.py": back}, "Tidy describe")
    found = {c.commit: c for c in candidates(repo)}
    noise = found[commits["noise"]]
    assert noise.reverted_by is not None, noise
    assert noise.reverted_by["commit"] == undone
    assert noise.reverted_by["how"] == "its reversed diff"
    assert found[commits["real"]].reverted_by is None
