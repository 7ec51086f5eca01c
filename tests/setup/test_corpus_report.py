"""bench/setup_corpus.py's summary beside the naive reference: only over the naive runs held."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from setup_corpus import against_naive


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
