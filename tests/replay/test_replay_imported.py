"""Other tools' trajectories in the replay view: what is not known is left out, and their own ways
of editing files are edits to navigate by (Pilot, as a user at the keyboard)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from simulator.describe import describe_event, summarize
from simulator.events import Kind
from simulator.trajectory import read_trajectory
from tests.replay.replay_helpers import SAMPLES
from tests.replay.test_replay_view import screen_of, settle, text_of, viewing
from tests.ui.helpers import notices
from widgets.replay import Timeline
from widgets.replay.screen import ForkChoice


def swe_agent_windowed_edits(path: Path) -> Path:
    """A SWE-agent run of the windowed-editor era: `edit N:M` with the lines and `end_of_edit`,
    no exit codes, no model name."""
    steps = [
        ("open src/marshmallow/fields.py 1474", "[File: src/marshmallow/fields.py (1997 lines)]"),
        ("edit 287:295\n        return int(round(x))\nend_of_edit", "File updated."),
        ("python reproduce.py", "345"),
        ("edit 1475:1475\n        # round\nend_of_edit", "File updated."),
        ("submit", "diff --git a/x b/x"),
    ]
    data: dict[str, Any] = {
        "trajectory": [
            {"action": a, "observation": o, "response": a, "thought": "", "execution_time": 0.25}
            for a, o in steps
        ],
        "history": [{"role": "system", "content": "You are"}]
        + [{"role": "assistant", "content": a, "action": a} for a, _ in steps],
        "info": {"exit_status": "submitted"},
    }
    path.write_text(json.dumps(data))
    return path


def mini_swe_agent_sed(path: Path) -> Path:
    """A mini-swe-agent run (its current form) that edits with `sed -i` and a here-document."""
    actions = [
        "grep -n 'total_seconds' src/fields.py",
        "sed -i 's/int(value/int(round(value/' src/fields.py",
        "python -m pytest -q",
        "cat <<'EOF' > reproduce.py\nprint(1)\nEOF",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
    ]
    for action in actions:
        messages.append({"role": "assistant", "content": f"THOUGHT: go\n\n```bash\n{action}\n```"})
        observation = "<returncode>0</returncode>\n<output>\n</output>"
        messages.append({"role": "user", "content": observation})
    data = {
        "info": {"exit_status": "Submitted", "submission": ""},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
async def test_imported_steps_show_what_is_known_and_never_none(sample: Path) -> None:
    trajectory = read_trajectory(sample)
    lines = [describe_event(event) for event in trajectory.events]
    assert not [line for line in lines if "None" in line]
    model = trajectory.header.agent.model if trajectory.header.agent else None
    calls = [describe_event(e) for e in trajectory.events if e.kind == Kind.LLM_CALL]
    assert calls and set(calls) == {f"model call {model}" if model else "model call"}
    assert "None" not in summarize(trajectory).split("\n\n")[0]
    async with viewing(sample) as (app, pilot):
        timeline = screen_of(app).query_one(Timeline)
        for _ in range(timeline.row_count):
            shown = text_of(app, "#replay-detail").splitlines()
            # The step's title, its one-line description and the observation's heading.
            headings = shown[:2] + [line for line in shown if line.startswith("Observation")]
            assert not [line for line in headings if "None" in line], headings
            await pilot.press("j")
        await settle(pilot)
        assert timeline.current_index == timeline.row_count - 1


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (swe_agent_windowed_edits, ["edit 287:295", "edit 1475:1475"]),
        (mini_swe_agent_sed, ["sed -i", "cat <<'EOF' > reproduce.py"]),
    ],
    ids=["swe-agent-edit", "mini-swe-agent-sed"],
)
async def test_next_edit_finds_other_tools_edit_commands(
    tmp_path: Path, make: Any, expected: list[str]
) -> None:
    path = make(tmp_path / "run.traj")
    async with viewing(path) as (app, pilot):
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        assert screen.source is not None
        found = []
        for _ in expected:
            await pilot.press("e")
            await settle(pilot)
            event = screen.source.event(timeline.current_index or 0)
            assert event.kind == Kind.EXEC
            found.append(str(event.payload["command"]))
        assert [c.startswith(e) for c, e in zip(found, expected, strict=True)] == [True, True]
        await pilot.press("e")  # no further edit: the cursor stays, a notice says so
        await settle(pilot)
        assert screen.source.event(timeline.current_index or 0).payload["command"] == found[-1]


async def test_fork_without_a_repository_asks_for_one_and_never_exits(tmp_path: Path) -> None:
    """F on an imported trajectory that records no repository: a notice and a box for the path
    of a copy; a wrong path says so; Esc puts the box away; a real folder forks there."""
    sample = next(p for p in SAMPLES if p.name.startswith("mini-swe-agent"))
    async with viewing(sample) as (app, pilot):
        screen = screen_of(app)
        await pilot.press("j", "j", "F")
        await settle(pilot)
        assert app.is_running and app.return_value is None
        bar = screen.query_one("#replay-fork")
        assert bar.display
        notice = text_of(app, "#replay-fork-notice")
        assert "To fork at step 3" in notice and "no repository" in notice
        box = screen.query_one("#replay-fork-repo", Input)
        assert app.focused is box
        await pilot.press("escape")  # puts the box away, the viewer stays
        await settle(pilot)
        assert app.is_running and not bar.display
        assert app.focused is screen.query_one(Timeline)
        await pilot.press("F")
        await settle(pilot)
        await pilot.press(*str(tmp_path / "nowhere"), "enter")
        await settle(pilot)
        assert app.is_running
        assert "is not a folder" in text_of(app, "#replay-fork-notice")
        copy = tmp_path / "copy"
        copy.mkdir()
        box.value = ""
        await pilot.press(*str(copy), "enter")
        await settle(pilot)
    assert app.return_value == ForkChoice(3, copy, sample)


async def test_fork_from_a_repository_not_on_this_machine_says_so(tmp_path: Path) -> None:
    sample = next(p for p in SAMPLES if "marshmallow" in p.name)  # recorded in "testbed"
    async with viewing(sample) as (app, pilot):
        await pilot.press("F")
        await settle(pilot)
        assert app.is_running
        assert "testbed is not on this machine" in text_of(app, "#replay-fork-notice")
        # A copy without the recorded commit is refused with the reason, still in the view.
        await pilot.press(*str(tmp_path), "enter")
        await settle(pilot)
        assert app.is_running
        assert f"Commit bfd2593d4b41 is not in {tmp_path}" in text_of(app, "#replay-fork-notice")


async def test_the_view_reopened_after_a_failed_fork_is_at_that_step_and_says_why() -> None:
    sample = next(p for p in SAMPLES if p.name.startswith("mini-swe-agent"))
    async with viewing(sample, at_step=5, notice="Could not fork: no engine.") as (app, _):
        assert screen_of(app).query_one(Timeline).current_index == 4
        assert "Step 5" in text_of(app, "#replay-detail")
        assert notices(app) == ["Could not fork: no engine."]


async def test_a_swe_agent_submission_reads_as_a_diff_not_an_escaped_string() -> None:
    sample = next(p for p in SAMPLES if p.name == "swe-agent-marshmallow-1867.traj")
    async with viewing(sample) as (app, pilot):
        await pilot.press("end")
        await settle(pilot)
        shown = text_of(app, "#replay-detail")
        assert "agent.finish" in shown.splitlines()[0]
        assert "exit status submitted" in shown
        lines = shown.splitlines()
        start = lines.index("Submission")
        assert lines[start + 1].startswith("diff --git a/src/marshmallow/fields.py")
        assert "+        # round to nearest int" in lines
        assert "\\r\\n" not in shown and '"summary"' not in shown
