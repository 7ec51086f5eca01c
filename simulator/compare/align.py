"""Aligning two sequences of actions so that inserted or missing steps do not shift the rest.

A longest common subsequence of the two runs' actions, by Myers' O((N+M)·D) algorithm after the
common start and end are set aside: fast when runs of one task mostly agree (D, the steps only
one run took, small), however often an action repeats. difflib's matcher, the obvious tool, is
quadratic on repeats (an agent runs the tests again and again) and took seconds on two
5,000-step runs (bench/compare.py prints both); patience anchors (git's `--patience`) read well
on code but give up matches, and here the count of matched steps is the point.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

Pair = tuple[int | None, int | None]
"""One row of an alignment: an index into each run, None where that run has no such step."""

MAX_EDITS = 4000
"""Past this many unmatched steps in one stretch, the stretch is left unpaired rather than
aligned (the cost grows with its square, and runs that far apart share little to align)."""


def align(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Pair]:
    """Rows pairing equal items of `a` and `b` in order; every item of each appears once."""
    rows: list[Pair] = []
    a0, a1, b0, b1 = 0, len(a), 0, len(b)
    # Equal heads and tails first: cheap, and most runs of one task share a long start.
    while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
        rows.append((a0, b0))
        a0, b0 = a0 + 1, b0 + 1
    tail: list[Pair] = []
    while a1 > a0 and b1 > b0 and a[a1 - 1] == b[b1 - 1]:
        a1, b1 = a1 - 1, b1 - 1
        tail.append((a1, b1))
    _align_gap(a, b, a0, a1, b0, b1, rows)
    rows.extend(reversed(tail))
    return rows


def _align_gap(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    a0: int,
    a1: int,
    b0: int,
    b1: int,
    rows: list[Pair],
) -> None:
    n, m = a1 - a0, b1 - b0
    matches = _myers(a, b, a0, a1, b0, b1) if n and m else []
    if matches is None:
        # Runs that share almost nothing here: pairing them step for step says no more.
        matches = []
    ia, ib = a0, b0
    for pa, pb in [*matches, (a1, b1)]:
        # What lies between two matches pairs off as changed steps (one run did something else
        # at that point) before the rest is listed as steps only one run took.
        while ia < pa and ib < pb:
            rows.append((ia, None))
            rows.append((None, ib))
            ia, ib = ia + 1, ib + 1
        rows.extend((i, None) for i in range(ia, pa))
        rows.extend((None, j) for j in range(ib, pb))
        if pa < a1:
            rows.append((pa, pb))
        ia, ib = pa + 1, pb + 1


def _myers(
    a: Sequence[Hashable], b: Sequence[Hashable], a0: int, a1: int, b0: int, b1: int
) -> list[tuple[int, int]] | None:
    """A longest common subsequence of a[a0:a1] and b[b0:b1] as matched index pairs, by Myers'
    O((N+M)·D) greedy algorithm (D: the number of steps only one run took); None when D would
    pass MAX_EDITS, where the runs have little left to align."""
    n, m = a1 - a0, b1 - b0
    limit = min(n + m, MAX_EDITS)
    offset = limit + 1
    v = [0] * (2 * limit + 3)
    trace: list[list[int]] = []
    for d in range(limit + 1):
        # What step d reads of the furthest-reaching paths after d - 1 edits (k in -d-1..d+1).
        trace.append(v[offset - d - 1 : offset + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[a0 + x] == b[b0 + y]:
                x, y = x + 1, y + 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _backtrack(trace, d, n, m, a0, b0)
    return None


def _backtrack(
    trace: list[list[int]], edits: int, n: int, m: int, a0: int, b0: int
) -> list[tuple[int, int]]:
    matches: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(edits, 0, -1):
        before = trace[d]  # before[k + d + 1] is where diagonal k reached after d - 1 edits

        def reach(k: int, before: list[int] = before, d: int = d) -> int:
            return before[k + d + 1]

        k = x - y
        prev_k = k + 1 if k == -d or (k != d and reach(k - 1) < reach(k + 1)) else k - 1
        prev_x = reach(prev_k)
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x, y = x - 1, y - 1
            matches.append((a0 + x, b0 + y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        matches.append((a0 + x, b0 + y))
    matches.reverse()
    return matches
