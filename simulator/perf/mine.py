"""`perf mine`: find the commits in a repository's history that made something faster.

Candidates are commits with one parent whose diff changes a function of the repository's code
(not its tests), and that either say so (message keywords: faster, speed, optimise, perf,
cache...) or change hot code (a function with a loop or a comprehension, where time is spent).
Each candidate's most-changed function is compared, parent against commit, with a harness
traced from the tests; the comparisons run through the batch layer (one at a time, resumable
from `results.jsonl`). A commit is kept when its speed-up is significant and at least the
threshold. The kept rows become the published table and dataset problems.
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from simulator.batch import BatchProgress, TaskRecord, TaskStatus
from simulator.perf.batch import run_rows
from simulator.perf.compare import CompareResult, MeasureSettings
from simulator.perf.harness import is_test_path
from simulator.perf.table import Row, problem, write_outputs
from simulator.workflow import WorkflowFailure

KEYWORDS = re.compile(
    r"\b(fast(er|est)?|speed(s|ed|ing)?(\s*-?\s*up)?|optimi[sz](e|es|ed|ing|ation)|perf"
    r"(ormance)?|cach(e|es|ed|ing)|quick(er|ly)?|slow(er|ness)?|latency|efficien(t|cy))\b",
    re.IGNORECASE,
)
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
DEFAULT_THRESHOLD = 1.2


@dataclass
class Candidate:
    commit: str
    parent: str
    subject: str
    reasons: list[str]
    apis: list[tuple[str, int]] = field(default_factory=list)  # (dotted name, lines changed)
    reverted_by: dict[str, str] | None = None  # a later commit that undoes this one

    @property
    def api(self) -> str:
        return self.apis[0][0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "parent": self.parent,
            "subject": self.subject,
            "reasons": self.reasons,
            "apis": [name for name, _ in self.apis],
            "reverted_by": self.reverted_by,
        }

    def revert_note(self) -> str:
        if not self.reverted_by:
            return ""
        r = self.reverted_by
        return (
            f"; reverted by {r['commit'][:10]} ({r['date']}, {r['subject'][:60]!r}, "
            f"found by {r['how']})"
        )


@dataclass
class MineResult:
    candidates: list[Candidate]
    kept: list[Row]
    records: list[TaskRecord]
    files: dict[str, Path]
    threshold: float

    def verdicts(self) -> list[tuple[Candidate, str]]:
        """Each candidate with what became of it, in one phrase."""
        by_key = {record.key: record for record in self.records}
        out = []
        for candidate in self.candidates:
            record = by_key.get(_key(candidate))
            revert = candidate.revert_note()
            if record is None:
                out.append((candidate, "not run" + revert))
            elif record.status is not TaskStatus.OK:
                out.append((candidate, f"{record.status}: {record.evidence}{revert}"))
            else:
                verdict = record.result["verdict"]
                group = kept_group(record.result, self.threshold)
                keep = _keeps(record.result, self.threshold)
                word = "kept" if keep else "dropped"
                reach = ""
                if (record.result.get("harness") or {}).get("reaches_change") is False:
                    reach = "; the change is not reached: the tests that call it do not execute "
                    reach += "the lines the commit changed"
                out.append(
                    (
                        candidate,
                        f"{word}: {'all calls together ' if group else ''}"
                        f"speed-up {verdict['speedup']:.3f}x "
                        f"(CI {verdict['ci_low']:.3f}-{verdict['ci_high']:.3f}, "
                        f"{'significant' if verdict['significant'] else 'not significant'})"
                        f"{_group_note(group)}{reach}{revert}",
                    )
                )
        return out


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise WorkflowFailure(f"git {args[0]} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def module_of(path: str) -> str:
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[0] in ("src", "lib"):
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _functions(source: str) -> list[tuple[str, int, int, bool]]:
    """(qualname, first line, last line, has a loop) for every function of a module."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[tuple[str, int, int, bool]] = []
    loops = (ast.For, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                hot = any(isinstance(n, loops) for n in ast.walk(child))
                found.append((name, child.lineno, child.end_lineno or child.lineno, hot))
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def changed_functions(
    repo: Path, parent: str, commit: str, message: str = ""
) -> list[tuple[str, int, bool]]:
    """(dotted API, lines changed, hot) for the functions of non-test code a commit changed
    that the parent already had (a function new in the commit cannot be timed at the parent):
    first those a line of the message names as made faster (a line with a keyword: "`ilen` was
    optimized"), then those the message names at all (see `named_in`), then by lines changed.

    On a real history (one commit per release of a library, its changelog as the message: "all_equal
    was optimized") the most-changed function was often a new one or one whose behaviour changed,
    not the one the message said was made faster."""
    names = _git(repo, "diff", "--name-only", "--diff-filter=M", parent, commit, "--", "*.py")
    out: list[tuple[str, int, bool]] = []
    rank: dict[str, int] = {}  # 0: named as made faster, 1: named, 2: not named
    faster = "\n".join(line for line in message.splitlines() if KEYWORDS.search(line))
    for path in names.split():
        if is_test_path(path):
            continue
        diff = _git(repo, "diff", "-U0", parent, commit, "--", path)
        lines: list[int] = []
        for match in HUNK.finditer(diff):
            start, count = int(match.group(1)), int(match.group(2) or 1)
            lines += range(start, start + max(count, 1))
        source = _git(repo, "show", f"{commit}:{path}")
        before = {item[0] for item in _functions(_git(repo, "show", f"{parent}:{path}"))}
        module = module_of(path)
        for qualname, first, last, hot in _functions(source):
            touched = sum(1 for line in lines if first <= line <= last)
            if touched and "<" not in qualname and qualname in before:
                api = f"{module}.{qualname}"
                out.append((api, touched, hot))
                rank[api] = 0 if named_in(faster, qualname) else 2 - named_in(message, qualname)
    out.sort(key=lambda item: (rank[item[0]], -item[1]))
    return out


def named_in(message: str, qualname: str) -> bool:
    """Whether a commit message names the function (or its class) as code: `name`, name(),
    :func:`name`, or a bare name with an underscore (plain words such as "first" are English
    too often to count)."""
    for part in qualname.split("."):
        word = re.escape(part)
        if re.search(rf"`~?(?:[\w.]+\.)?{word}`|\b{word}\(", message):
            return True
        if "_" in part.strip("_") and re.search(rf"(?<![\w.]){word}\b", message):
            return True
    return False


def candidates(
    repo: Path, *, since: str | None = None, limit: int | None = None
) -> list[Candidate]:
    """Candidate commits, newest first: those that say they are faster, then the others."""
    args = ["log", "--no-merges", "--format=%H%x1f%P%x1f%s%x1f%b%x1e"]
    if since:
        args.append(f"--since={since}")
    said: list[Candidate] = []
    hot_only: list[Candidate] = []
    for entry in _git(repo, *args).split("\x1e"):
        fields = entry.strip("\n").split("\x1f")
        if len(fields) < 4:
            continue
        commit, parents, subject, body = fields
        if len(parents.split()) != 1:
            continue  # the root commit has nothing to compare with
        keyword = KEYWORDS.search(f"{subject}\n{body}")
        changed = changed_functions(repo, parents, commit, f"{subject}\n{body}")
        if not changed:
            continue
        reasons = []
        if keyword:
            reasons.append(f"message says {keyword.group(0)!r}")
        hot = [name for name, _count, is_hot in changed if is_hot]
        if hot:
            reasons.append(f"changes hot code: {', '.join(hot[:3])}")
        if not reasons:
            continue
        candidate = Candidate(
            commit, parents, subject, reasons, [(name, count) for name, count, _ in changed]
        )
        (said if keyword else hot_only).append(candidate)
    found = said + hot_only
    found = found[:limit] if limit is not None else found
    for candidate in found:
        candidate.reverted_by = find_revert(repo, candidate)
    return found


def _patch_ids(text: str, repo: Path) -> list[tuple[str, str]]:
    proc = subprocess.run(
        ["git", "-C", str(repo), "patch-id", "--stable"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    return [
        (parts[0], parts[1])
        for parts in (line.split() for line in proc.stdout.splitlines())
        if len(parts) == 2
    ]


def find_revert(repo: Path, candidate: Candidate) -> dict[str, str] | None:
    """A later commit (on the mined branch) that undoes `candidate`: its message says so
    ("This reverts commit <sha>", or `Revert "<subject>"`), or its diff is the candidate's
    diff reversed (same patch id), on the files the candidate changed."""
    later = _git(
        repo, "log", "--reverse", "--format=%H%x1f%s%x1f%b%x1f%as%x1e", f"{candidate.commit}..HEAD"
    )
    entries = {}
    for entry in later.split("\x1e"):
        fields = entry.strip("\n").split("\x1f")
        if len(fields) < 4:
            continue
        commit, subject, body, date = fields
        entries[commit] = (subject, date)
        if candidate.commit in body or subject == f'Revert "{candidate.subject}"':
            return {"commit": commit, "subject": subject, "date": date, "how": "its message"}
    if not entries:
        return None
    paths = _git(repo, "diff", "--name-only", candidate.parent, candidate.commit).split()
    if not paths:
        return None
    reverse = _git(repo, "diff", candidate.commit, candidate.parent, "--", *paths)
    ids = _patch_ids(f"commit {candidate.commit}\n\n{reverse}", repo)
    if not ids:
        return None
    wanted = ids[0][0]
    log = _git(
        repo,
        "log",
        "--reverse",
        "-p",
        "--format=commit %H%n",
        f"{candidate.commit}..HEAD",
        "--",
        *paths,
    )
    for patch_id, commit in _patch_ids(log, repo):
        if patch_id == wanted and commit in entries:
            subject, date = entries[commit]
            return {"commit": commit, "subject": subject, "date": date, "how": "its reversed diff"}
    return None


def _key(candidate: Candidate) -> str:
    return f"{candidate.commit}:{candidate.api}"


def _fast_enough(verdict: dict[str, Any], threshold: float) -> bool:
    return bool(verdict["significant"]) and float(verdict["speedup"]) >= threshold


def _keeps(result: dict[str, Any], threshold: float) -> bool:
    """All the calls together, or one group of them timed alone, significantly faster by at
    least the threshold."""
    return _fast_enough(result["verdict"], threshold) or bool(kept_group(result, threshold))


def kept_group(result: dict[str, Any], threshold: float) -> dict[str, Any] | None:
    """When all the calls together are not a keeper, the call group (a test's calls, or them
    on scaled inputs) that is: the fastest of those on the tests' own inputs, else of the
    scaled ones. Its interval and t-test are at the Bonferroni level for the number of groups
    (stats.group_verdicts), so picking it keeps the 95% meaning. None when the whole is kept
    or no group is."""
    if _fast_enough(result["verdict"], threshold):
        return None
    keepers = [
        group
        for group in result.get("groups") or []
        if group.get("compared") and _fast_enough(group["verdict"], threshold)
    ]
    # the tests' own inputs first: a scaled input is not what the tests pass
    return max(keepers, key=lambda g: (not g.get("scale"), g["verdict"]["speedup"]), default=None)


def _group_note(group: dict[str, Any] | None) -> str:
    if group is None:
        return ""
    verdict = group["verdict"]
    scaled = " on scaled inputs (not the tests' own)" if group.get("scale") else ""
    test = group["label"].removesuffix(", inputs scaled")
    return (
        f"; kept on {group['calls']} call(s) of {test} timed alone{scaled}: "
        f"{verdict['speedup']:.3f}x (CI {verdict['ci_low']:.3f}-{verdict['ci_high']:.3f} at "
        f"{verdict['confidence']:.1%}, significant)"
    )


def mine(
    repo: Path,
    out: Path,
    *,
    since: str | None = None,
    limit: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    settings: MeasureSettings | None = None,
    timeout: float | None = None,
    on_candidates: Callable[[list[Candidate]], None] | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    python: str | None = None,
    setup: bool = False,
) -> MineResult:
    """Compare every candidate with its parent; keep the significant speed-ups >= threshold."""
    repo = repo.resolve()
    if not (repo / ".git").exists():
        raise WorkflowFailure(f"{repo} is not a git repository.")
    found = candidates(repo, since=since, limit=limit)
    if on_candidates is not None:
        on_candidates(found)
    rows = [
        {"repo": str(repo), "api": c.api, "a": c.parent, "b": c.commit, "key": _key(c)}
        for c in found
    ]
    summary = run_rows(
        rows,
        out,
        settings=settings or MeasureSettings(),
        timeout=timeout,
        on_progress=on_progress,
        python=python,
        setup=setup,
    )
    subjects = {c.commit: c.subject for c in found}
    reverts = {c.commit: c.reverted_by for c in found}
    kept: list[Row] = []
    problems = []
    for record in summary.records:
        if record.status is TaskStatus.OK and _keeps(record.result, threshold):
            result = CompareResult.from_dict(record.result)
            group = kept_group(record.result, threshold)
            kept.append(Row.of(result, group=group))
            problems.append(
                problem(
                    result,
                    subject=subjects.get(result.commit_b, ""),
                    reverted_by=reverts.get(result.commit_b),
                    group=group,
                )
            )
    kept.sort(key=lambda row: -row.speedup)
    files = write_outputs(out, kept, problems)
    return MineResult(found, kept, summary.records, files, threshold)
