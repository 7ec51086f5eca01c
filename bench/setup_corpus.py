"""Setup on a corpus of real projects: naive `pip install -e . && pytest` vs `reposim setup`.

Reference: the naive install in a fresh container, on the same corpus, in the same batch run.
Goal (issue 13): >= 2.5x the naive number of ready repositories and >= 80% ready without a
model; also the median time to ready and the throughput of 4 workers on this (2-core) machine.

    uv run python bench/corpus/build_setup_corpus.py       # once: the pinned sdists, unpacked
    uv run python bench/setup_corpus.py [--jobs 4] [--store FILE] [--limit N]

The hard corpus of issue 24 (2018-2022 sdists, science, unittest suites, C extensions, Debian C
projects; a category per pin, and the table by category at the end):

    uv run python bench/corpus/build_setup_corpus.py --list setup_corpus_hard.txt \
        --dest ~/.cache/reposim/setup-corpus-hard
    uv run python bench/setup_corpus.py --list setup_corpus_hard.txt \
        --corpus ~/.cache/reposim/setup-corpus-hard --jobs 2 --store bench/out/hard.jsonl

Both ways of every repository are tasks of one run_batch (each a fresh container); the results
go to a JSONL store, so an interrupted run resumes where it stopped (--fresh starts over).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import percentile, table
from _setup_tasks import naive_task
from corpus.build_setup_corpus import DEFAULT_DEST, HERE, LIST, categorised_pins, repo_dir

from simulator.batch import ResultStore, Task, TaskRecord, TaskStatus, run_batch
from simulator.setup.batch import setup_task
from simulator.setup.runner import DEFAULT_IMAGE, SetupRequest


def dispatch(task: Task) -> dict[str, object]:
    if task.key.startswith("naive:"):
        return naive_task(task)
    return setup_task(task)


def tier_of(record: TaskRecord | None) -> str:
    if record is None:
        return "-"
    verdict = record.result.get("verdict") or {}
    if record.status == "timeout":
        return "timeout"
    return str(verdict.get("tier") or record.status)


_CPU_SHARE = re.compile(r"the container had (\d+) s of CPU in the run's (\d+) s")


def cut_by_time(record: TaskRecord | None) -> str | None:
    """How a time limit, not the project, ended a not-ready task: the batch's limit (no
    verdict at all), or the ladder's budget cutting a run (category `timeout`), with the CPU
    share the container had in the cut run (a suite starved by the machine's load reads very
    differently from one that is slow on its own); None for a verdict of the project's own."""
    if record is None:
        return None
    if record.status == "timeout":
        return "the batch's time limit ended the task (no verdict)"
    if record.category != "timeout":
        return None
    share = _CPU_SHARE.search(record.evidence or "")
    if share is None:
        return "the time budget cut it"
    cpu, wall = int(share.group(1)), int(share.group(2))
    share_text = f"{cpu / max(wall, 1):.0%}"
    return f"the time budget cut it; the container had {cpu} s of CPU in {wall} s ({share_text})"


def against_naive(naive_ready: int, naive_run: int, ours_ready: int, n: int) -> tuple[str, str]:
    """The naive reference cell and our ready count beside it, over the naive runs the store
    holds: a run with --only reposim may have none (stop 44: the table said "naive 0/52" and
    "infx naive" where no naive task had run), or some."""
    ours = f"reposim {ours_ready}/{n}"
    if naive_run == 0:
        return "naive not run", f"{ours} (no naive run in the store: no ratio)"
    ratio = f"{ours_ready / naive_ready:.1f}x naive" if naive_ready else "no naive run ready"
    partial = "" if naive_run == n else f"; naive ran on {naive_run} of {n}"
    return f"naive {naive_ready}/{naive_run}", f"{ours} ({ratio}{partial}; goal >= 2.5x)"


def shown(held: dict[str, TaskRecord], ran: list[TaskRecord]) -> dict[str, TaskRecord]:
    """What the table reports: this run's records, beside those the store already held for the
    other way (or for tasks this run skipped), as `--only`'s help says. Stop 44's `--only naive`
    run into a store holding 48 ready reposim records printed "reposim 0/52 (0.0x naive)"."""
    return {**held, **{record.key: record for record in ran}}


def _interleaved(repos: list[Path], categories: dict[str, str]) -> list[Path]:
    """One repository of each category in turn, each category in the list's order."""
    queues: dict[str, list[Path]] = {}
    for repo in repos:
        queues.setdefault(categories.get(repo.name, "-"), []).append(repo)
    out: list[Path] = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                out.append(queue.pop(0))
    return out


def _span(records: list[TaskRecord]) -> float:
    """Seconds from the first task's start to the last task's end, from the records."""
    if not records:
        return 0.0
    return max(r.finished for r in records) - min(r.finished - r.seconds for r in records)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_DEST)
    parser.add_argument("--list", type=Path, default=LIST, help="the pins (with categories)")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--store", type=Path, default=Path("/tmp/reposim-setup-corpus.jsonl"))
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="Take the categories in turn (with --limit, or a run cut short: a stratified subset).",
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="per task, both ways")
    parser.add_argument(
        "--budget", type=float, default=1200.0, help="reposim's own ladder budget (--budget)"
    )
    parser.add_argument(
        "--cpus",
        type=float,
        default=None,
        help="each container's CPU limit, both ways (default: the backend's); on a shared "
        "machine --jobs 2 --cpus 0.5 keeps the corpus to one CPU in all",
    )
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument(
        "--retry-reposim-failed",
        action="store_true",
        help="Run `reposim setup` again on the repositories it failed (the naive runs stay).",
    )
    parser.add_argument(
        "--only",
        choices=("naive", "reposim"),
        help="Run one way only (the other's results already in the store stay and are reported).",
    )
    parser.add_argument("--markdown", action="store_true", help="The table as Markdown.")
    parser.add_argument(
        "--report",
        action="store_true",
        help="Only print the table of the repositories the store has both results for.",
    )
    args = parser.parse_args()
    listing = args.list if args.list.is_file() else HERE / args.list
    categories = {repo_dir(args.corpus, n, v).name: c for n, v, c in categorised_pins(listing)}
    repos = [repo_dir(args.corpus, n, v) for n, v, _ in categorised_pins(listing)]
    repos = [r for r in repos if (r / ".git").is_dir()]
    if args.interleave:
        repos = _interleaved(repos, categories)
    if args.limit:
        repos = repos[: args.limit]
    if not repos:
        print(f"No corpus in {args.corpus}: run bench/corpus/build_setup_corpus.py first.")
        return 2
    if args.fresh and args.store.exists():
        args.store.unlink()
    trajectories = args.store.with_suffix(".trajectories")
    request = SetupRequest(
        image=DEFAULT_IMAGE, trajectory_dir=str(trajectories), budget=args.budget, cpus=args.cpus
    )
    tasks: list[Task] = []
    for repo in repos:
        tasks.append(
            Task(
                f"naive:{repo.name}",
                {
                    "source": str(repo),
                    "trajectory_dir": str(trajectories),
                    "image": DEFAULT_IMAGE,
                    "cpus": args.cpus,
                },
            )
        )
        tasks.append(Task(f"reposim:{repo.name}", {"source": str(repo), **request.to_payload()}))
    print(f"{len(repos)} repositories, {len(tasks)} tasks, {args.jobs} workers", file=sys.stderr)
    t0 = time.monotonic()
    store = ResultStore(args.store)
    if args.report:
        # What the store holds now (a run in progress or stopped): the batch's own time span.
        records = list(store.latest().values())
        skipped, wall = 0, _span(records)
    else:
        retry: frozenset[TaskStatus] = frozenset()
        if args.only:
            tasks = [t for t in tasks if t.key.startswith(f"{args.only}:")]
        if args.retry_reposim_failed:
            # Only `reposim setup` runs again (after a fix); the naive reference stays as it ran.
            tasks = [t for t in tasks if t.key.startswith("reposim:")]
            retry = frozenset({TaskStatus.FAILED})
        summary = run_batch(
            tasks,
            dispatch,
            retry=retry,
            store=store,
            jobs=args.jobs,
            timeout=args.timeout,
            on_progress=lambda p: print(p.line(), file=sys.stderr, flush=True),
        )
        records, skipped, wall = summary.records, summary.skipped, time.monotonic() - t0
    latest = shown(store.latest(), records)
    if args.report:
        # Both ways' results, or the one way --only names (a run of that way alone)
        ways = (args.only,) if args.only else ("naive", "reposim")
        repos = [r for r in repos if all(f"{w}:{r.name}" in latest for w in ways)]
    rows = []
    for repo in repos:
        naive, ours = latest.get(f"naive:{repo.name}"), latest.get(f"reposim:{repo.name}")
        category = ours.category if ours is not None and ours.category else ""
        limit = 160 if args.markdown else 90
        evidence = (ours.evidence or "")[:limit] if ours is not None and ours.category else ""
        rows.append(
            (
                repo.name,
                tier_of(naive),
                tier_of(ours),
                category,
                f"{ours.seconds:.0f}" if ours else "-",
                evidence,
            )
        )
    width = max((len(r[0]) for r in rows), default=10)
    print()
    header = ("repository", "naive", "reposim", "category", "seconds", "evidence")
    rows = [(f"{categories.get(r[0], '-')}/{r[0]}", *r[1:]) for r in rows]
    width = max((len(r[0]) for r in rows), default=10)
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for name, naive_t, ours_t, category, seconds, evidence in [header, *rows][args.markdown :]:
        if args.markdown:
            cells = [name, naive_t, ours_t, category, seconds, evidence.replace("|", "\\|")]
            print("| " + " | ".join(f"`{c}`" if c and c is evidence else c for c in cells) + " |")
        else:
            print(
                f"{name:{width}}  {naive_t:9}  {ours_t:9}  {category:18}  {seconds:>7}  {evidence}"
            )
    cut = [
        (repo.name, why)
        for repo in repos
        if (why := cut_by_time(latest.get(f"reposim:{repo.name}"))) is not None
    ]
    if cut:
        # Not ready because a time limit ended the run (what the cut run showed is in its
        # evidence): said apart, with the CPU share (at load a cut says little of the project).
        print()
        print(f"not ready: a time limit ended the run before a verdict of its own ({len(cut)}):")
        for name, why in cut:
            print(f"  {categories.get(name, '-')}/{name}: {why}")
    ready = {"naive": 0, "reposim": 0}
    naive_run = 0
    for _name, naive_t, ours_t, *_ in rows:
        ready["naive"] += naive_t in ("ready", "ready+")
        ready["reposim"] += ours_t in ("ready", "ready+")
        naive_run += naive_t != "-"
    ours_records = [latest[k] for k in (f"reposim:{r.name}" for r in repos) if k in latest]
    ready_times = [r.seconds for r in ours_records if tier_of(r) in ("ready", "ready+")]
    all_times = [r.seconds for r in ours_records]
    n = len(repos)
    by_category: dict[str, list[int]] = {}
    for name, naive_t, ours_t, *_ in rows:
        cell = by_category.setdefault(name.split("/")[0], [0, 0, 0, 0])
        cell[0] += 1
        cell[1] += naive_t in ("ready", "ready+")
        cell[2] += ours_t in ("ready", "ready+")
        cell[3] += naive_t != "-"
    print()
    print(f"{'corpus category':18}  {'n':>3}  {'naive ready':>11}  {'reposim ready':>13}")
    for category, (count, naive_n, ours_n, naive_ran) in sorted(by_category.items()):
        naive_cell = f"{naive_n}/{naive_ran}" if naive_ran else "not run"
        print(f"{category:18}  {count:>3}  {naive_cell:>11}  {ours_n:>13}")
    reference, ours_cell = against_naive(ready["naive"], naive_run, ready["reposim"], n)
    to_ready = "-"
    if ready_times:
        to_ready = (
            f"median {statistics.median(ready_times):.0f} s, "
            f"p90 {percentile(ready_times, 0.9):.0f} s, max {max(ready_times):.0f} s"
        )
    naive_times = [latest[k].seconds for k in (f"naive:{r.name}" for r in repos) if k in latest]

    def spread(values: list[float]) -> str:
        if not values:
            return "-"
        return (
            f"median {statistics.median(values):.0f} s, p95 {percentile(values, 0.95):.0f} s, "
            f"min {min(values):.0f} s, max {max(values):.0f} s"
        )

    per_repo = spread(all_times)
    done_here = len(records) if args.report else len(tasks) - skipped
    throughput = (
        f"{3600 * done_here / max(wall, 1e-9):.0f} tasks/hour ({done_here} tasks in {wall:.0f} s)"
    )
    print()
    print(
        table(
            f"setup corpus: {n} repositories, {args.jobs} workers, 2 cores, "
            f"{args.cpus or 'default'} CPU a container, image {DEFAULT_IMAGE}",
            [
                ("ready repositories", reference, ours_cell),
                (
                    "ready without a model",
                    "goal >= 90%",
                    f"{100 * ready['reposim'] / max(n, 1):.0f}%",
                ),
                (
                    "not ready: cut by a time limit / the project's own",
                    "-",
                    f"{len(cut)} / {n - ready['reposim'] - len(cut)}",
                ),
                ("time to ready (reposim)", "-", to_ready),
                ("time to verdict, every repository", f"naive {spread(naive_times)}", per_repo),
                ("batch throughput (both ways, this run)", "-", throughput),
            ],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
