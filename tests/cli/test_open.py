"""`reposim open` end to end: the real command in a real pseudo-terminal."""

from __future__ import annotations

from pathlib import Path

from simulator.events import Actor
from simulator.session import Session
from tests.conftest import reposim
from tests.terminal_drive import drive, header_and_events, reposim_command

OPEN = reposim_command("open")


def run_until(args: list[str], marker: bytes) -> tuple[int, bytes]:
    """Run `reposim open ARGS` on a PTY until `marker` is drawn, press Ctrl+Q, and return the
    exit code and everything the program wrote."""
    # Ctrl+Q as soon as the marker is in the output (quitting once the screen settles met a
    # ValueError from the tabs while the UI was still starting: a UI bug, reported)
    return drive([*OPEN, *args], [(marker, b"\x11")], at_once=True)


def test_open_shows_the_repository_and_quitting_ends_the_session(
    sample_repo: Path, tmp_path: Path
) -> None:
    trajectory = tmp_path / "t.jsonl"
    code, output = run_until([str(sample_repo), "--trajectory", str(trajectory)], b"EXPLORER")
    assert code == 0, output[-2000:]
    assert f"reposim: trajectory {trajectory}".encode() in output
    _, recorded = header_and_events(trajectory)
    # One owner closes the session (reposim.ui.run_ui), so it ends once, with its reason.
    ends = [e for e in recorded if e["kind"] == "session.end"]
    assert ends == [recorded[-1]]
    assert recorded[-1]["payload"] == {"reason": "closed"}


async def test_resume_opens_a_new_session_on_the_recorded_state(
    sample_repo: Path, tmp_path: Path
) -> None:
    first = tmp_path / "first.jsonl"
    session = await Session.open(sample_repo, trajectory_path=first)
    await session.create("kept.txt", "kept\n", actor=Actor.AGENT)
    await session.close()

    resumed = tmp_path / "resumed.jsonl"
    code, output = run_until(
        [str(sample_repo), "--resume", str(first), "--trajectory", str(resumed)],
        b"kept.txt",
    )
    assert code == 0, output[-2000:]
    header, recorded = header_and_events(resumed)
    assert header["parent"] == {"file": str(first.resolve()), "step": 3, "resumed": True}
    assert any(e["kind"] == "file.create" for e in recorded)
    assert recorded[-1]["kind"] == "session.end"


def test_resume_of_a_missing_file_is_one_sentence(tmp_path: Path) -> None:
    proc = reposim("open", "--resume", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2
    assert proc.stderr == f"reposim: error: {tmp_path / 'nope.jsonl'} does not exist.\n"


def test_open_with_a_model_litellm_does_not_know_is_one_sentence(sample_repo: Path) -> None:
    proc = reposim("open", str(sample_repo), "--model", "nonsense-provider/xyz")
    assert proc.returncode == 2
    assert proc.stderr.startswith("reposim: error: litellm does not know the model")
    assert proc.stderr.count("\n") == 1


def test_open_api_base_without_a_model_is_one_sentence(sample_repo: Path) -> None:
    proc = reposim("open", str(sample_repo), "--api-base", "http://127.0.0.1:9/v1")
    assert proc.returncode == 2
    assert proc.stderr == "reposim: error: --api-base goes with --model.\n"
