"""`reposim curate PATH|DATASET`: the curation screen on its own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType

from simulator.dataset.schema import Problem
from simulator.harness.target import TargetError, find_targets, matches
from simulator.harness.workflow import HarnessOptions, new_problem
from simulator.paths import config_dir
from simulator.session import Session
from themes import DEFAULT_THEME
from widgets.curation.keys import CURATION_BINDINGS, SURVIVORS_BINDINGS
from widgets.curation.screen import CurationScreen
from widgets.key_order import KeyOrderedApp
from widgets.keybindings import default_bindings
from widgets.settings import load_settings
from widgets.theming import ThemeSet

if TYPE_CHECKING:
    from simulator.agent.models import ModelClient


def target_problems(session: Session, selectors: list[str] | None = None) -> list[Problem]:
    """One problem without a harness for each function of the session's repository (those
    `selectors` pick); TargetError names the selectors that pick none."""
    targets = find_targets(session.source, selectors=selectors)
    problems = [new_problem(session, target) for target in targets]
    return select_problems(problems, selectors or [], where=str(session.source))


def select_problems(problems: list[Problem], selectors: list[str], *, where: str) -> list[Problem]:
    """The problems a selector picks (all without selectors). A selector that picks none is an
    error naming it: a mistyped --target must not leave a person curating fewer targets than
    they asked for without knowing."""
    if not selectors:
        return problems

    def picked(problem: Problem, selector: str) -> bool:
        target = problem.target
        return matches(str(target.get("id")), str(target.get("qualname")), selector)

    unknown = [s for s in selectors if not any(picked(p, s) for p in problems)]
    if unknown:
        names = ", ".join(repr(s) for s in unknown)
        raise TargetError(
            f"--target {names} picks no target in {where} (a target is a function's id "
            "path::name, its name, or a glob over ids; `reposim extract` lists them)."
        )
    return [p for p in problems if any(picked(p, s) for s in selectors)]


class CurationApp(KeyOrderedApp[None]):
    # the screen's CSS is loaded when it is pushed; the app carries it for the first frame
    CSS_PATH = str(Path(__file__).with_name("curation.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("single_screen_app"))

    def __init__(
        self,
        session: Session,
        problems: list[Problem],
        *,
        export_path: Path,
        options: HarnessOptions | None = None,
        by: str | None = None,
        theme_name: str | None = None,
        model: str | None = None,
        api_base: str | None = None,
        client: ModelClient | None = None,
    ) -> None:
        """`model`/`api_base` (or a ready `client`) name the model M regenerates harnesses
        with; without them, $REPOSIM_MODEL when M is first pressed, as the agent does."""
        super().__init__()
        self.session = session
        self._model = (model, api_base)
        self._client = client
        self.screen_args = (problems, export_path, options, by)
        self.themes = ThemeSet()
        self.settings = load_settings()  # keymap.toml remaps curation.* ids as in reposim open
        self.set_keymap(self.settings.keymap)
        self._theme_name = theme_name or self.settings.theme or DEFAULT_THEME

    async def model_client(self) -> ModelClient:
        """The model for the harness model generator (ModelConfigError when none is set)."""
        if self._client is None:
            from simulator.agent import litellm_client

            model, api_base = self._model
            # litellm loads in a thread: it takes seconds, the screen stays live meanwhile
            self._client = await asyncio.to_thread(litellm_client, model, api_base=api_base)
        return self._client

    def action_help(self) -> None:
        from widgets.help_screen import HelpScreen, rows_for

        if isinstance(self.screen, HelpScreen):
            return
        keymap = self.settings.keymap
        rows = rows_for("Curation", CURATION_BINDINGS, keymap)
        rows += rows_for("Survivors", SURVIVORS_BINDINGS, keymap)
        rows += rows_for("App", [b for b in self.BINDINGS if isinstance(b, Binding)], keymap)
        rows.append(("App", "Ctrl+P", "Every action by name (the command palette)", ""))
        rows.append(("App", "Ctrl+Q", "Quit (the session's trajectory is kept)", ""))
        self.push_screen(HelpScreen(rows, str(config_dir() / "keymap.toml")))

    def on_mount(self) -> None:
        for theme in self.themes.app_themes.values():
            self.register_theme(theme)
        if self._theme_name in self.themes.app_themes:
            self.theme = self._theme_name
        problems, export_path, options, by = self.screen_args
        screen = CurationScreen(
            self.session, problems, export_path=export_path, options=options, by=by
        )
        self._screen = screen
        self.push_screen(screen, lambda _: self.exit())  # closing the screen ends the app

    @property
    def saved_to(self) -> Path | None:
        """The file the screen saved the problems to, if it saved any."""
        screen = getattr(self, "_screen", None)
        return screen.export_path if screen is not None and screen.saved else None
