"""The status bar: backend, workspace, git branch, number of changed files, what is running, and
where the editor's cursor is (line and column, 1-based as in VS Code)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

if TYPE_CHECKING:
    from simulator.session import Session


class StatusBar(Widget):
    """One line at the bottom; shows the workspace's basename, never a temporary path."""

    DEFAULT_CSS = """
    StatusBar {
        dock: bottom;
        height: 1;
        background: $primary;
        color: $text;
    }
    """

    changed: reactive[int | None] = reactive(None)
    activity: reactive[str] = reactive("")
    cursor: reactive[str] = reactive("")
    """"Ln 12, Col 5" (and "(3 selected)") for the focused editor tab; empty without one."""

    def __init__(self, session: Session, *, id: str | None = None) -> None:
        super().__init__(id=id)
        description = session.description
        self.backend_kind = description.kind
        container = description.container
        self.place = container[:12] if container else session.source.name
        branch = session.repo.get("branch") if session.repo.get("git") else None
        self.branch = str(branch) if branch else None

    def render(self) -> Text:
        left = Text(" ")
        left.append(f"⚙ {self.backend_kind}", "bold")
        left.append(f"  {self.place}")
        if self.branch:
            left.append(f"  ⎇ {self.branch}")
        if self.changed is not None:
            noun = "file" if self.changed == 1 else "files"
            left.append(f"  ● {self.changed} changed {noun}")
        if self.activity:
            left.append(f"  {self.activity}", "italic")
        right = Text(f"{self.cursor}  " if self.cursor else "")
        # On a narrow screen the F2 hint gives way before the workspace facts do.
        hints = "F1 help  F2 commands "
        if left.cell_len + right.cell_len + len(hints) + 1 > self.size.width:
            hints = "F1 help "
        right.append(hints)
        room = self.size.width - right.cell_len - 1
        if left.cell_len > room:
            left.truncate(max(room, 0), overflow="ellipsis")
        gap = max(1, self.size.width - left.cell_len - right.cell_len)
        return Text.assemble(left, " " * gap, right)
