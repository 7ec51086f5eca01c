"""The curation screen's actions in the command palette (Ctrl+P): every key of the screen by
what it does, with its key and binding id, so nothing is reachable by key only."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from widgets.curation.keys import CURATION_BINDINGS
from widgets.help_screen import describe_keys


class CurationCommands(Provider):
    """`Curation: <what the key does>` for each binding of the curation screen."""

    def _entries(self) -> list[tuple[str, str, str]]:
        keymap = getattr(self.app, "settings", None)
        remapped: dict[str, str] = getattr(keymap, "keymap", {}) if keymap else {}
        out = []
        for binding in CURATION_BINDINGS:
            keys = remapped.get(binding.id or "", binding.key)
            title = f"Curation: {binding.tooltip or binding.description}"
            out.append((title, f"{describe_keys(keys)}  ({binding.id})", binding.action))
        return out

    def _run(self, action: str) -> None:
        self.app.call_later(self.screen.run_action, action)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(title), partial(self._run, action), help=help_text
                )

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)
