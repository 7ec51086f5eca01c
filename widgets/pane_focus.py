"""Tab and Shift+Tab between the app's panes, in screen order, skipping hidden ones.

Textual's default Tab walks every focusable widget: the editor's tab bar, the panel's tab bar,
the agent's mode tabs, and a pane that has no focusable content of its own (the editor with no
file open) left the keyboard nowhere. Here Tab goes pane to pane — tree, editor, bottom panel,
agent — each to the widget Alt+1..Alt+4 would focus. The editor keeps Tab for indenting and the
terminal sends it to the shell (as in VS Code): Alt+1..Alt+4 and Ctrl+` leave them.
"""

from __future__ import annotations

from typing import Protocol

from textual.widget import Widget

PANES = ("tree", "editor", "panel", "agent")
TAB_HELP = (
    "Next / previous pane: tree, editor, panel, agent (hidden ones are skipped). "
    "In the editor Tab indents and in the terminal it completes: Alt+1..4 or Ctrl+` leave them"
)


class PaneHost(Protocol):
    """What the app offers: which pane a widget is in, where a pane takes focus, and focusing."""

    def pane_of(self, widget: Widget | None) -> str | None: ...

    def pane_target(self, pane: str) -> Widget | None:
        """The widget a visible pane focuses, or None when the pane is hidden or empty."""
        ...


def next_pane_target(host: PaneHost, focused: Widget | None, step: int) -> Widget | None:
    """The widget Tab (step 1) or Shift+Tab (step -1) moves the keyboard to."""
    current = host.pane_of(focused)
    start = PANES.index(current) if current in PANES else (-1 if step > 0 else 0)
    for offset in range(1, len(PANES) + 1):
        pane = PANES[(start + step * offset) % len(PANES)]
        if pane == current:
            continue
        target = host.pane_target(pane)
        if target is not None:
            return target
    return None
