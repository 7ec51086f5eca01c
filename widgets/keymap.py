"""The app's key bindings (data: widgets/keybindings.json), each with an id so that
~/.config/reposim/keymap.toml can remap it, and the key sequences terminals send for them.

keymap.toml maps binding ids to keys, e.g.

    "app.toggle_tree" = "ctrl+e"
    "app.run_tests" = "f5,ctrl+t"
"""

from __future__ import annotations

from enum import StrEnum
from typing import cast

from textual import _ansi_sequences

from widgets.keybindings import default_bindings


class _AltDigit(StrEnum):
    """Alt+digit as key names, for Textual's sequence table."""

    ALT_1 = "alt+1"
    ALT_2 = "alt+2"
    ALT_3 = "alt+3"
    ALT_4 = "alt+4"


def route_alt_digits() -> None:
    """tmux, xterm and most Linux terminals send Alt+1 as ESC 1. Textual's sequence table reads
    ESC+digit as macOS Option characters (ESC 1 -> "¡"), so Alt+1..Alt+4 typed `¡™£¢` into the
    editor instead of switching panes. Read ESC 1..ESC 4 as alt+1..alt+4 (no character), which
    is what the pane bindings are; a typed "£" (its own UTF-8 character, not ESC 3) is unchanged."""
    table = cast("dict[str, object]", _ansi_sequences.ANSI_SEQUENCES_KEYS)
    for key in _AltDigit:
        table[f"\x1b{key.value[-1]}"] = (key,)


route_alt_digits()


class _EscKey(StrEnum):
    ALT_ENTER = "alt+enter"


def route_alt_enter() -> None:
    """xterm and tmux send Alt+Enter as ESC CR, which Textual reads as a plain Enter; read it as
    alt+enter (the editor's replace box: Enter replaces one match, Alt+Enter all of them)."""
    table = cast("dict[str, object]", _ansi_sequences.ANSI_SEQUENCES_KEYS)
    table["\x1b\r"] = (_EscKey.ALT_ENTER,)


route_alt_enter()

APP_BINDINGS = default_bindings("app")
SEARCH_BINDINGS = default_bindings("search")
HELP_BINDINGS = default_bindings("help")


def binding_ids() -> list[str]:
    return [b.id for b in APP_BINDINGS if b.id]


def unknown_ids(keymap: dict[str, str], known: list[str]) -> list[str]:
    return sorted(set(keymap) - set(known))
