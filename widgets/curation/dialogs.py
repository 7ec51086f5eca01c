"""The curation screen's dialogs: a line of text, an export path, the surviving mutants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static

from widgets.curation.keys import SURVIVORS_BINDINGS
from widgets.keybindings import default_bindings


class AskText(ModalScreen[str | None]):
    """One line of text (a rejection's reason, a note); Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("ask_text"))

    def __init__(self, prompt: str) -> None:
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Label(self.prompt)
            yield Input(id="ask-input")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class AskYesNo(ModalScreen[bool]):
    """A question with two answers: y (or Enter) says yes; n or Escape says no."""

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("ask_yes_no"))

    def __init__(self, question: str, hint: str) -> None:
        super().__init__()
        self.question = question
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Label(self.question)
            yield Static(self.hint, id="ask-hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


@dataclass(frozen=True)
class ExportChoice:
    path: Path
    accepted_only: bool = False


HINT = "Enter exports · Tab then Space: accepted only · Esc cancels"


class AskExportPath(ModalScreen[ExportChoice | None]):
    """Where to export, and whether only the accepted problems: the default is filled in,
    Enter accepts, Escape cancels. An existing file is replaced only after a second Enter on
    the same name; a missing folder is said."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: Path, count: int, accepted: int = 0) -> None:
        super().__init__()
        self.default = default
        self.count = count
        self.accepted = accepted
        self._confirmed: Path | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Label(f"Export {self.count} problems (JSON lines) to:")
            yield Input(str(self.default), id="ask-input")
            yield Checkbox(f"Accepted only ({self.accepted} of {self.count})", id="ask-accepted")
            yield Static(HINT, id="ask-hint")

    @on(Checkbox.Changed)
    def _only_changed(self, event: Checkbox.Changed) -> None:
        what = f"{self.accepted} accepted" if event.value else f"{self.count}"
        self.query_one(Label).update(f"Export {what} problems (JSON lines) to:")
        self.query_one(Input).focus()  # Enter exports from there

    def _hint(self, text: str, *, warn: bool = False) -> None:
        hint = self.query_one("#ask-hint", Static)
        hint.update(text)
        hint.set_class(warn, "-warning")

    @on(Input.Changed)
    def _changed(self) -> None:
        if self._confirmed is not None:
            self._confirmed = None
            self._hint(HINT)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self._hint("Give a file name, or Esc to cancel.", warn=True)
            return
        path = Path(text).expanduser()
        path = path if path.is_absolute() else (Path.cwd() / path)
        if path.is_dir():
            self._hint(f"{path} is a folder; give a file name.", warn=True)
            return
        if not path.parent.is_dir():
            self._hint(f"There is no folder {path.parent}.", warn=True)
            return
        if path.exists() and self._confirmed != path:
            self._confirmed = path
            self._hint(
                f"{path.name} exists: Enter again replaces it, or change the name.", warn=True
            )
            return
        self.dismiss(ExportChoice(path, self.query_one(Checkbox).value))

    def action_cancel(self) -> None:
        self.dismiss(None)


def diff_content(diff: str) -> Content:
    """A unified diff with removed lines in the error colour and added ones in success's."""
    parts: list[Any] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            parts.append((line + "\n", "$text-muted"))
        elif line.startswith("@@"):
            parts.append((line + "\n", "$text-accent"))
        elif line.startswith("-"):
            parts.append((line + "\n", "$text-error"))
        elif line.startswith("+"):
            parts.append((line + "\n", "$text-success"))
        else:
            parts.append(line + "\n")
    return Content.assemble(*parts).rstrip()


class SurvivorsScreen(ModalScreen[None]):
    """The surviving mutants of one harness, each as its diff: what the harness lets through.
    Up/Down/PgUp/PgDn scroll, n/p move to the next/previous mutant, e marks the current one
    equivalent (or takes the mark back), Escape (or q) closes."""

    BINDINGS: ClassVar[list[BindingType]] = list(SURVIVORS_BINDINGS)

    def __init__(
        self,
        name: str,
        figures: dict[str, Any],
        never_run: set[int] | None = None,
        on_equivalent: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        """`figures`: the harness's mutation figures; `never_run`: lines the harness does not
        execute (a mutant there survives because nothing runs it, not because the tests check
        too little); `on_equivalent(mutant)` marks or unmarks one and returns the new figures."""
        super().__init__()
        self.name_text = name
        self.figures = figures
        self.survivors = sorted(
            [*(figures.get("survivors") or []), *(figures.get("marked_equivalent") or [])],
            key=lambda m: (int(m.get("line") or 0), str(m.get("id"))),
        )
        self.never_run = never_run or set()
        self.on_equivalent = on_equivalent
        self.at = 0

    def _title(self) -> str:
        figures = self.figures
        marked = len(figures.get("marked_equivalent") or [])
        left = f"; {marked} marked equivalent, not counted" if marked else ""
        return (
            f"{self.name_text}: {len(figures.get('survivors') or [])} of {figures.get('total')} "
            f"mutants survive the harness (each is a change its tests do not notice){left}"
        )

    def _head(self, number: int, survivor: dict[str, Any]) -> str:
        marked = [m.get("description") for m in self.figures.get("marked_equivalent") or []]
        possible = self.figures.get("equivalent") or []
        description = survivor.get("description")
        text = (
            f"{number}/{len(self.survivors)}  {description}  "
            f"({survivor.get('operator', 'mutant')} {survivor.get('id', '')})"
        )
        if description in marked:
            return text + "  · ≡ marked equivalent: not counted in the score (e takes it back)"
        if survivor.get("line") in self.never_run:
            text += "  · the harness never runs this line"
        if description in possible:
            text += "  · the repository's tests miss it too: possibly equivalent"
        return text

    def compose(self) -> ComposeResult:
        with Vertical(id="survivors"):
            yield Static(self._title(), id="survivors-title", markup=False)
            with VerticalScroll(id="survivors-list"):
                for number, survivor in enumerate(self.survivors, start=1):
                    yield Static(
                        self._head(number, survivor),
                        classes="survivor-head" + (" -current" if number == 1 else ""),
                        markup=False,
                    )
                    diff = str(survivor.get("diff") or "")
                    yield Static(
                        diff_content(diff)
                        if diff
                        else Content(
                            "no diff was recorded for it: press m to run the mutants again"
                        ),
                        classes="survivor-diff",
                    )
            yield Static(
                "↑↓ PgUp PgDn scroll · n/p next/previous mutant · e equivalent (not counted) · "
                "Esc closes",
                id="survivors-hint",
            )

    def on_mount(self) -> None:
        self.query_one("#survivors-list").focus()

    def action_jump(self, delta: int) -> None:
        heads = list(self.query(".survivor-head"))
        if not heads:
            return
        heads[self.at].remove_class("-current")
        self.at = max(0, min(self.at + delta, len(heads) - 1))
        heads[self.at].add_class("-current")
        self.query_one("#survivors-list", VerticalScroll).scroll_to_widget(
            heads[self.at], top=True, animate=False
        )

    def action_equivalent(self) -> None:
        """Mark the current mutant (the highlighted head: n/p move it) equivalent, or take
        the mark back; the curation screen records and saves the decision."""
        if self.on_equivalent is None or not self.survivors:
            return
        self.figures = self.on_equivalent(self.survivors[self.at])
        self.query_one("#survivors-title", Static).update(self._title())
        for number, (head, survivor) in enumerate(
            zip(self.query(".survivor-head"), self.survivors, strict=True), start=1
        ):
            cast(Static, head).update(self._head(number, survivor))

    def action_close(self) -> None:
        self.dismiss(None)
