"""Turning theme data (themes/*.toml) into a Textual `Theme` and an editor `TextAreaTheme`."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from rich.style import Style
from textual.theme import Theme

from themes import ThemeData, load_all

if TYPE_CHECKING:  # the editor's widget loads with the first open file (issue 29)
    from textual.widgets import TextArea
    from textual.widgets.text_area import TextAreaTheme

EDITOR_THEME_PREFIX = "editor-"


def textual_theme(data: ThemeData) -> Theme:
    app = data.app
    return Theme(
        name=data.name,
        primary=app["primary"],
        secondary=app.get("secondary"),
        accent=app.get("accent"),
        warning=app.get("warning"),
        error=app.get("error"),
        success=app.get("success"),
        foreground=app.get("foreground"),
        background=app.get("background"),
        surface=app.get("surface"),
        panel=app.get("panel"),
        dark=data.dark,
    )


def text_area_theme(data: ThemeData) -> TextAreaTheme:
    from textual.widgets.text_area import TextAreaTheme

    editor = data.editor
    fg, bg = editor.get("foreground"), editor.get("background")
    return TextAreaTheme(
        name=EDITOR_THEME_PREFIX + data.name,
        base_style=Style(color=fg, bgcolor=bg),
        gutter_style=Style(color=editor.get("gutter"), bgcolor=bg),
        cursor_style=Style(color=bg, bgcolor=editor.get("cursor")),
        cursor_line_style=Style(bgcolor=editor.get("cursor_line")),
        cursor_line_gutter_style=Style(color=fg, bgcolor=editor.get("cursor_line")),
        bracket_matching_style=Style(bgcolor=editor.get("bracket"), bold=True),
        selection_style=Style(bgcolor=editor.get("selection")),
        syntax_styles={name: Style.parse(spec) for name, spec in data.syntax.items()},
    )


class ThemeSet:
    """Every theme in themes/, converted once."""

    def __init__(self) -> None:
        self.data = {theme.name: theme for theme in load_all()}
        self.app_themes = {name: textual_theme(d) for name, d in self.data.items()}

    @cached_property
    def editor_themes(self) -> dict[str, TextAreaTheme]:
        """The editor's colours per theme, made when the first editor asks."""
        return {name: text_area_theme(d) for name, d in self.data.items()}

    @property
    def names(self) -> list[str]:
        return list(self.data)

    def apply_to_editor(self, area: TextArea, theme_name: str) -> None:
        """Give an editor the colours of `theme_name` (a no-op for themes not from themes/)."""
        editor_theme = self.editor_themes.get(theme_name)
        if editor_theme is None:
            return
        if editor_theme.name not in area.available_themes:
            area.register_theme(editor_theme)
        area.theme = editor_theme.name
