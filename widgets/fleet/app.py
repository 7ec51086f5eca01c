"""`reposim fleet FOLDER`: the fleet screen on its own."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType

from simulator.fleet import Fleet
from simulator.paths import config_dir
from themes import DEFAULT_THEME
from widgets.fleet.screen import FleetScreen
from widgets.key_order import KeyOrderedApp
from widgets.keybindings import default_bindings
from widgets.settings import load_settings
from widgets.theming import ThemeSet


class FleetApp(KeyOrderedApp[None]):
    CSS_PATH = str(Path(__file__).with_name("fleet.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("single_screen_app"))

    def __init__(
        self, fleet: Fleet, *, theme_name: str | None = None, interval: float = 0.25
    ) -> None:
        super().__init__()
        self.fleet = fleet
        self.interval = interval
        self.themes = ThemeSet()
        self.settings = load_settings()
        self.set_keymap(self.settings.keymap)
        self._theme_name = theme_name or self.settings.theme or DEFAULT_THEME

    def on_mount(self) -> None:
        for theme in self.themes.app_themes.values():
            self.register_theme(theme)
        if self._theme_name in self.themes.app_themes:
            self.theme = self._theme_name
        self.push_screen(FleetScreen(self.fleet, interval=self.interval))

    def action_help(self) -> None:
        from widgets.help_screen import HelpScreen, rows_for

        if isinstance(self.screen, HelpScreen):
            return
        from widgets.fleet.screen import FleetScreen as Screen

        keymap = self.settings.keymap
        rows = rows_for("Fleet", [b for b in Screen.BINDINGS if isinstance(b, Binding)], keymap)
        rows += rows_for("App", [b for b in self.BINDINGS if isinstance(b, Binding)], keymap)
        rows.append(("App", "Ctrl+Q", "Quit", ""))
        self.push_screen(HelpScreen(rows, str(config_dir() / "keymap.toml")))
