"""Textual's Footer, recomposed once per burst of binding changes.

Textual's Footer schedules a full recompose (a new FooterKey per binding, each styled) for every
`bindings_updated_signal`, and opening a screen publishes it several times (mount, focus, each
reactive that refreshes bindings): the curation screen's footer was composed 7 times (96 keys)
while it opened, 100-190 ms of its first frame. A recompose reads the bindings as they are when it
runs, so one after the burst shows the same keys.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class CoalescedFooter(Footer):
    _recompose_pending = False

    def bindings_changed(self, screen: Screen) -> None:  # type: ignore[type-arg]
        self._bindings_ready = True
        if not screen.app.app_focus or self._recompose_pending:
            return
        if self.is_attached and screen is self.screen:
            self._recompose_pending = True
            self.call_after_refresh(self._recompose_once)

    async def _recompose_once(self) -> None:
        self._recompose_pending = False
        await self.recompose()
