"""The editor's tabs: a `TabbedContent` whose active tab is always the one holding the keyboard.

Imported with the first file opened, not before the first frame (issue 29)."""

from __future__ import annotations

from textual.widgets import TabbedContent, TabPane


class EditorTabs(TabbedContent):
    """`TabbedContent` makes a pane active when a widget in it takes focus, from a notice the pane
    posts (`TabPane.Focused`). Each pane's notice travels through that pane's own message queue,
    so after two quick switches (Ctrl+PgDn, Ctrl+PgUp) the first pane's notice can arrive after
    the second switch and bring its tab back while the keyboard stays in the other one: the tab
    shown and the editor typed into then differ. A notice whose pane no longer holds the focus is
    stale and is dropped."""

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.screen.focused
        if focused is None or event.tab_pane not in focused.ancestors_with_self:
            event.stop()
            event.prevent_default()  # TabbedContent's own handler would make the pane active
