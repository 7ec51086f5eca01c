"""Traced harnesses on a corpus of real projects (issue 22): how many targets get a harness a
benchmark can trust, per project and overall.

    uv run python bench/harness_corpus_build.py             # once: fetch, commit, reposim setup
    uv run python bench/harness_corpus.py [--label NAME] [--only NAME ...] [--before FILE]

For each project of bench/harness_corpus.txt that `reposim setup --backend local` made ready,
`reposim harness --generator traced` runs on every target `--filter r2e` selects (the local
backend, in the venv setup left). Per project and overall: targets, with a harness, with at least
one case, valid, median branch coverage and mutation score (over harnesses with a case), median
suite parity (over valid harnesses), the share of cases with no pickle, seconds per target (own
stage plus a share of the traced test run; wall time, with the commands' CPU time per target
beside it, since the machine's load stretches wall time), the wall time per stage (traced run,
harness runs, mutant runner), and the outcome per reason. Each finished project
is appended to bench/out/harness-corpus-<label>.jsonl (a rerun skips what it holds), so a run
that is stopped keeps what it finished. `--before FILE` prints another run's figures beside
(e.g. the previous code's, run with the same script); the references printed beside are the
previous release's published figure on toolz (22/41 = 54% valid, BENCHMARKS.md) and R2E's
published 52% valid at 88% branch coverage (GPT-4 harnesses).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness_corpus_build import DEFAULT_DEST, DEFAULT_RESULTS, LIST, verdicts

from bench._harness_progress import HarnessProgress
from bench._report import table
from bench.corpus.build_setup_corpus import pins, repo_dir
from simulator.dataset.readers import read_problems
from simulator.dataset.schema import Problem
from simulator.events import Event, Kind
from simulator.harness.batch import run_repo
from simulator.harness.format import derived_count, readable_share
from simulator.harness.target import find_targets
from simulator.harness.workflow import HarnessOptions

OUT = Path(__file__).resolve().parent / "out"
R2E = "R2E (GPT-4): 52% valid at 88% cov"
PREVIOUS = "previous release, toolz: 22/41 = 54% valid"


def _reason(problem: Problem) -> str:
    v = problem.validation
    if v is None:
        text = problem.curation.reasons[0] if problem.curation.reasons else "no harness"
        return "no harness: " + text.split(":")[0].split("(")[0].strip()[:60]
    if v.verdict == "valid":
        return "valid"
    if str(problem.curation.state) == "rejected":
        return "no reproducible call"
    return (v.reasons[0].split(" is below")[0].split(" (")[0][:70]) if v.reasons else "invalid"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def figures(problems: list[Problem], seconds: dict[str, float], trace: float) -> dict[str, Any]:
    n = len(problems)
    cased = [p for p in problems if p.harness is not None and p.harness.cases > 0]
    valid = [p for p in problems if p.validation and p.validation.verdict == "valid"]
    coverage = [p.validation.coverage_rate for p in cased if p.validation]
    mutation = [p.validation.mutation_score for p in cased if p.validation]
    parity = [
        float(((p.validation.mutation or {}).get("suite") or {})["parity"])
        for p in valid
        if p.validation
        and ((p.validation.mutation or {}).get("suite") or {}).get("parity") is not None
    ]
    readable = total = derived = 0
    for p in cased:
        r, c = readable_share(p.harness.text if p.harness else "")
        readable, total = readable + r, total + c
        derived += derived_count(p.harness.text if p.harness else "")
    per_target = [seconds.get(p.target["id"], 0.0) + trace / max(1, n) for p in problems]
    return {
        "targets": n,
        "harnesses": sum(p.harness is not None for p in problems),
        "with_cases": len(cased),
        "valid": len(valid),
        "coverage": _median([c for c in coverage if c is not None]),
        "mutation": _median([m for m in mutation if m is not None]),
        "parity": _median(parity),
        "parity_n": len(parity),
        "readable": readable,
        "cases": total,
        "derived": derived,
        "seconds": _median(per_target),
        "seconds_all": per_target,
        "reasons": dict(Counter(_reason(p) for p in problems).most_common()),
    }


def stage_of(command: str) -> str:
    """Which part of a target's pipeline a command run by the workflow is."""
    if "reposim_tracer" in command:
        return "traced run"
    if "reposim_mutants" in command:
        return "mutants (suite)" if "-suite.json" in command else "mutants (harness)"
    if "coverage run" in command:
        return "harness run (coverage)"
    if "pytest" in command:
        return "harness run"
    return "other"


def sampled(repo: Path, size: int) -> list[str] | None:
    """The ids of `size` targets spread evenly over the project's (sorted by id), or None
    for all of them: a bounded run that still says what share is valid."""
    if size <= 0:
        return None
    ids = sorted(t.id for t in find_targets(repo))
    if len(ids) <= size:
        return None
    step = len(ids) / size
    return [ids[int(i * step)] for i in range(size)]


async def run_project(repo: Path, out: Path, sample: int = 0) -> dict[str, Any]:
    progress = HarnessProgress(f"  {repo.name}: traced test run {{seconds:.1f}}s", "    ")
    stages: Counter[str] = Counter()
    commands: dict[int, str] = {}

    def watch(event: Event) -> None:
        if event.kind in (Kind.EXEC, Kind.TEST_RUN):
            commands[event.seq] = str(event.payload.get("command") or "")
        elif event.kind in (Kind.EXEC_RESULT, Kind.TEST_RESULT) and event.cause in commands:
            stage = stage_of(commands.pop(event.cause))
            stages[stage] += float(event.payload.get("duration") or 0.0)
        progress.watch(event)

    t0 = time.monotonic()
    cpu0 = _children_cpu()
    selectors = sampled(repo, sample)
    await run_repo(repo, out, HarnessOptions(), selectors=selectors, on_event=watch)
    wall = time.monotonic() - t0
    trace = progress.trace
    result = figures(read_problems(out), progress.targets, trace)
    result.update(project=repo.name, wall=round(wall, 1), trace=round(trace, 1))
    if selectors is not None:
        result["sample"] = f"{len(selectors)} of {len(find_targets(repo))} targets"
    # the commands' CPU time (user + system, counted once the session's shell has ended)
    result["cpu"] = round(_children_cpu() - cpu0, 1)
    result["stages"] = {k: round(v, 1) for k, v in stages.most_common()}
    result["load"] = os.getloadavg()
    return result


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _f(value: float | None, unit: str = "%") -> str:
    if value is None:
        return "-"
    return f"{value:.0%}" if unit == "%" else f"{value:.1f}s"


def row(r: dict[str, Any]) -> str:
    return (
        f"{r['targets']} targets, {r['harnesses']} harness, {r['with_cases']} with cases, "
        f"valid {r['valid']} ({_pct(r['valid'], r['targets'])}), cov {_f(r['coverage'])}, "
        f"mut {_f(r['mutation'])}, parity {_f(r['parity'])} (n={r.get('parity_n', 0)}), "
        f"no pickle {_pct(r['readable'], r['cases'])}"
        + (f" (derived {r['derived']} of {r['cases']} cases)" if "derived" in r else "")
        + f", {_f(r['seconds'], 's')}/target"
        + (f" ({r['cpu'] / r['targets']:.1f}s CPU)" if r.get("cpu") and r["targets"] else "")
    )


def overall(results: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("targets", "harnesses", "with_cases", "valid", "readable", "cases", "parity_n")
    total: dict[str, Any] = {k: sum(r.get(k, 0) for r in results) for k in keys}
    if all("derived" in r for r in results):
        total["derived"] = sum(r["derived"] for r in results)
    for key in ("coverage", "mutation", "parity"):
        total[key] = _median([r[key] for r in results if r.get(key) is not None])
    total["seconds"] = _median([s for r in results for s in r.get("seconds_all", [])])
    if all(r.get("cpu") for r in results):  # the commands' CPU time, per target overall
        total["cpu"] = sum(r["cpu"] for r in results)
    shares = [r["valid"] / r["targets"] for r in results if r["targets"]]
    total["median_project_valid"] = _median(shares)
    reasons: Counter[str] = Counter()
    for r in results:
        reasons.update(r.get("reasons") or {})
    total["reasons"] = dict(reasons.most_common())
    return total


def load(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {json.loads(line)["project"]: json.loads(line) for line in path.read_text().splitlines()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--report", action="store_true", help="Only print what the file holds.")
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        help="At most this many targets per project, spread evenly over its targets (0: all).",
    )
    args = parser.parse_args()
    store = OUT / f"harness-corpus-{args.label}.jsonl"
    OUT.mkdir(parents=True, exist_ok=True)
    ready = verdicts(DEFAULT_RESULTS)
    repos = [repo_dir(args.dest, n, v) for n, v in pins(LIST)]
    repos = [r for r in repos if ready.get(str(r)) in ("ready", "ready+")]
    if args.only:
        repos = [r for r in repos if any(r.name.startswith(o) for o in args.only)]
    if not repos:
        wanted = f" among {' '.join(args.only)}" if args.only else ""
        raise SystemExit(
            f"no project{wanted} is set up ready in {DEFAULT_RESULTS}: run "
            "bench/harness_corpus_build.py first (its --results must be that file)."
        )
    done = load(store)
    if not args.report:
        for repo in repos:
            if repo.name in done:
                continue
            print(f"{repo.name}: harnessing (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
            result = asyncio.run(
                run_project(repo, OUT / f"problems-{args.label}-{repo.name}.jsonl", args.sample)
            )
            with store.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(result) + "\n")
            done[result["project"]] = result
            print(f"{repo.name}: {row(result)}", file=sys.stderr, flush=True)
    before = load(args.before) if args.before else {}
    results = [done[r.name] for r in repos if r.name in done]
    rows: list[tuple[str, str, str]] = []
    for r in results:
        b = before.get(r["project"])
        rows.append((r["project"], row(b) if b else "-", row(r)))
    if results:
        mine = overall(results)
        theirs = overall([before[r["project"]] for r in results if r["project"] in before])
        rows.append(("overall", row(theirs) if theirs["targets"] else "-", row(mine)))
        both = [r for r in results if r["project"] in before]
        if both and len(both) < len(results):
            rows.append(("overall, projects run both ways", row(theirs), row(overall(both))))
        rows.append(
            (
                "median project: share valid",
                _f(theirs.get("median_project_valid")),
                _f(mine["median_project_valid"]),
            )
        )
        rows.append(("references", PREVIOUS, R2E))
    print(table("Traced harnesses on the corpus (before | after)", rows))
    for r in results:
        sample = f", a sample: {r['sample']}" if r.get("sample") else ""
        print(f"\n{r['project']} (load {r.get('load')}{sample}): outcome per target")
        if r.get("stages"):
            cpu = r.get("cpu")
            print(f"  wall {r.get('wall')}s, commands' CPU {cpu}s; wall per stage: {r['stages']}")
        for reason, count in r["reasons"].items():
            print(f"  {count:3d}  {reason}")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
