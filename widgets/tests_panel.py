"""The tests panel: F5 runs the session's tests; per-test outcomes; Enter opens a failure.
The command it runs is shown above the results, and can be changed there (kept per
repository, as `reposim open --test-command` keeps it)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from simulator import test_command
from simulator.session import Session
from simulator.testrun import DEFAULT_TEST_COMMAND, TestOutcome, TestRunResult, failure_reason
from widgets.keybindings import default_bindings

DEFAULT_SHOWN = "python -m pytest"  # what the default command is to a person


def shown_command(command: str | None) -> str:
    return DEFAULT_SHOWN if command in (None, "", DEFAULT_TEST_COMMAND) else str(command)


ICONS = {
    "passed": ("✓", "green"),
    "failed": ("✗", "red"),
    "error": ("!", "red"),
    "skipped": ("-", "yellow"),
}
ORDER = {"failed": 0, "error": 1, "skipped": 2, "passed": 3}


class TestsPanel(Widget):
    """Shows the last test run; failures first."""

    __test__ = False  # not a pytest class, despite the name

    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("tests"))

    DEFAULT_CSS = """
    TestsPanel { height: 1fr; }
    TestsPanel #tests-command-row { height: 1; }
    TestsPanel #tests-command-label { width: auto; padding: 0 1; color: $text-muted; }
    TestsPanel #tests-command { height: 1; border: none; padding: 0 1; width: 1fr; }
    TestsPanel #tests-command:focus { background: $boost; }
    TestsPanel #tests-summary { height: 1; padding: 0 1; color: $text-muted; }
    TestsPanel #tests-list { height: 1fr; border: none; }
    TestsPanel #tests-detail {
        height: 1fr; max-height: 60%; display: none; padding: 0 1;
        border-top: solid $panel-lighten-2;
    }
    TestsPanel #tests-detail.-shown { display: block; }
    """

    @dataclass
    class OpenLocation(Message):
        """Open `path` at `line` in the editor."""

        path: str
        line: int | None

    @dataclass
    class Finished(Message):
        result: TestRunResult

    def __init__(self, session: Session, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session
        self.result: TestRunResult | None = None
        self.running = False
        self._tests: list[TestOutcome] = []

    def compose(self) -> ComposeResult:
        with Horizontal(id="tests-command-row"):
            yield Label("F5 runs", id="tests-command-label")
            yield Input(
                self.session.test_command or "",
                placeholder=f"{DEFAULT_SHOWN} (type another command, Enter runs it)",
                id="tests-command",
                tooltip="The test command for this repository; Enter keeps it and runs it, "
                "an empty one goes back to the detected command",
            )
        yield Static("Press F5 to run the tests (e changes the command).", id="tests-summary")
        yield OptionList(id="tests-list")
        with VerticalScroll(id="tests-detail"):
            yield Static(id="tests-detail-text", markup=False)

    def run_tests(self) -> None:
        """Run the tests in a worker; a run already going is not interrupted or doubled."""
        if self.running:
            self.notify("The tests are already running.", severity="warning")
            return
        self.running = True
        self.run_worker(self._run(), group="tests")

    def action_edit_command(self) -> None:
        self.query_one("#tests-command", Input).focus()

    def action_leave_command(self) -> None:
        self.query_one("#tests-list", OptionList).focus()

    @on(Input.Submitted, "#tests-command")
    async def _command_set(self, event: Input.Submitted) -> None:
        """Keep the typed command for this repository (an empty one forgets it: the detected
        one again), show it, and run it."""
        event.stop()
        chosen = await asyncio.to_thread(test_command.choose, self.session.source, event.value)
        self.session.test_command = chosen
        event.input.value = chosen or ""
        self.notify(f"F5 runs {shown_command(chosen)} in this repository from now on.")
        self.query_one("#tests-list", OptionList).focus()
        self.run_tests()

    async def _run(self) -> None:
        summary = self.query_one("#tests-summary", Static)
        summary.update(f"Running {shown_command(self.session.test_command)}…")
        try:
            result = await self.session.run_tests()
        except Exception as exc:  # any failure to run is one sentence here
            summary.update(f"The tests could not run: {exc}")
            return
        finally:
            self.running = False
        self.show_result(result)
        self.post_message(self.Finished(result))

    def show_result(self, result: TestRunResult) -> None:
        self.result = result
        if not self.query("#tests-summary"):
            return  # the panel is unmounting (the app closing as a run ends): nothing to show in
        summary = self.query_one("#tests-summary", Static)
        options = self.query_one("#tests-list", OptionList)
        options.clear_options()
        self.query_one("#tests-detail").remove_class("-shown")
        verdict = "passed" if result.passed else "failed"
        summary.update(
            f"Tests {verdict}: {result.summary()} in {result.duration:.1f}s "
            f"({shown_command(result.command)})"
        )
        if not result.structured:
            self._tests = []
            lines = result.output.splitlines()[-200:]
            options.add_options([Option(Text(line), disabled=True) for line in lines])
            return
        self._tests = sorted(result.tests, key=lambda t: (ORDER.get(t.outcome, 9), t.id))
        options.add_options([self._option(test) for test in self._tests])
        if self._tests:
            options.highlighted = 0

    @staticmethod
    def _option(test: TestOutcome) -> Option:
        icon, colour = ICONS.get(test.outcome, ("?", "white"))
        row = Text(no_wrap=True, overflow="ellipsis")
        row.append(f"{icon} ", f"bold {colour}")
        row.append(test.id)
        if test.outcome in ("failed", "error"):
            # One line per test, always in the same order: id, why, where.
            reason = failure_reason(test.message)
            if reason:
                row.append(f"  {reason}", colour)
            if test.file:
                row.append(f"  {test.file}:{test.line or 1}", "dim")
        return Option(row)

    @on(OptionList.OptionHighlighted, "#tests-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """The highlighted failure's whole message and traceback, under the list."""
        index = event.option_index
        detail = self.query_one("#tests-detail")
        test = self._tests[index] if 0 <= index < len(self._tests) else None
        if test is None or test.outcome not in ("failed", "error") or not test.message:
            detail.remove_class("-shown")
            return
        self.query_one("#tests-detail-text", Static).update(Text(test.message))
        detail.add_class("-shown")
        detail.scroll_home(animate=False)

    @on(OptionList.OptionSelected, "#tests-list")
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if not 0 <= index < len(self._tests):
            return
        test = self._tests[index]
        if test.file:
            self.post_message(self.OpenLocation(test.file, test.line))
        else:
            self.notify(f"{test.id} has no file location.", severity="warning")
