"""Pieces the agent pane's cards (agent_cards.py) and the workflow cards (workflow_cards.py) both
draw: the head of a long text, and a highlighted diff."""

from __future__ import annotations

from rich.console import RenderableType

DIFF_LINES = 40


def head_lines(text: str, lines: int) -> str:
    rows = text.rstrip().splitlines()
    if len(rows) <= lines:
        return "\n".join(rows)
    return "\n".join([*rows[:lines], f"… {len(rows) - lines} more lines"])


def diff_renderable(diff: str, lines: int = DIFF_LINES) -> RenderableType:
    from rich.syntax import Syntax  # pygments loads on the first diff, not at the UI's start

    return Syntax(head_lines(diff, lines), "diff", theme="ansi_dark", word_wrap=True)
