"""Code-navigation lists for the editor: the outline of a file (Ctrl+Shift+O) and the callers
and callees of a function (Shift+F12). Both are a filter box over a list; Enter on an entry
dismisses the screen with the `NavTarget` to open."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from widgets.keybindings import default_bindings

if TYPE_CHECKING:  # annotations only: the code index loads after the first frame
    from simulator.analysis import CallRef, Symbol
    from simulator.analysis.session_index import CallHierarchy


@dataclass(frozen=True)
class NavTarget:
    """A place to open: workspace path, 1-based line, 0-based column in UTF-8 bytes (as
    tree-sitter counts; the editor converts it to characters)."""

    path: str
    line: int
    col: int = 0
    name: str = ""  # the symbol's (qualified) name: without a column the cursor goes to it


@dataclass(frozen=True)
class NavEntry:
    """One row of a navigation list; `target` None makes it a heading or an unreachable row."""

    label: Text
    key: str  # what the filter matches against
    target: NavTarget | None
    name: str = ""  # the symbol's own name, for ranking a filtered list


def _rank(entry: NavEntry, needle: str) -> int:
    """How well a filtered entry matches, best first: the exact name, a name that starts with
    the filter, a word of the name that does, the name containing it, then the rest (a match in
    the qualified name only: a method of a matching class)."""
    name = entry.name.lower()
    if name == needle:
        return 0
    if name.startswith(needle):
        return 1
    if any(part.startswith(needle) for part in name.split("_") if part):
        return 2
    if needle in name:
        return 3
    return 4


class NavListScreen(ModalScreen[NavTarget | None]):
    """A titled, filterable list of places; Enter opens the highlighted one, Esc closes."""

    DEFAULT_CSS = """
    NavListScreen { align: center top; }
    NavListScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 80%; margin-top: 2;
        background: $surface; border: round $primary; padding: 0 1;
    }
    NavListScreen #nav-title { height: auto; text-style: bold; margin-bottom: 1; }
    NavListScreen Input { margin-bottom: 1; }
    NavListScreen OptionList { height: auto; max-height: 30; border: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("codenav"))

    def __init__(
        self, title: str, entries: list[NavEntry], placeholder: str, *, ranked: bool = False
    ) -> None:
        super().__init__()
        self.title_text = title
        self.entries = entries
        self.placeholder = placeholder
        # A flat list of named entries (the outline) is sorted by how well each name matches
        # the filter (VS Code's Go to Symbol); one with headings keeps its order.
        self.ranked = ranked
        self._shown: list[NavEntry] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, id="nav-title")
            yield Input(placeholder=self.placeholder, id="nav-filter")
            yield OptionList(id="nav-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    @property
    def shown(self) -> list[NavEntry]:
        """The entries the filter lets through, in order."""
        return list(self._shown)

    def _fill(self, needle: str) -> None:
        needle = needle.strip().lower()
        self._shown = [e for e in self.entries if not needle or needle in e.key.lower()]
        if needle and self.ranked:  # stable: equal ranks keep source order
            self._shown.sort(key=lambda entry: _rank(entry, needle))
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(
            [Option(e.label, disabled=e.target is None) for e in self._shown]
            or [Option("Nothing matches.", disabled=True)]
        )
        first = next((i for i, e in enumerate(self._shown) if e.target is not None), None)
        options.highlighted = first

    @on(Input.Changed, "#nav-filter")
    def _filter(self, event: Input.Changed) -> None:
        self._fill(event.value)

    @on(Input.Submitted, "#nav-filter")
    def _submit(self, event: Input.Submitted) -> None:
        self._choose(self.query_one(OptionList).highlighted)

    @on(OptionList.OptionSelected, "#nav-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._choose(event.option_index)

    def _choose(self, index: int | None) -> None:
        if index is None or not 0 <= index < len(self._shown):
            return
        target = self._shown[index].target
        if target is not None:
            self.dismiss(target)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        if step > 0:
            options.action_cursor_down()
        else:
            options.action_cursor_up()

    def action_close(self) -> None:
        self.dismiss(None)


def outline_entries(path: str, symbols: list[Symbol]) -> list[NavEntry]:
    entries = []
    for symbol in symbols:
        label = Text("  " * symbol.depth)
        label.append(symbol.name, style="bold")
        label.append(f"  {symbol.kind}", style="dim")
        label.append(f"  :{symbol.line}", style="dim")
        entries.append(
            NavEntry(
                label,
                symbol.qualname,
                NavTarget(path, symbol.line, 0, symbol.name),
                symbol.name,
            )
        )
    return entries


def hierarchy_entries(hierarchy: CallHierarchy) -> list[NavEntry]:
    """Callers first (Enter opens the call site), then callees (Enter opens the definition
    when it resolved, else the call)."""
    entries = [NavEntry(Text(f"Callers ({len(hierarchy.callers)})", style="bold"), "", None)]
    entries.extend(_call_entry(ref, caller=True) for ref in hierarchy.callers)
    if not hierarchy.callers:
        entries.append(NavEntry(Text("  no calls found in the workspace", style="dim"), "", None))
    entries.append(NavEntry(Text(f"Callees ({len(hierarchy.callees)})", style="bold"), "", None))
    entries.extend(_call_entry(ref, caller=False) for ref in hierarchy.callees)
    if not hierarchy.callees:
        entries.append(NavEntry(Text("  calls nothing", style="dim"), "", None))
    return entries


def _call_entry(ref: CallRef, *, caller: bool) -> NavEntry:
    site = NavTarget(ref.path, ref.line, ref.col)
    caller_name = ref.caller.partition("::")[2] or ref.caller
    label = Text("  ")
    if caller:
        label.append(caller_name, style="bold")
        label.append(f"  {ref.path}:{ref.line}", style="dim")
        label.append(f"  {ref.expr}")
        return NavEntry(label, f"{caller_name} {ref.path} {ref.expr}", site)
    label.append(ref.expr, style="bold")
    if ref.location is not None:
        loc = ref.location
        target = NavTarget(loc.path, loc.line, loc.col, loc.name)
        label.append(f"  → {ref.location.path}:{ref.location.line}", style="dim")
    else:
        target = site
        label.append(f"  unresolved ({ref.reason or 'not in this workspace'})", style="dim")
    label.append(f"  at line {ref.line}", style="dim")
    return NavEntry(label, f"{ref.expr} {ref.location.path if ref.location else ''}", target)
