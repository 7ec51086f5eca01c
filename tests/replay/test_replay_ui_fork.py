"""Forking into the main UI: `reposim replay FILE --fork-at N`, and F in the replay view, run as
a person runs them, in a real pseudo-terminal."""

from __future__ import annotations

import re
from pathlib import Path

from simulator.trajectory import TrajectoryIndex
from tests.replay.replay_helpers import SAMPLES
from tests.terminal_drive import CSI, drive, header_and_events, reposim_command

REPLAY = reposim_command("replay")


def test_fork_at_in_a_terminal_opens_the_forked_session_in_the_ui(
    original: Path, tmp_path: Path
) -> None:
    out = tmp_path / "fork.jsonl"
    code, output = drive(
        [*REPLAY, str(original), "--fork-at", "3", "--trajectory", str(out)],
        [(b"EXPLORER", b"\x11")],  # the main UI's file tree; Ctrl+Q
    )
    assert code == 0, output[-2000:]
    assert f"reposim: trajectory {out}".encode() in output
    header, events = header_and_events(out)
    assert header["parent"] == {"file": str(original.resolve()), "step": 3}
    assert any(e["kind"] == "checkpoint" and e["payload"]["name"] == "fork" for e in events)  # type: ignore[index]
    assert events[-1]["kind"] == "session.end"


def test_fork_here_in_the_replay_view_continues_in_the_ui(original: Path, tmp_path: Path) -> None:
    index = TrajectoryIndex(original)
    fourth = index.event(3).seq
    index.close()
    code, output = drive(
        [*REPLAY, str(original)],
        [
            (b"Play/pause", b"jjjF"),  # the replay view's footer: three steps down, fork here
            (b"EXPLORER", b"\x11"),
        ],
    )
    assert code == 0, output[-2000:]
    assert f"forking at step {fourth}".encode() in output
    # While the workspace is rebuilt the terminal says so, action by action (it stayed blank).
    assert b"rebuilding the workspace of" in output
    assert re.search(rb"  step \d+/" + str(fourth).encode() + rb"  \S", output), output[-3000:]
    written = output.split(b"reposim: trajectory ")[-1].split(b"\r")[0].split(b"\n")[0].strip()
    header, events = header_and_events(Path(written.decode()))
    assert header["parent"] == {"file": str(original.resolve()), "step": fourth}
    assert events[-1]["kind"] == "session.end"


def test_fork_here_on_an_import_without_repository_keeps_the_view(tmp_path: Path) -> None:
    """F on an imported trajectory that records no repository asks for one in the view (it used
    to end the program with a command-line error); when the fork then cannot start (here: no
    container engine at DOCKER_HOST), the view comes back at that step and says why."""
    sample = next(p for p in SAMPLES if p.name.startswith("mini-swe-agent"))
    copy = tmp_path / "copy"
    copy.mkdir()
    code, output = drive(
        [*REPLAY, str(sample)],
        [
            (b"Play/pause", b"jjF"),
            (b"To fork at step 3", str(copy).encode() + b"\r"),
            (b"Could not fork", b"q"),
        ],
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"},
    )
    assert code == 0, output[-3000:]
    assert b"forking at step 3" in output
    assert b"reposim: error" not in output and b"Traceback" not in output


def test_a_folder_opens_in_one_viewer_that_moves_between_its_trajectories(
    original: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "runs"
    (folder / "later").mkdir(parents=True)
    (folder / "a.jsonl").write_bytes(original.read_bytes())
    sample = next(p for p in SAMPLES if p.name == "swe-agent-marshmallow-1867.traj")
    (folder / "later" / "b.traj").write_bytes(sample.read_bytes())
    code, output = drive(
        [*REPLAY, str(folder)],
        [
            (b"file 1/2", b"L"),  # the next trajectory of the folder
            (b"b.traj", b"L"),  # wraps around to the first
            (b"a.jsonl", b"q"),
        ],
    )
    assert code == 0, output[-3000:]
    text = CSI.sub(b"", output)
    assert b"file 2/2" in text and b"(from swe-agent)" in text
    assert b"reposim: error" not in output and b"Traceback" not in output


def test_a_folder_skips_a_file_it_cannot_read_and_says_so(original: Path, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(original.read_bytes())
    (folder / "b-broken.jsonl").write_text('{"schema": "not a trajectory"}\n')
    (folder / "c.jsonl").write_bytes(original.read_bytes())
    code, output = drive(
        [*REPLAY, str(folder)],
        [
            (b"file 1/2", b"L"),  # the unreadable file is not one of the series
            (b"file 2/2", b"q"),
        ],
    )
    assert code == 0, output[-3000:]
    text = CSI.sub(b"", output)
    assert b"b-broken.jsonl" in text and b"skipped" in text, text[-3000:]
    assert b"Cannot open" not in text
