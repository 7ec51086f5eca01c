"""The user's UI settings: ~/.config/reposim/config.toml (`[ui] theme`) and keymap.toml.

Both files are optional. A malformed file is reported in one sentence and otherwise ignored, so
that a typo never keeps the app from starting.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.paths import config_dir


@dataclass
class UiSettings:
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """One sentence per file that could not be used."""


def _read_toml(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problems.append(f"{path} was ignored because it cannot be read: {exc}.")
        return {}


def load_settings(directory: Path | None = None) -> UiSettings:
    directory = directory or config_dir()
    problems: list[str] = []
    config = _read_toml(directory / "config.toml", problems)
    ui = config.get("ui", {})
    theme = ui.get("theme") if isinstance(ui, dict) else None
    keymap: dict[str, str] = {}
    for key, value in _read_toml(directory / "keymap.toml", problems).items():
        if isinstance(value, str):
            keymap[key] = value
        else:
            problems.append(f'keymap.toml: {key} must be a string of keys like "ctrl+s".')
    return UiSettings(
        theme=theme if isinstance(theme, str) else None, keymap=keymap, problems=problems
    )


def save_theme(theme: str, directory: Path | None = None) -> Path:
    """Persist `[ui] theme` in config.toml, keeping the rest of the file (and its comments)."""
    import tomlkit  # only needed when the theme changes; keeps it off the start-up path

    directory = directory or config_dir()
    path = directory / "config.toml"
    document = (
        tomlkit.parse(path.read_text(encoding="utf-8")) if path.is_file() else tomlkit.document()
    )
    ui = document.get("ui")
    if not isinstance(ui, dict):
        ui = tomlkit.table()
        document["ui"] = ui
    ui["theme"] = theme
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(tomlkit.dumps(document), encoding="utf-8")
    return path
