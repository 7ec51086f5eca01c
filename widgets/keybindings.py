"""The default key bindings of every screen and pane, read from keybindings.json beside this
file: one section a screen or pane, one Textual `Binding` an entry, in the footer's order.
Whole-line `//` comments are allowed there (VS Code's keybindings.json has them too).

Kept apart from widgets/keymap.py, which also teaches Textual the key sequences terminals send:
a screen that takes its keys from here does not change how keys are read.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from textual.binding import Binding

DEFAULT_KEYBINDINGS = Path(__file__).with_name("keybindings.json")


@functools.cache
def _default_keymap() -> dict[str, tuple[Binding, ...]]:
    lines = DEFAULT_KEYBINDINGS.read_text(encoding="utf-8").splitlines()
    raw = json.loads("\n".join(line for line in lines if not line.lstrip().startswith("//")))
    return {name: tuple(Binding(**entry) for entry in entries) for name, entries in raw.items()}


def default_sections() -> list[str]:
    """The screens and panes of keybindings.json, in the file's order."""
    return list(_default_keymap())


def default_bindings(section: str) -> list[Binding]:
    """One screen's or pane's default keys, in the file's order (the footer's); a new list."""
    return list(_default_keymap()[section])
