"""Printing benchmark results the same way everywhere: reference and ours side by side."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from typing import Any


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def summary(values: Sequence[float]) -> str:
    return (
        f"median {ms(statistics.median(values))}  p95 {ms(percentile(values, 0.95))}  "
        f"(n={len(values)})"
    )


def table(title: str, rows: Sequence[tuple[str, str, str]]) -> str:
    """rows: (what, reference, ours)."""
    width = max(len(r[0]) for r in rows)
    ref_w = max(len(r[1]) for r in [*rows, ("", "reference", "")])
    lines = [title, f"{'':{width}}  {'reference':{ref_w}}  ours"]
    lines += [f"{what:{width}}  {ref:{ref_w}}  {ours}" for what, ref, ours in rows]
    return "\n".join(lines)


def arguments(description: str | None, **defaults: Any) -> argparse.Namespace:
    """A benchmark's command line: `--NAME VALUE` for each keyword (its underscores as dashes),
    parsed as its default's type; a False default makes a flag."""
    parser = argparse.ArgumentParser(description=description)
    for name, default in defaults.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):
            parser.add_argument(flag, action="store_true")
        else:
            parser.add_argument(flag, type=type(default), default=default)
    return parser.parse_args()
