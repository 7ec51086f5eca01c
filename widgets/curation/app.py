"""`reposim curate PATH|DATASET`: the curation screen on its own."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from simulator.dataset.schema import Problem
from simulator.harness.target import find_targets
from simulator.harness.workflow import HarnessOptions, new_problem
from simulator.session import Session
from themes import DEFAULT_THEME
from widgets.curation.screen import CurationScreen
from widgets.theming import ThemeSet


def target_problems(session: Session, selectors: list[str] | None = None) -> list[Problem]:
    """One problem without a harness for each function of the session's repository."""
    targets = find_targets(session.source, selectors=selectors)
    return [new_problem(session, target) for target in targets]


class CurationApp(App[None]):
    # the screen's CSS is loaded when it is pushed; the app carries it for the first frame
    CSS_PATH = str(Path(__file__).with_name("curation.tcss"))

    def __init__(
        self,
        session: Session,
        problems: list[Problem],
        *,
        export_path: Path,
        options: HarnessOptions | None = None,
        by: str | None = None,
        theme_name: str | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.screen_args = (problems, export_path, options, by)
        self.themes = ThemeSet()
        self._theme_name = theme_name or DEFAULT_THEME

    def on_mount(self) -> None:
        for theme in self.themes.app_themes.values():
            self.register_theme(theme)
        if self._theme_name in self.themes.app_themes:
            self.theme = self._theme_name
        problems, export_path, options, by = self.screen_args
        screen = CurationScreen(
            self.session, problems, export_path=export_path, options=options, by=by
        )
        self.push_screen(screen, lambda _: self.exit())  # closing the screen ends the app
