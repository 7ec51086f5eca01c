"""Keys typed in a burst in the replay viewer are applied in order (issue 26: the key gate of
major 8 on `reposim replay`): `/` must open the search box before the letters after it are read,
or they fall on the timeline as one-key actions (`t` filters by kind, `e` jumps to an edit)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from tests.replay.test_replay_view import make_trajectory, screen_of, settle, viewing
from tests.ui.helpers import key_burst, wait_for
from widgets.replay.timeline import Timeline


async def test_a_search_typed_in_a_burst_lands_in_the_search_box(tmp_path: Path) -> None:
    async with viewing(make_trajectory(tmp_path / "t.jsonl", 120)) as (app, pilot):
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        at, rows, kind = timeline.current_index, timeline.row_count, screen.kind_filter
        key_burst(app, "/", "t", "e", "x", "t")
        box = screen.query_one("#replay-search", Input)
        await wait_for(pilot, lambda: box.value == "text", "the search typed")
        await settle(pilot)
        assert (timeline.current_index, timeline.row_count) == (at, rows)  # no jump, no filter
        assert screen.kind_filter == kind
