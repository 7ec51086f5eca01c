"""A batch of agent runs seen live in the fleet view, one of them attached, taken over (the agent
paused, a command typed in its terminal, a file fixed by hand) and let go on — with Pilot, the
batch in real worker processes, the model on fake OpenAI-compatible servers on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from textual.widgets import Static, TextArea

from simulator.agent.control import ControlClient
from simulator.fleet import Fleet
from simulator.gym import GymTask
from simulator.trajectory import read_trajectory
from tests.agent.conftest import BUG, BUGGY_PROJECT, FIX
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.conftest import RepoFactory
from tests.ui.helpers import wait_for
from widgets.fleet import FleetApp, FleetScreen
from widgets.fleet.attached import AttachedScreen, EditFileScreen
from widgets.fleet.table import FleetTable


async def settle(pilot: object, predicate: object, what: str, timeout: float = 240) -> None:
    """`wait_for` with room for the batch: its workers start and import litellm first."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)  # type: ignore[attr-defined]


def _cell(app: FleetApp, key: str, column: str) -> str:
    screen = app.screen_stack[1] if len(app.screen_stack) > 1 else app.screen
    assert isinstance(screen, FleetScreen)
    table = screen.query_one(FleetTable)
    try:
        return table.get_cell(key, column)
    except KeyError:
        return ""


async def test_a_batch_session_is_attached_taken_over_and_let_go_on(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo(BUGGY_PROJECT, name="buggy")
    gate = tmp_path / "gate"
    # One model server, the tasks one after the other (--jobs 1, in file order): "other" finishes
    # at once, then "held" runs a command that waits for the test's gate, then finishes.
    model = FakeLLM(
        [
            Reply("", [call("finish", summary="nothing to do")]),
            Reply(
                "Let me look around first.",
                [call("bash", command=f"while [ ! -e {gate} ]; do sleep 0.05; done; echo looked")],
            ),
            Reply("", [call("finish", summary="the person fixed mean; nothing left to do")]),
        ]
    ).start()
    folder = tmp_path / "runs.trajectories"
    results = tmp_path / "runs.jsonl"
    tasks_file = tmp_path / "tasks.jsonl"
    task = GymTask(repo=str(repo), instruction="Fix mean.", tests=("tests/test_core.py",))
    tasks_file.write_text(
        "".join(
            json.dumps({**task.to_dict(), "id": key, "max_steps": 6}) + "\n"
            for key in ("other", "held")
        )
    )
    # The batch as a user starts it: its own process (no state shared with this test's process).
    batch = subprocess.Popen(  # noqa: ASYNC220 - started once, read after the app has closed
        [
            sys.executable, "-m", "reposim", "agent", "--tasks", str(tasks_file),
            "--model", "openai/fake-model", "--api-base", model.api_base,
            "--results", str(results), "--jobs", "1",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    held = folder / "held.jsonl"
    try:
        app = FleetApp(Fleet(folder, results=results, stuck_after=3600), interval=0.05)
        async with app.run_test(size=(160, 48)) as pilot:
            # Both sessions show up live; the one that needs nothing finishes.
            await settle(
                pilot, lambda: "ok" in _cell(app, "other", "state"), "the other run's verdict"
            )
            await settle(
                pilot,
                lambda: "while [ ! -e" in _cell(app, "held", "last action"),
                "the held run's command",
            )
            table = app.screen.query_one(FleetTable)
            table.move_cursor(row=table.get_row_index("held"))
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, AttachedScreen), "attach")
            attached = app.screen
            assert isinstance(attached, AttachedScreen)
            assert ControlClient.for_trajectory(held) is not None

            # Take over: the pause is answered once the agent's step is over.
            await pilot.press("p")
            # The pause reaches the agent mid-step (the session records it), then the step ends.
            await wait_for(pilot, lambda: "paused" in _cell(app, "held", "state"), "the pause")
            assert not attached.taken
            gate.touch()
            await settle(pilot, lambda: attached.taken, "the agent paused")
            state = attached.query_one("#takeover-state", Static)
            assert "You have the session" in str(state.render())

            # A command typed in its terminal.
            await pilot.press(*"ls stats")
            await pilot.press("enter")
            output = attached.query_one("#takeover-output", Static)
            await wait_for(pilot, lambda: "[exit 0]" in str(output.render()), "the command")
            assert "core.py" in str(output.render())

            # A file fixed by hand in the editor, saved into the session.
            answered = attached.answers
            await pilot.press("escape", "E", *"stats/core.py", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, EditFileScreen), "the editor")
            area = app.screen.query_one(TextArea)
            assert BUG in area.text
            area.text = area.text.replace(BUG, FIX)
            await pilot.press("ctrl+s")
            await wait_for(
                pilot,
                lambda: attached.answers >= answered + 2 and app.screen is attached,
                "the save",
            )
            assert attached.last_answer is not None and attached.last_answer["path"] == (
                "stats/core.py"
            )

            # The viewer follows the file: the person's steps show up in it.
            def human_steps() -> list[str]:
                return [
                    str(e.kind)
                    for e in read_trajectory(held).events
                    if str(e.actor) == "human" and str(e.kind) in ("exec", "file.write")
                ]

            await wait_for(pilot, lambda: human_steps() == ["exec", "file.write"], "the record")

            # Let it go on: the agent finishes, told what the person did.
            await pilot.press("escape", "r")  # from the command box to the steps, and go on
            await wait_for(pilot, lambda: not attached.taken, "the resume")
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), "the fleet")
            await settle(
                pilot, lambda: "ok" in _cell(app, "held", "state"), "the held run's verdict"
            )
    finally:
        gate.touch()
        try:
            output, _ = batch.communicate(timeout=600)
        finally:
            batch.kill()
            model.close()
    assert batch.returncode == 0, output
    records = {r["key"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert records["held"]["status"] == "ok", output
    assert records["held"]["result"]["tests_before"]["failed"] == 1
    assert records["held"]["result"]["tests_after"]["passed"] == 2  # the person's fix
    told = str(model.requests[2]["messages"])
    assert "While you were paused" in told and "stats/core.py" in told
    assert not (folder / "held.control").exists()
