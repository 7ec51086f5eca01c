"""bench/setup_corpus.py's summary beside the naive reference: only over the naive runs held."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from setup_corpus import against_naive, shown, tier_of

from simulator.batch import ResultStore, TaskRecord, TaskStatus


def test_the_naive_reference_counts_only_the_naive_runs_the_store_holds() -> None:
    """Stop 44's whole-corpus run was `--only reposim` with no naive record in its store: the
    table said "naive 0/52" and "infx naive" for a reference that never ran."""
    assert against_naive(0, 0, 45, 52) == (
        "naive not run",
        "reposim 45/52 (no naive run in the store: no ratio)",
    )
    assert against_naive(11, 52, 45, 52) == (
        "naive 11/52",
        "reposim 45/52 (4.1x naive; goal >= 2.5x)",
    )
    reference, ours = against_naive(2, 10, 45, 52)
    assert reference == "naive 2/10" and "naive ran on 10 of 52" in ours, ours
    assert "no naive run ready" in against_naive(0, 5, 3, 5)[1]


def test_a_run_of_one_way_reports_the_other_ways_records_the_store_holds(tmp_path: Path) -> None:
    """Stop 44's `--only naive` run into a store of 48 ready reposim records printed "reposim
    0/52 (0.0x naive)": the table read this run's records alone."""
    store = ResultStore(tmp_path / "store.jsonl")
    ready = {"verdict": {"tier": "ready+"}}
    store.append(TaskRecord("reposim:a", TaskStatus.OK, 9.0, ready))
    store.append(TaskRecord("reposim:b", TaskStatus.FAILED, 30.0, {"verdict": {"tier": "runs"}}))
    store.append(TaskRecord("naive:a", TaskStatus.FAILED, 5.0, {"verdict": {"tier": "none"}}))
    ran = [TaskRecord("naive:a", TaskStatus.OK, 6.0, ready)]  # this run's, newer than the store's
    store.append(ran[0])
    latest = shown(store.latest(), ran)
    assert tier_of(latest["reposim:a"]) == "ready+" and tier_of(latest["reposim:b"]) == "runs"
    assert tier_of(latest["naive:a"]) == "ready+"
    assert "naive:b" not in latest
