"""Colour themes as data: one TOML file per theme in this folder (no Textual here).

Each file has `name`, `dark`, an `[app]` table (Textual theme colours) and an `[editor]` table
(gutter, cursor, selection and `[editor.syntax]`: a Rich style per tree-sitter capture name).
The UI turns them into a Textual `Theme` and a `TextAreaTheme` (widgets/theming.py).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

THEMES_DIR = Path(__file__).parent
DEFAULT_THEME = "reposim-dark"


class ThemeError(Exception):
    """A theme file that is missing or malformed; the message is one sentence."""


@dataclass(frozen=True)
class ThemeData:
    name: str
    dark: bool
    app: dict[str, str]
    editor: dict[str, str]
    syntax: dict[str, str] = field(default_factory=dict)


def theme_names() -> list[str]:
    return sorted(path.stem for path in THEMES_DIR.glob("*.toml"))


def load_theme(name: str) -> ThemeData:
    path = THEMES_DIR / f"{name}.toml"
    if not path.is_file():
        raise ThemeError(f"There is no theme named {name!r} (known: {', '.join(theme_names())}).")
    try:
        raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ThemeError(f"The theme file {path} cannot be read: {exc}.") from None
    editor = dict(raw.get("editor", {}))
    syntax = editor.pop("syntax", {})
    return ThemeData(
        name=str(raw.get("name", name)),
        dark=bool(raw.get("dark", True)),
        app={k: str(v) for k, v in raw.get("app", {}).items()},
        editor={k: str(v) for k, v in editor.items()},
        syntax={k: str(v) for k, v in syntax.items()},
    )


def load_all() -> list[ThemeData]:
    return [load_theme(name) for name in theme_names()]
