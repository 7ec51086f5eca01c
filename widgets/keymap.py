"""The app's key bindings, each with an id so that ~/.config/reposim/keymap.toml can remap it.

keymap.toml maps binding ids to keys, e.g.

    "app.toggle_tree" = "ctrl+e"
    "app.run_tests" = "f5,ctrl+t"

Panel toggles are priority bindings (they work while the terminal has focus, as in VS Code).
Legacy terminals cannot tell Ctrl+Shift+F from Ctrl+F, nor Ctrl+` from Ctrl+Space, so those
actions also carry a second key that every terminal sends.
"""

from __future__ import annotations

from enum import StrEnum
from typing import cast

from textual import _ansi_sequences
from textual.binding import Binding


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

APP_BINDINGS: list[Binding] = [
    Binding("ctrl+p", "quick_open", "Files", id="app.quick_open", tooltip="Quick-open a file"),
    Binding(
        "ctrl+shift+p,f2",
        "command_palette",
        "Commands",
        id="app.command_palette",
        tooltip="Every action by name",
        priority=True,
    ),
    Binding(
        "ctrl+b",
        "toggle_tree",
        "Tree",
        id="app.toggle_tree",
        tooltip="Show or hide the file tree",
        priority=True,
    ),
    Binding(
        "ctrl+grave_accent,ctrl+@",
        "toggle_terminal",
        "Terminal",
        id="app.toggle_terminal",
        tooltip="Focus, show or hide the terminal panel",
        priority=True,
    ),
    Binding(
        "ctrl+j",
        "toggle_agent",
        "Agent",
        id="app.toggle_agent",
        tooltip="Show or hide the agent pane",
        priority=True,
    ),
    Binding("f5", "run_tests", "Tests", id="app.run_tests", tooltip="Run the tests", priority=True),
    Binding(
        "ctrl+shift+f,f6",
        "search_files",
        "Search",
        id="app.search_files",
        tooltip="Search in files",
        priority=True,
    ),
    Binding(
        "ctrl+shift+g,f7",
        "show_changes",
        "Changes",
        id="app.show_changes",
        tooltip="The diff of the workspace since the session started",
        priority=True,  # TextArea binds F7 to select-all
    ),
    Binding("ctrl+s", "save", "Save", id="app.save", show=False, tooltip="Save the open file"),
    Binding("f1", "help", "Help", id="app.help", tooltip="Keys and commands", priority=True),
    Binding(
        "alt+1", "focus_pane('tree')", "Focus tree", id="app.focus_tree", show=False, priority=True
    ),
    Binding(
        "alt+2",
        "focus_pane('editor')",
        "Focus editor",
        id="app.focus_editor",
        show=False,
        priority=True,
    ),
    Binding(
        "alt+3",
        "focus_pane('panel')",
        "Focus panel",
        id="app.focus_panel",
        tooltip="Focus the bottom panel; again: its next tab (Terminal, Tests, Changes)",
        show=False,
        priority=True,
    ),
    Binding(
        "alt+4",
        "focus_pane('agent')",
        "Focus agent",
        id="app.focus_agent",
        tooltip="The agent pane: a pending approval first, else the task input (Esc: the cards)",
        show=False,
        priority=True,
    ),
    Binding(
        "f10",
        "zoom",
        "Zoom",
        id="app.zoom",
        tooltip="The pane with the keyboard fills the screen; F10 again puts it back",
        show=False,
        priority=True,
    ),
    Binding("alt+left", "resize_tree(-4)", "Narrower tree", id="app.tree_narrower", show=False),
    Binding("alt+right", "resize_tree(4)", "Wider tree", id="app.tree_wider", show=False),
    Binding("alt+up", "resize_panel(2)", "Taller panel", id="app.panel_taller", show=False),
    Binding("alt+down", "resize_panel(-2)", "Shorter panel", id="app.panel_shorter", show=False),
    Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    # Workflows on the function under the cursor / the repository (widgets/workflow_entries.py)
    Binding(
        "f9",
        "workflow('codegen')",
        "Codegen",
        id="app.workflow_codegen",
        show=False,
        tooltip="Generate the function under the cursor with a model: pass@k",
    ),
    Binding(
        "shift+f9",
        "workflow('harness')",
        "Model harness",
        id="app.workflow_harness",
        show=False,
        tooltip="A harness for the function under the cursor, written by a model",
    ),
    Binding(
        "f4",
        "workflow('debug')",
        "Debug",
        id="app.workflow_debug",
        show=False,
        tooltip="The agent's model fixes the failing tests",
    ),
    Binding(
        "shift+f4",
        "workflow('perf')",
        "Perf",
        id="app.workflow_perf",
        show=False,
        tooltip="Time the function under the cursor at two commits",
    ),
]


SEARCH_BINDINGS: list[Binding] = [
    Binding("escape", "dismiss_search", "Close", id="search.close"),
    Binding("down", "focus_results", "Results", show=False, id="search.results"),
]

HELP_BINDINGS: list[Binding] = [
    Binding("escape,f1,q", "close", "Close", id="help.close"),
]


def binding_ids() -> list[str]:
    return [b.id for b in APP_BINDINGS if b.id]


def unknown_ids(keymap: dict[str, str], known: list[str]) -> list[str]:
    return sorted(set(keymap) - set(known))
