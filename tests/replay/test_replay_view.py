"""The replay view, driven headless through Textual's Pilot like a user at the keyboard."""

from __future__ import annotations

import gc
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.scrollbar import ScrollBar
from textual.widgets import OptionList, Static

from simulator.events import Actor, Event
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter
from tests.replay.replay_helpers import SAMPLES
from tests.ui.helpers import notices, wait_for
from widgets.replay import ReplayApp, ReplayScreen, Timeline
from widgets.replay.lines import LeanScrollBar
from widgets.replay.screen import ForkChoice
from widgets.replay.stepview import StepView


def make_trajectory(path: Path, count: int) -> Path:
    """Commands by the agent, a failing one at 150, a human edit every 50 steps."""
    writer = TrajectoryWriter(path, TrajectoryHeader.new("view"))
    seq = 0
    for n in range(count):
        seq += 1
        if n % 50 == 49:
            writer.write(
                Event(
                    seq,
                    n,
                    Actor.HUMAN,
                    "file.write",
                    {
                        "path": f"src/m{n}.py",
                        "content": f"x = {n}\n",
                        "diff": f"--- a/src/m{n}.py\n+++ b/src/m{n}.py\n@@ -0,0 +1 @@\n+x = {n}\n",
                    },
                )
            )
            continue
        writer.write(Event(seq, n, Actor.AGENT, "exec", {"command": f"echo step{n}"}))
        seq += 1
        code = 3 if n == 150 else 0
        writer.write(
            Event(
                seq,
                n + 0.5,
                Actor.AGENT,
                "exec.result",
                {"exit_code": code, "output": f"step{n}\n", "duration": 0.1},
                cause=seq - 1,
            )
        )
    writer.close()
    return path


async def settle(pilot: Pilot[Any]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@asynccontextmanager
async def viewing(
    path: Path, *, size: tuple[int, int] = (140, 40), **options: Any
) -> AsyncIterator[tuple[ReplayApp, Pilot[Any]]]:
    """The replay view of `path` running headless at `size`, its first load settled."""
    app = ReplayApp(path, **options)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


def screen_of(app: ReplayApp) -> ReplayScreen:
    assert isinstance(app.screen, ReplayScreen)
    return app.screen


def text_of(app: ReplayApp, selector: str) -> str:
    """What the widget shows on screen, as plain text."""
    if selector == "#replay-detail":
        return screen_of(app).query_one(StepView).text
    widget = screen_of(app).query_one(selector, Static)
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text for strip in lines)


async def test_keys_step_jump_filter_search_and_play(tmp_path: Path) -> None:
    path = make_trajectory(tmp_path / "t.jsonl", 300)
    async with viewing(path) as (app, pilot):
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        total = timeline.row_count
        assert total == len(screen.source or [])
        assert "steps" in text_of(app, "#replay-title")
        await pilot.press("j", "j")
        await settle(pilot)
        assert timeline.current_index == 2
        assert "Step 3" in text_of(app, "#replay-detail")
        await pilot.press("e")
        await settle(pilot)
        edited = screen.source.event(timeline.current_index or 0) if screen.source else None
        assert edited is not None and edited.kind == "file.write"
        await pilot.press("x")
        await settle(pilot)
        failed = screen.source.event(timeline.current_index or 0) if screen.source else None
        assert failed is not None and failed.payload["exit_code"] == 3
        await pilot.press("end")
        await settle(pilot)
        assert timeline.current_index == total - 1
        await pilot.press("home")
        await settle(pilot)
        assert timeline.current_index == 0
        # Filter to the human's steps only.
        await pilot.press("a")
        await settle(pilot)
        assert screen.actor_filter == "human"
        assert timeline.row_count == 6
        await pilot.press("a", "a", "a")
        await settle(pilot)
        assert timeline.row_count == total
        # Search.
        await pilot.press("slash")
        await pilot.press(*"step200", "enter")
        await settle(pilot)
        found = screen.source.event(timeline.current_index or 0) if screen.source else None
        assert found is not None and "step200" in str(found.payload)
        # Play advances the cursor on its own; pause stops it.
        before = timeline.current_index or 0
        await pilot.press("plus", "plus", "plus", "space")
        await wait_for(pilot, lambda: (timeline.current_index or 0) > before, "play to advance")
        await pilot.press("space")
        await settle(pilot)
        assert (timeline.current_index or 0) > before
        assert "paused" in text_of(app, "#replay-status")


async def test_files_at_a_step_show_the_recorded_contents(tmp_path: Path) -> None:
    path = make_trajectory(tmp_path / "t.jsonl", 120)
    async with viewing(path) as (app, pilot):
        await pilot.press("e", "e")
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        files = screen_of(app).query_one("#replay-files", OptionList)
        assert files.option_count == 2
        assert "x = 99" in text_of(app, "#replay-file") or "x = 49" in text_of(app, "#replay-file")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
async def test_other_tools_files_open_in_the_view(sample: Path) -> None:
    async with viewing(sample) as (app, pilot):
        assert "(from " in text_of(app, "#replay-title")
        await pilot.press("j")
        await settle(pilot)
        assert "Step 2" in text_of(app, "#replay-detail")


async def test_broken_files_say_why_and_keep_the_valid_prefix(tmp_path: Path) -> None:
    path = make_trajectory(tmp_path / "t.jsonl", 20)
    path.write_bytes(path.read_bytes()[:-5])
    async with viewing(path) as (app, _):
        assert "stops early: line" in text_of(app, "#replay-title")
        assert screen_of(app).query_one(Timeline).row_count > 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a trajectory\n")
    async with viewing(bad) as (app, _):
        assert "Cannot open" in text_of(app, "#replay-title")


async def test_files_at_a_step_include_the_recorded_start(original: Path) -> None:
    async with viewing(original) as (app, pilot):
        await pilot.press("e")  # the agent's edit of calc/ops.py
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        files = screen_of(app).query_one("#replay-files", OptionList)
        ids = [files.get_option_at_index(i).id for i in range(files.option_count)]
        assert {"calc/ops.py", "tests/test_ops.py", "calc/__init__.py"} <= set(ids)
        assert "return b + a" in text_of(app, "#replay-file")
        # An untouched file is read from the recorded commit.
        files.highlighted = ids.index("tests/test_ops.py")
        await settle(pilot)
        assert "def test_add" in text_of(app, "#replay-file")


async def test_fork_here_hands_the_step_to_the_app(original: Path) -> None:
    async with viewing(original) as (app, pilot):
        await pilot.press("j", "j", "j")
        await settle(pilot)
        source = screen_of(app).source
        assert source is not None
        fourth = source.event(3).seq
        await pilot.press("F")
        await settle(pilot)
    assert app.return_value == ForkChoice(fourth, None, original)


async def test_standalone_view_is_laid_out_with_its_stylesheet(tmp_path: Path) -> None:
    """The timeline takes the left half and the step detail the rest (replay.tcss applies to the
    stand-alone app's first screen too, not only when another app pushes the screen)."""
    path = make_trajectory(tmp_path / "t.jsonl", 60)
    async with viewing(path) as (app, _):
        timeline = screen_of(app).query_one(Timeline)
        detail = screen_of(app).query_one(StepView)
        assert timeline.region.width >= 70
        assert timeline.region.height >= 30
        assert detail.region.x >= timeline.region.right
        assert detail.region.width >= 50


async def test_a_jump_shows_the_step_in_the_same_frame_and_revisits_reuse_it(
    tmp_path: Path,
) -> None:
    """The detail pane follows the cursor as it moves (not a frame later through a message),
    and a step seen before is not rendered (highlighted) again."""
    path = make_trajectory(tmp_path / "t.jsonl", 300)
    async with viewing(path) as (app, pilot):
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        detail = screen.query_one(StepView)
        assert screen.source is not None
        edits = [i for i in range(len(screen.source)) if screen.source.meta(i)[1] == "file.write"]
        edit = edits[3]  # src/m199.py, with its diff
        await settle(pilot)
        timeline.go_to_index(edit)
        # No await in between: nothing else has run.
        assert screen.shown_step == edit
        assert f"Step {edit + 1}" in detail.text and "Diff of src/m199.py" in detail.text
        first = detail._strips
        await settle(pilot)  # what the jump scheduled (a scroll, a redraw) has run
        timeline.go_to_index(10)
        assert "Step 11" in detail.text
        await settle(pilot)
        timeline.go_to_index(edit)
        assert detail._strips is first
        await settle(pilot)
        # What is on screen: the cursor's row and the step, in one composed screen.
        lines = [strip.text for strip in screen._compositor.render_strips()]
        assert any("write src/m199.py" in line for line in lines)
        assert any(f"Step {edit + 1} " in line for line in lines)


async def test_escape_steps_back_and_never_closes_the_viewer(tmp_path: Path) -> None:
    path = make_trajectory(tmp_path / "t.jsonl", 30)
    async with viewing(path) as (app, pilot):
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        await pilot.press("slash", *"step2", "escape")
        await settle(pilot)
        assert app.is_running and app.screen is screen
        assert app.focused is timeline
        # The Files tab: Esc goes back to the step.
        await pilot.press("f")
        await settle(pilot)
        tabs = screen.query_one("#replay-right")
        assert tabs.active == "replay-tab-files"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot)
        assert tabs.active == "replay-tab-step"  # type: ignore[attr-defined]
        # A filter: Esc clears it.
        await pilot.press("a")
        await settle(pilot)
        assert timeline.row_count < 60
        await pilot.press("escape")
        await settle(pilot)
        assert (screen.actor_filter, timeline.row_count) == ("all", 60)
        # Nothing left to leave: Esc says how to close, and the viewer stays.
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert app.is_running and app.screen is screen
        await wait_for(pilot, lambda: any("q closes" in n for n in notices(app)), "the notice")
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


async def test_jumps_leave_full_collections_little_to_walk(tmp_path: Path) -> None:
    """Full garbage collections made the slowest jumps: they walked the whole heap inside a
    frame. Once the file is open the app's objects are frozen, so a collection walks only what
    the panes cache, and the strips handed to the compositor are not the cached ones, so what
    the caches drop is freed at once rather than left to a full collection."""
    path = make_trajectory(tmp_path / "t.jsonl", 3000)
    threshold = gc.get_threshold()
    async with viewing(path, size=(160, 50)) as (app, pilot):
        timeline = screen_of(app).query_one(Timeline)
        gc.collect()
        rng = random.Random(5)
        for _ in range(150):
            timeline.go_to_index(rng.randrange(timeline.row_count))
            await pilot.pause()
        walked = len(gc.get_objects())
        left_to_a_full_collection = gc.collect()
        assert walked < 40_000, walked
        # Each frame's strips are garbage in cycles (the compositor's Strip.divide), some of
        # which age past the young collections: bounded, and freed when the view is idle.
        assert left_to_a_full_collection < 25_000, left_to_a_full_collection
    assert gc.get_threshold() == threshold


async def test_the_panes_scroll_bars_look_as_textuals_own(tmp_path: Path) -> None:
    """The timeline's and the step pane's bars are painted straight from the bar's segments
    (widgets/replay/lines.py), the same cells and colours as Textual's own scroll bar."""
    path = make_trajectory(tmp_path / "t.jsonl", 300)
    async with viewing(path, size=(120, 30)) as (app, pilot):
        await pilot.press("end", "k", "k", "k")
        await settle(pilot)
        for pane in (screen_of(app).query_one(Timeline), screen_of(app).query_one(StepView)):
            bar = pane.vertical_scrollbar
            assert isinstance(bar, LeanScrollBar) and bar.display
            region = Region(0, 0, bar.size.width, bar.size.height)

            def cells(strips: list[Any]) -> list[list[tuple[str, Any, Any]]]:
                return [
                    [
                        (
                            s.text,
                            s.style.color if s.style else None,
                            s.style.bgcolor if s.style else None,
                        )
                        for s in strip
                    ]
                    for strip in strips
                ]

            ours = cells(bar.render_lines(region))
            textuals = cells(ScrollBar.render_lines(bar, region))
            assert len(ours) == bar.size.height
            assert ours == textuals


async def test_terminal_steps_show_text_with_colours_not_escape_codes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path, TrajectoryHeader.new("view"))
    writer.write(Event(1, 0.1, Actor.HUMAN, "terminal.input", {"data": "lx\x7fs\r"}))
    prompt = "\x1b]0;me@box: ~\x07\x1b[01;32mme@box\x1b[00m:\x1b[01;34m~\x1b[00m$ "
    output = f"{prompt}ls\r\n\x1b[01;34mdocs\x1b[0m  setup.py\r\n50%\r100%\x1b[K\r\n{prompt}"
    writer.write(Event(2, 0.2, Actor.HUMAN, "terminal.output", {"data": output}))
    writer.close()
    async with viewing(path) as (app, pilot):
        screen = screen_of(app)
        assert "Typed in the terminal\nls⏎" in text_of(app, "#replay-detail")
        await pilot.press("j")
        await settle(pilot)
        shown = text_of(app, "#replay-detail")
        assert "me@box:~$ ls\ndocs  setup.py\n100%\nme@box:~$" in shown, shown
        assert "\x1b" not in shown and "[01;" not in shown and "0;me@box" not in shown
        # the step's one-line description (the timeline's row too) reads as text as well
        assert "output me@box:~$ ls ⏎ docs setup.py ⏎ 100% ⏎ me@box:~$" in shown
        # and in colour: the directory is drawn blue, as the terminal pane draws it
        strips = screen.query_one(StepView)._strips
        docs = next(strip for strip in strips if strip.text.strip().startswith("docs"))
        styles = [seg.style for seg in docs if seg.text.strip() == "docs"]
        assert styles and styles[0] is not None and styles[0].color is not None


async def test_h_and_l_move_between_the_trajectories_of_a_folder(tmp_path: Path) -> None:
    files = [
        make_trajectory(tmp_path / f"{name}.jsonl", count) for name, count in (("a", 3), ("b", 5))
    ]
    async with viewing(files[0], files=files) as (app, pilot):
        assert "file 1/2 (H/L)" in text_of(app, "#replay-title")
        assert screen_of(app).query_one(Timeline).row_count == 6
        await pilot.press("L")
        await settle(pilot)
        assert screen_of(app).path == files[1]
        assert "file 2/2" in text_of(app, "#replay-title")
        assert screen_of(app).query_one(Timeline).row_count == 10
        # A fork asked in this file names it (the CLI forks that one, not the first).
        screen_of(app).post_message(ReplayScreen.ForkRequested(files[1], 2))
        await settle(pilot)
    assert app.return_value == ForkChoice(2, None, files[1])


async def test_one_file_has_no_other_file_to_move_to(tmp_path: Path) -> None:
    path = make_trajectory(tmp_path / "t.jsonl", 3)
    async with viewing(path) as (app, pilot):
        await pilot.press("L", "H")
        await settle(pilot)
        assert screen_of(app).path == path and "file " not in text_of(app, "#replay-title")
