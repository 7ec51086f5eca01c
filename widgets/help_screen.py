"""The help screen (F1): every key binding with its id, for remapping in keymap.toml."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static, TextArea

from widgets.keymap import HELP_BINDINGS

HelpRow = tuple[str, str, str, str]
"""(where, keys, what it does, binding id)."""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 100%; max-width: 120; height: 100%; max-height: 40;
        background: $surface; border: round $primary; padding: 0 1;
    }
    HelpScreen #help-intro { height: auto; color: $text-muted; margin-bottom: 1; }
    HelpScreen DataTable { height: 1fr; }
    HelpScreen #help-detail { height: auto; max-height: 3; color: $text; background: $boost; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(HELP_BINDINGS)

    def __init__(self, rows: list[HelpRow], keymap_path: str) -> None:
        super().__init__()
        self.rows = rows
        self.keymap_path = keymap_path

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                "RepoSim keys. Everything you do is recorded in the session's trajectory.\n"
                f'Remap a key in {self.keymap_path} by its id, e.g.  "app.toggle_tree" = '
                '"ctrl+e"; keys without an id are the text area\'s own. Up/Down/PgUp/PgDn '
                "scroll, Esc closes.",
                id="help-intro",
            )
            yield DataTable(cursor_type="row", zebra_stripes=True)
            # The highlighted row in full: on a narrow screen the table cuts the description.
            yield Static(id="help-detail")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # The id before the description: on a narrow screen the description is what gets cut.
        table.add_columns("Where", "Keys", "Id", "Action")
        for where, keys, what, binding_id in self.rows:
            table.add_row(where, keys, binding_id, what)
        table.focus()

    def on_data_table_row_highlighted(self, message: DataTable.RowHighlighted) -> None:
        where, keys, what, binding_id = self.rows[message.cursor_row]
        named = f"  ({binding_id})" if binding_id else ""
        self.query_one("#help-detail", Static).update(f"{where} · {keys}: {what}{named}")

    def action_close(self) -> None:
        self.dismiss(None)


def describe_keys(keys: str) -> str:
    """ "ctrl+grave_accent,ctrl+@" -> "Ctrl+` / Ctrl+@"."""
    names = {"grave_accent": "`", "question_mark": "?"}
    out = []
    for key in keys.split(","):
        parts = [names.get(p.strip(), p.strip()) for p in key.split("+")]
        out.append("+".join(p if len(p) == 1 else p.capitalize() for p in parts))
    return " / ".join(out)


def rows_for(where: str, bindings: list[Binding], keymap: dict[str, str]) -> list[HelpRow]:
    rows = []
    for binding in bindings:
        keys = keymap.get(binding.id, binding.key) if binding.id else binding.key
        what = binding.tooltip or binding.description
        rows.append((where, describe_keys(keys), what, binding.id or ""))
    return rows


# Keys everyone knows (with or without Shift), left out of the text area's rows.
_OBVIOUS = frozenset(
    {"up", "down", "left", "right", "home", "end", "pageup", "pagedown", "backspace", "delete"}
)


def text_area_rows(where: str, listed_keys: set[str]) -> list[HelpRow]:
    """The editor's built-in text keys (undo, redo, cut, copy, paste, delete line, word moves…)
    that no binding listed in F1 takes first. They have no id: Textual declares them."""
    rows = []
    for binding in TextArea.BINDINGS:
        if not isinstance(binding, Binding):
            continue
        keys = [
            key
            for key in (part.strip() for part in binding.key.split(","))
            if key not in listed_keys
            and not key.startswith("super+")
            and key.removeprefix("shift+") not in _OBVIOUS
        ]
        if keys:
            rows.append((where, describe_keys(",".join(keys)), binding.description, ""))
    return rows
