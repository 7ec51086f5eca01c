"""The screen as plain text rows, for tests that check what a person would read."""

from __future__ import annotations

from textual.app import App


def screen_rows(app: App[object]) -> list[str]:
    """Every row of the current screen as the terminal shows it, without styles."""
    return [strip.text for strip in app.screen._compositor.render_strips()]
