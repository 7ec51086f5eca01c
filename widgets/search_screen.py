"""Search in files (Ctrl+Shift+F): `session.search`, results open the file at the line."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from simulator.session import SearchMatch, Session
from widgets.coalesce import Coalesced
from widgets.keymap import SEARCH_BINDINGS


class SearchScreen(ModalScreen[tuple[str, int] | None]):
    """Type a text, Enter searches; pick a match to open it (dismisses with (path, line))."""

    DEFAULT_CSS = """
    SearchScreen { align: center top; }
    SearchScreen > Vertical {
        width: 90%; max-width: 120; height: 80%; margin-top: 1;
        background: $surface; border: round $primary; padding: 0 1;
    }
    SearchScreen Input { margin-bottom: 0; }
    SearchScreen #search-summary { height: 1; color: $text-muted; }
    SearchScreen OptionList { height: 1fr; border: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(SEARCH_BINDINGS)

    def __init__(self, session: Session, query: str = "") -> None:
        super().__init__()
        self.session = session
        self.query_text = query
        self.matches: list[SearchMatch] = []
        self._pattern = query
        self._search = Coalesced(self, self._search_once, "search")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Input(self.query_text, placeholder="Search in files (Enter)", id="search-input")
            yield Static("Type a text and press Enter.", id="search-summary")
            yield OptionList(id="search-results")

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.search(event.value)

    def search(self, pattern: str) -> None:
        self._pattern = pattern
        self._search()

    async def _search_once(self) -> None:
        pattern = self._pattern
        summary = self.query_one("#search-summary", Static)
        summary.update("Searching…")
        try:
            matches = await self.session.search(pattern)
        except Exception as exc:  # one sentence in the screen
            summary.update(f"The search failed: {exc}")
            return
        self.matches = matches
        results = self.query_one("#search-results", OptionList)
        results.clear_options()
        for match in matches:
            row = Text()
            row.append(f"{match.path}:{match.line}", "bold")
            row.append("  " + match.text.strip()[:200])
            results.add_option(Option(row))
        files = len({m.path for m in matches})
        summary.update(
            f"{len(matches)} matches in {files} files" if matches else f"No match for {pattern!r}."
        )
        if matches:
            results.highlighted = 0

    @on(OptionList.OptionSelected, "#search-results")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        match = self.matches[event.option_index]
        self.dismiss((match.path, match.line))

    def action_focus_results(self) -> None:
        self.query_one("#search-results", OptionList).focus()

    def action_dismiss_search(self) -> None:
        self.dismiss(None)
