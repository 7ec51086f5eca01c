"""The terminal pane driven with Pilot on a real shell in a real local session."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from simulator.session import Session
from widgets.terminal_pane import TerminalPane, key_to_bytes
from widgets.terminal_screen import fg_of, palette, rgb

from .conftest import PaneApp, wait_for

PROMPT = "READY$ "


async def ready(pilot: Pilot[None]) -> TerminalPane:
    """The pane, focused, with a known prompt on screen."""
    pane = pilot.app.query_one(TerminalPane)
    pane.focus()
    await wait_for(pilot, lambda: pane.pty is not None and pane.bytes_read > 0)
    await pane.send(f"export PS1='{PROMPT}'\r".encode())
    await wait_for(pilot, lambda: pane.screen_text()[pane.term.y].startswith("READY$"))
    return pane


@asynccontextmanager
async def terminal(
    session: Session, size: tuple[int, int] = (100, 40), **options: Any
) -> AsyncIterator[tuple[PaneApp, Pilot[None], TerminalPane]]:
    """The editor above the terminal running headless at `size`, the terminal `ready`."""
    app = PaneApp(session, **options)
    async with app.run_test(size=size) as pilot:
        yield app, pilot, await ready(pilot)


def settled(pane: TerminalPane, after: str) -> bool:
    """The shell is back at its prompt right after running `after`."""
    rows, y = pane.screen_text(), pane.term.y
    return y > 0 and rows[y] == PROMPT.rstrip() and rows[y - 1] == PROMPT + after


def screen_has(pane: TerminalPane, text: str) -> bool:
    return any(text in row for row in pane.screen_text())


def at_prompt(pane: TerminalPane) -> bool:
    """The whole prompt is drawn (its last space included), the cursor after it, and readline
    has switched bracketed paste back on: the shell wrote everything it frames a command with."""
    rows, y = pane.screen_text(), pane.term.y
    return rows[y] == PROMPT.rstrip() and pane.term.x == len(PROMPT) and pane.term.bracketed_paste


async def test_typed_command_runs_and_its_output_shows(session: Session, tmp_path: Path) -> None:
    async with terminal(session) as (_, pilot, pane):
        await pilot.press(*"echo $((6 * 7))", "enter")
        await wait_for(pilot, lambda: "42" in pane.screen_text())
        await pilot.press(*"pwd", "enter")
        await wait_for(pilot, lambda: screen_has(pane, session.workspace_path))
    records = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    typed = "".join(r["payload"]["data"] for r in records if r.get("kind") == "terminal.input")
    shown = "".join(r["payload"]["data"] for r in records if r.get("kind") == "terminal.output")
    assert "echo $((6 * 7))\r" in typed
    assert "42" in shown


async def test_colours_are_parsed_and_rendered(session: Session) -> None:
    async with terminal(session) as (_, pilot, pane):
        await pane.send(
            b"printf '\\033[31mRED\\033[0m \\033[38;5;208mORANGE\\033[0m "
            b"\\033[38;2;10;20;30mDEEP\\033[0m\\n'\r"
        )
        await wait_for(pilot, lambda: "RED ORANGE DEEP" in pane.screen_text())
        row = pane.screen_text().index("RED ORANGE DEEP")
        assert fg_of(pane.term.cell(row, 0)[1]) == palette(1)
        assert fg_of(pane.term.cell(row, 4)[1]) == palette(208)
        assert fg_of(pane.term.cell(row, 11)[1]) == rgb(10, 20, 30)
        assert pane.term.cell(row, 3)[1] == 0
        await pilot.pause()
        strip = pane.render_line(row - int(pane.scroll_offset.y) + pane.term.history_size)
        red = next(s for s in strip if s.text.startswith("RED"))
        assert red.style is not None and red.style.color is not None
        assert red.style.color.number == 1


async def test_alternate_screen_round_trip_with_less(session: Session, project: Path) -> None:
    async with terminal(session) as (_, pilot, pane):
        await pilot.press(*"echo before-less", "enter")
        await wait_for(pilot, lambda: "before-less" in pane.screen_text())
        await pilot.press(*"less pkg/core.py", "enter")
        await wait_for(pilot, lambda: pane.term.alternate and screen_has(pane, "class Greeter"))
        assert not screen_has(pane, "before-less")
        await pilot.press("q")
        await wait_for(pilot, lambda: not pane.term.alternate)
        await wait_for(pilot, lambda: "before-less" in pane.screen_text())
        assert not screen_has(pane, "class Greeter")


async def test_resize_reaches_the_shell(session: Session) -> None:
    async with terminal(session) as (_, pilot, pane):
        cols, rows = pane.term.cols, pane.term.rows
        await pilot.press(*"stty size", "enter")
        await wait_for(pilot, lambda: f"{rows} {cols}" in pane.screen_text())
        await pilot.resize_terminal(130, 50)
        await wait_for(pilot, lambda: pane.term.cols != cols)
        new_cols, new_rows = pane.term.cols, pane.term.rows
        assert new_cols > cols and new_rows > rows
        await pilot.press(*"stty size", "enter")
        await wait_for(pilot, lambda: f"{new_rows} {new_cols}" in pane.screen_text())


async def test_five_megabytes_of_output_every_byte_accounted_for(
    session: Session, project: Path
) -> None:
    lines = [f"\x1b[3{i % 8}m{i:07d}\x1b[0m {'payload ' * (i % 9)}|\n" for i in range(100_000)]
    data = "".join(lines).encode()
    assert len(data) >= 5_000_000
    (Path(session.workspace_path) / "big.txt").write_bytes(data)
    async with terminal(session, (120, 40), scrollback=200_000) as (_, pilot, pane):
        # What the shell wraps around any command's output (echoed newline, the prompt and
        # readline's mode switches), measured on a command that prints nothing.
        await wait_for(pilot, lambda: at_prompt(pane))
        before = pane.bytes_read
        await pane.send(b"true\r")
        await wait_for(pilot, lambda: settled(pane, after="true") and at_prompt(pane))
        framing = pane.bytes_read - before - len("true")
        before = pane.bytes_read
        await pane.send(b"cat big.txt\r")
        # The shell sends back the echoed command, the file with \n -> \r\n, and the framing.
        expected = len("cat big.txt") + len(data) + data.count(b"\n") + framing
        # The new prompt is the last thing the shell writes: once it is drawn, all is in.
        await wait_for(
            pilot, lambda: pane.bytes_read - before >= expected and at_prompt(pane), timeout=120
        )
        assert pane.bytes_read - before == expected
        history = [*pane.term.history_text(), *pane.screen_text()]
        numbers = [row[:7] for row in history if row[:7].isdigit()]
        assert numbers == [f"{i:07d}" for i in range(100_000)]
        assert pane.screen_text()[pane.term.y] == PROMPT.rstrip()


async def test_copy_selection_to_the_clipboard(session: Session) -> None:
    async with terminal(session) as (app, pilot, pane):
        await pilot.press(*"echo copy-me-please", "enter")
        await wait_for(pilot, lambda: "copy-me-please" in pane.screen_text())
        row = pane.term.history_size + pane.screen_text().index("copy-me-please")
        assert pane.select((row, 5), (row, 14)) == "me-please"
        assert app.clipboard == "me-please"


async def test_mouse_drag_selects_and_copies(session: Session) -> None:
    async with terminal(session) as (app, pilot, pane):
        await pilot.press(*"echo dragged-text", "enter")
        await wait_for(pilot, lambda: "dragged-text" in pane.screen_text())
        # Back at the prompt, and the view scrolled to it: rows stay where they are.
        await wait_for(
            pilot,
            lambda: at_prompt(pane) and pane.scroll_offset.y == pane.max_scroll_y,
        )
        await pilot.pause()
        row = pane.screen_text().index("dragged-text") - int(pane.scroll_offset.y)
        row += pane.term.history_size
        await pilot.mouse_down(pane, offset=(0, row))
        await pilot.hover(pane, offset=(7, row))
        await pilot.mouse_up(pane, offset=(7, row))
        assert app.clipboard == "dragged"


async def test_bracketed_paste_reaches_the_shell_as_one_paste(session: Session) -> None:
    async with terminal(session) as (_, pilot, pane):
        assert pane.term.bracketed_paste  # bash's readline asks for it
        from textual import events

        pane.post_message(events.Paste("echo pasted-$((1+1))"))
        # The shell has the pasted text (it echoed it) before Enter is pressed.
        await wait_for(pilot, lambda: screen_has(pane, PROMPT + "echo pasted-$((1+1))"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: "pasted-2" in pane.screen_text())


async def test_exit_and_restart(session: Session) -> None:
    async with terminal(session) as (_, pilot, pane):
        await pilot.press(*"exit", "enter")
        await wait_for(pilot, lambda: pane.exited)
        assert screen_has(pane, "the shell has exited")
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.pty is not None and not pane.exited)
        pane = await ready(pilot)
        await pilot.press(*"echo back", "enter")
        await wait_for(pilot, lambda: "back" in pane.screen_text())


async def test_keys_use_the_shells_mode() -> None:
    assert key_to_bytes("up", None) == b"\x1b[A"
    assert key_to_bytes("up", None, app_cursor_keys=True) == b"\x1bOA"
    assert key_to_bytes("ctrl+c", None) == b"\x03"
    assert key_to_bytes("alt+enter", None) == b"\x1b\r"  # what the terminal sent for it
    assert key_to_bytes("ctrl+left", None) == b"\x1b[1;5D"
    assert key_to_bytes("alt+b", "b") == b"\x1bb"
    assert key_to_bytes("é", "é") == "é".encode()
    assert key_to_bytes("f5", None) == b"\x1b[15~"


@pytest.mark.parametrize("key", ["tab", "ctrl+c"])
async def test_tab_and_ctrl_c_go_to_the_shell(session: Session, key: str) -> None:
    async with terminal(session) as (app, pilot, pane):
        await pilot.press(key)
        assert app.focused is pane
        if key == "ctrl+c":
            # The foreground job has printed (so it runs) and is then the sleep itself: Ctrl+C
            # interrupts it whichever it is at that moment. It sleeps longer than the wait below:
            # only the interrupt lets the echo run in time.
            await pane.send(b"sh -c 'printf \"%s-%s\\n\" sleep started; exec sleep 600'\r")
            await wait_for(pilot, lambda: screen_has(pane, "sleep-started"))
            await pilot.press("ctrl+c")
            await pilot.press(*"echo interrupted", "enter")
            await wait_for(pilot, lambda: "interrupted" in pane.screen_text())


async def test_history_scrolls_back_and_typing_returns_to_the_bottom(session: Session) -> None:
    async with terminal(session, (100, 30)) as (_, pilot, pane):
        await pane.send(b"seq 1 500\r")
        await wait_for(pilot, lambda: "500" in pane.screen_text())
        # The view follows the output to the bottom (what is asserted next), once its last
        # repaint has taken in all of it: until then the view's bottom is an earlier one.
        await wait_for(
            pilot,
            lambda: (
                at_prompt(pane)
                and pane.virtual_size.height == pane.term.history_size + pane.term.rows
                and pane.max_scroll_y > 0
                and pane.scroll_offset.y == pane.max_scroll_y
            ),
        )
        bottom = pane.scroll_offset.y
        assert bottom == pane.max_scroll_y > 0
        await pilot.press("shift+pageup")
        await pilot.pause()
        assert pane.scroll_offset.y < bottom
        top = pane.term.line_at(int(pane.scroll_offset.y)).text()
        assert top.isdigit() and int(top) < 480
        drawn = "".join(segment.text for segment in pane.render_line(0)).strip()
        assert drawn == top
        await pilot.press("e")
        await pilot.pause()
        assert pane.scroll_offset.y == pane.max_scroll_y


async def test_cursor_is_drawn_where_the_shell_put_it(session: Session) -> None:
    async with terminal(session, (100, 30)) as (_, pilot, pane):
        await pilot.press(*"echo abc")
        await wait_for(pilot, lambda: pane.term.x == len(PROMPT) + len("echo abc"))
        await pilot.press("left", "left")
        await wait_for(pilot, lambda: pane.term.x == len(PROMPT) + len("echo a"))
        await pilot.pause()  # render_line draws the terminal's state: only messages to handle
        row = pane.term.history_size + pane.term.y - int(pane.scroll_offset.y)
        cells = [
            (segment.text, bool(segment.style and segment.style.reverse))
            for segment in pane.render_line(row)
        ]
        column = 0
        cursor_at = None
        for text, reverse in cells:
            if reverse:
                cursor_at = column
                break
            column += len(text)
        assert cursor_at == pane.term.x
        assert pane.screen_text()[pane.term.y][cursor_at] == "b"


async def test_lines_already_drawn_follow_a_change_of_theme(session: Session) -> None:
    async with terminal(session, (100, 30)) as (app, pilot, pane):
        await pane.send(b"printf 'plain \\033[31mred\\033[0m\\n'\r")
        await wait_for(pilot, lambda: "plain red" in pane.screen_text())
        row = pane.screen_text().index("plain red")
        y = pane.term.history_size + row - int(pane.scroll_offset.y)

        def background() -> object:
            first = pane.render_line(y)._segments[0]
            assert first.text.startswith("plain") and first.style is not None
            return first.style.bgcolor

        await pilot.pause()
        before = background()
        assert before == pane.rich_style.bgcolor
        app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
        await wait_for(pilot, lambda: pane.rich_style.bgcolor != before)
        assert background() == pane.rich_style.bgcolor


async def test_a_flood_is_repainted_at_most_ten_times_a_second(session: Session) -> None:
    async with terminal(session, (100, 30)) as (_, pilot, pane):
        repaints: list[tuple[float, int]] = []  # (when, bytes of output since the one before)
        apply_updates = pane._apply_updates

        def counted() -> None:
            repaints.append((time.monotonic(), pane._bytes_since_update))
            apply_updates()

        pane._apply_updates = counted  # type: ignore[method-assign]
        # 30 bursts of 0.59 MB (17.6 MB), 0.05 s apart: the flood lasts 1.5 s or more however
        # fast the machine is, so it is repainted several times (10.9 MB at once could be over
        # within two repaints, and under load the repaint after it came after this test looked).
        await pane.send(b"for i in $(seq 30); do seq 1 100000; sleep 0.05; done\r")
        await wait_for(
            pilot,
            lambda: at_prompt(pane) and pane.screen_text()[pane.term.y - 1] == "100000",
            timeout=180,
        )
        await wait_for(pilot, lambda: not pane._update_pending)  # the last repaint is counted
        # A repaint that covered more than 64 KB is followed by none for 0.1 s (0.05 s before).
        # Timers only ever fire late, so a loaded machine cannot make this fail.
        gaps = [
            later - when
            for (when, size), (later, _) in itertools.pairwise(repaints)
            if size > 64 * 1024
        ]
        assert len(gaps) >= 2, repaints
        assert min(gaps) >= 0.095, sorted(gaps)[:5]


class _AlwaysReady:
    """A terminal whose output is always waiting, a full batch at each read (as a fast relay
    leaves it): a read never has to wait."""

    LINE = "x" * 78 + "\r\n"

    def __init__(self, batches: int) -> None:
        self.left = batches
        self.served = 0
        self.text = self.LINE * (256 * 1024 // len(self.LINE) + 1)
        self.data = self.text.encode()

    async def read_text(self) -> tuple[bytes, str]:
        if not self.left:
            return b"", ""
        self.left -= 1
        self.served += 1
        return self.data, self.text

    async def write(self, data: bytes) -> None:
        pass


async def test_output_always_waiting_leaves_the_event_loop_to_others_between_batches(
    session: Session,
) -> None:
    """The reading loop gives way after each batch: repaints, keys and timers are not held
    back until the output stops (they were, whenever a read found a full batch waiting)."""
    pane = TerminalPane(session)
    pane._schedule_update = lambda size: None  # type: ignore[method-assign]  # not mounted
    pty = _AlwaysReady(batches=20)
    others_ran_at: list[int] = []

    async def other() -> None:
        others_ran_at.append(pty.served)

    waiting = asyncio.create_task(other())
    await pane._read_loop(pty)  # type: ignore[arg-type]
    await waiting
    assert pane.bytes_read == 20 * len(pty.data)
    assert others_ran_at[0] <= 2, f"another task ran only after {others_ran_at[0]} batches"
