"""Nesting by byte ranges: which definition encloses what, in one linear sweep.

Walking every tree-sitter node from Python is what makes naive extractors slow, so the
extractors run one query (in C) and then place its captures with these sweeps.
"""

from __future__ import annotations

from collections.abc import Sequence


def parents(scopes: Sequence[tuple[int, int]]) -> list[int]:
    """For scopes sorted by start and properly nested, the index of each one's parent (-1)."""
    out: list[int] = []
    stack: list[int] = []
    for start, _end in scopes:
        while stack and scopes[stack[-1]][1] <= start:
            stack.pop()
        out.append(stack[-1] if stack else -1)
        stack.append(len(out) - 1)
    return out


def innermost(scopes: Sequence[tuple[int, int]], positions: Sequence[int]) -> list[int]:
    """For each position (ascending), the index of the innermost scope containing it, or -1."""
    out: list[int] = []
    stack: list[int] = []
    i = 0
    n = len(scopes)
    for pos in positions:
        while i < n and scopes[i][0] <= pos:
            start = scopes[i][0]
            while stack and scopes[stack[-1]][1] <= start:
                stack.pop()
            stack.append(i)
            i += 1
        while stack and scopes[stack[-1]][1] <= pos:
            stack.pop()
        out.append(stack[-1] if stack else -1)
    return out


def code_lines(
    rows: list[tuple[int, int]], source_lines: list[bytes], comment: tuple[bytes, ...]
) -> int:
    """Lines covered by the given (first row, last row) spans, blank and comment-only ones out."""
    covered: set[int] = set()
    for first, last in rows:
        covered.update(range(first, last + 1))
    count = 0
    for row in covered:
        text = source_lines[row].strip() if row < len(source_lines) else b""
        if text and not text.startswith(comment):
            count += 1
    return count
