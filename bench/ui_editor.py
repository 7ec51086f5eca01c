"""Editor on a 20k-line Python file: stock TextArea vs our CodeEditor, in one run, headless.

Measures, for each editor, in a Textual app under App.run_test:
  - open: from mounting the editor with the file's text to the first frame painted;
  - keystroke: a printable key in the middle of the file: the key handler, the edit and the
    rendering of every visible line (median and p95); and the same through Pilot.press, whose
    idle detection adds at least 60 ms of sleeps per key to both editors.
Plus opening the file the way a user does, EditorPane.open_file (read through a local Session,
recorded; editor; tab), beside CodeEditor mounted alone, interleaved, --repeats times: to the
first frame painted with the text and to the first frame after the parse (highlighted).
Targets (issue 4): open <= 0.3 s (stock about 1.3 s), keystroke <= 30 ms (stock: hundreds of ms).
Run: uv run python bench/ui_editor.py [--lines 20000] [--keys 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _report import ms, percentile, table
from textual import events
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import TextArea

from simulator.session import Session
from widgets.code_editor import CodeEditor
from widgets.editor_pane import EditorPane

TEMPLATE = '''

class Widget{n}(Base):
    """A widget, number {n}, with a docstring
    that spans two lines."""

    LIMIT = {n} * 2  # a class constant

    def __init__(self, name: str, size: int = {n}) -> None:
        super().__init__()
        self.name = f"widget-{{name}}-{n}"
        self.size = size

    def area(self, factor: float = 1.5) -> float:
        if self.size > 10 and not self.name.startswith("x"):
            return self.size * factor
        return [value for value in range(self.size)][-1] / 3.0
'''


def python_source(lines: int) -> str:
    parts = ['"""A large generated module."""\n\nimport os\nfrom typing import Any\n\n\n']
    count = 3
    n = 0
    while count < lines:
        block = TEMPLATE.format(n=n)
        parts.append(block)
        count += block.count("\n")
        n += 1
    return "".join(parts)


class Host(App[None]):
    def compose(self) -> ComposeResult:
        return iter(())


async def measure(
    make: type[TextArea] | None, text: str, keys: int
) -> tuple[float, float, list[float], list[float]]:
    """(open to first frame, open to highlighted frame, keystrokes through Pilot, keystroke
    work) for one editor class."""
    app = Host()
    async with app.run_test(size=(160, 48)) as pilot:
        start = time.perf_counter()
        # The same options for both: line numbers, no soft wrap (code editors' default).
        if make is CodeEditor:
            editor: TextArea = CodeEditor(
                text, path="big.py", show_line_numbers=True, soft_wrap=False
            )
        else:
            editor = TextArea(text, language="python", show_line_numbers=True, soft_wrap=False)
        await app.mount(editor)
        await pilot.pause()
        opened = time.perf_counter() - start
        # CodeEditor paints the text first and parses right after; wait for the colours.
        while isinstance(editor, CodeEditor) and editor.document.needs_parse:  # type: ignore[attr-defined]
            await pilot.pause(0.01)
        await pilot.pause()
        highlighted = time.perf_counter() - start
        editor.focus()
        middle = editor.document.line_count // 2
        editor.move_cursor((middle, 8), center=True)
        await pilot.pause()
        times = []
        for index in range(keys):
            key = "abcdefghij"[index % 10]
            start = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            times.append(time.perf_counter() - start)
        assert editor.document[middle].count("a") >= 1
        # The same keystroke without Pilot's idle detection (which sleeps 20 ms at least three
        # times per key): the key handler, the edit, and rendering every visible line of the
        # widget as the compositor asks for them.
        work = []
        visible = editor.region.reset_offset
        for index in range(keys):
            key = "klmnopqrst"[index % 10]
            start = time.perf_counter()
            await editor._on_key(events.Key(key, key))
            editor.render_lines(visible)
            work.append(time.perf_counter() - start)
            await pilot.pause()
        assert "k" in editor.document[middle]
    return opened, highlighted, times, work


class FrameClock:
    """When CodeEditor frames are painted: the first one, and the first after the parse (the
    compositor asks the editor for its lines for each frame it paints)."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.highlighted: float | None = None
        self._render = CodeEditor.render_lines

    def __enter__(self) -> FrameClock:
        clock = self

        def render_lines(editor: CodeEditor, crop: Region) -> list[Strip]:
            lines = clock._render(editor, crop)
            now = time.perf_counter()
            if clock.first is None:
                clock.first = now
            elif clock.highlighted is None and not editor.document.needs_parse:  # type: ignore[attr-defined]
                clock.highlighted = now
            return lines

        CodeEditor.render_lines = render_lines  # type: ignore[method-assign, assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        CodeEditor.render_lines = self._render  # type: ignore[method-assign]


async def frames(pilot: Pilot[None], clock: FrameClock, start: float) -> tuple[float, float]:
    while clock.highlighted is None:
        await pilot.pause(0.01)
    assert clock.first is not None
    return clock.first - start, clock.highlighted - start


async def widget_open(text: str) -> tuple[float, float]:
    """(first frame, highlighted frame) of CodeEditor mounted alone with the text."""
    app = Host()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        with FrameClock() as clock:
            start = time.perf_counter()
            await app.mount(CodeEditor(text, path="big.py", show_line_numbers=True))
            return await frames(pilot, clock, start)


async def pane_open(repo: Path, trajectory: Path) -> tuple[float, float]:
    """(first frame, highlighted frame) of EditorPane.open_file: read through a local Session
    (recorded), editor, tab. The pane indexes the workspace from its mount, as in the app."""
    session = await Session.open(repo, trajectory_path=trajectory)
    pane = EditorPane(session)

    class PaneHost(App[None]):
        def compose(self) -> ComposeResult:
            yield pane

    try:
        async with PaneHost().run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            with FrameClock() as clock:
                start = time.perf_counter()
                await pane.open_file("big.py")
                return await frames(pilot, clock, start)
    finally:
        await session.close()


async def open_paths(text: str, repeats: int) -> dict[str, list[float]]:
    """Both ways, interleaved, `repeats` times; the pane goes first, so its first open is the
    first CodeEditor of the process (highlight query compiled then), as in the app."""
    out: dict[str, list[float]] = {"pane": [], "pane lit": [], "widget": [], "widget lit": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / "big.py").write_text(text)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)  # noqa: ASYNC221
        for index in range(repeats):
            first, lit = await pane_open(repo, Path(tmp) / f"t{index}.jsonl")
            out["pane"].append(first)
            out["pane lit"].append(lit)
            first, lit = await widget_open(text)
            out["widget"].append(first)
            out["widget lit"].append(lit)
    return out


def distribution(values: list[float]) -> str:
    return (
        f"median {ms(statistics.median(values))}  p95 {ms(percentile(values, 0.95))}  "
        f"max {ms(max(values))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--keys", type=int, default=40, help="keystrokes in our editor")
    parser.add_argument("--stock-keys", type=int, default=8, help="keystrokes in stock TextArea")
    parser.add_argument("--repeats", type=int, default=9, help="opens through the pane (and alone)")
    args = parser.parse_args()
    text = python_source(args.lines)
    lines = text.count("\n")
    opens = asyncio.run(open_paths(text, args.repeats))
    stock_open, stock_lit, stock_keys, stock_work = asyncio.run(
        measure(TextArea, text, args.stock_keys)
    )
    ours_open, ours_lit, ours_keys, ours_work = asyncio.run(measure(CodeEditor, text, args.keys))

    def keys(values: list[float]) -> str:
        return f"median {ms(statistics.median(values))}  p95 {ms(percentile(values, 0.95))}"

    print(
        table(
            f"Editor, {lines}-line Python file with tree-sitter highlighting, 160x48 "
            "(machine shared with other jobs; figures are noisy)",
            [
                (
                    "open to first frame",
                    f"stock TextArea {ms(stock_open)}",
                    f"CodeEditor {ms(ours_open)}  ({stock_open / ours_open:.1f}x faster)",
                ),
                (
                    "open to highlighted frame",
                    f"stock TextArea {ms(stock_lit)}",
                    f"CodeEditor {ms(ours_lit)}  ({stock_lit / ours_lit:.1f}x faster)",
                ),
                (
                    f"open to first frame, {args.repeats} opens",
                    f"CodeEditor alone {distribution(opens['widget'])}",
                    f"EditorPane.open_file via Session {distribution(opens['pane'])}",
                ),
                (
                    f"open to highlighted frame, {args.repeats} opens",
                    f"CodeEditor alone {distribution(opens['widget lit'])}",
                    f"EditorPane.open_file via Session {distribution(opens['pane lit'])}",
                ),
                (
                    "first open of the process (highlight query compiled)",
                    "-",
                    f"EditorPane {ms(opens['pane'][0])} first frame, "
                    f"{ms(opens['pane lit'][0])} highlighted",
                ),
                (
                    "keystroke: handler + edit + render",
                    f"stock TextArea {keys(stock_work)}",
                    f"CodeEditor {keys(ours_work)}  "
                    f"({statistics.median(stock_work) / statistics.median(ours_work):.0f}x faster)",
                ),
                (
                    "keystroke via Pilot (+>=60 ms idle waits)",
                    f"stock TextArea {keys(stock_keys)}",
                    f"CodeEditor {keys(ours_keys)}  "
                    f"({statistics.median(stock_keys) / statistics.median(ours_keys):.0f}x faster)",
                ),
            ],
        )
    )


if __name__ == "__main__":
    main()
