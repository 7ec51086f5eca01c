"""The terminal pane's input recorded as lines (not one step per key), typed again byte for byte,
and listed by the replay view's "commands" filter; recordings with one event per key still load
and replay. Real sessions on real git repositories, a real shell on a real PTY."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simulator.describe import describe_event, summarize
from simulator.events import Kind
from simulator.replay import reexecute
from simulator.session import RecordedPty, Session
from simulator.terminal_record import command_line, readable_keys
from simulator.trajectory import read_trajectory
from tests.conftest import WAIT
from tests.replay.replay_helpers import SMALL_PROJECT
from tests.replay.test_replay_view import screen_of, settle, viewing
from widgets.replay import Timeline


async def until(done: Callable[[], Any], timeout: float = WAIT) -> None:
    """Poll: what is waited for happens in a shell, not in this process."""
    async with asyncio.timeout(timeout):
        while not done():  # noqa: ASYNC110 - a shell in another process makes it true
            await asyncio.sleep(0.03)


class Reader:
    """Drains a terminal's output as the pane does, so that it is recorded."""

    def __init__(self, terminal: RecordedPty) -> None:
        self.terminal = terminal
        self.seen = b""
        self.task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while not self.terminal.closed:
            chunk = await self.terminal.read()
            if not chunk:
                return
            self.seen += chunk

    async def wait_for(self, text: bytes, timeout: float = WAIT) -> None:
        await until(lambda: text in self.seen, timeout)

    async def close(self) -> None:
        await self.terminal.close()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def type_keys(terminal: RecordedPty, keys: bytes, gap: float = 0.02) -> None:
    """One write per key, as the terminal pane sends them."""
    for key in keys:
        await terminal.write(bytes([key]))
        await asyncio.sleep(gap)


def inputs(path: Path) -> list[dict[str, Any]]:
    return [e.payload for e in read_trajectory(path).events if e.kind == Kind.TERMINAL_INPUT]


def exact(recorded: list[dict[str, Any]]) -> bytes:
    return "".join(p["data"] for p in recorded).encode("utf-8", "surrogateescape")


TYPED = [
    b"echo hellp\x7fo > greeting.txt\r",  # a typo mended with Backspace
    b"sleep 30\r",
    b"\x03",  # Ctrl+C stops the sleep
    b"printf '%s' \xff > byte.bin\r",  # a byte that is not UTF-8
]


async def record_typing(repo: Path, out: Path) -> bytes:
    session = await Session.open(repo, trajectory_path=out)
    async with session:
        workspace = Path(session.workspace_path)
        terminal = await session.open_terminal()
        reader = Reader(terminal)
        await type_keys(terminal, TYPED[0])
        await until(lambda: (workspace / "greeting.txt").exists())
        await type_keys(terminal, TYPED[1])
        await asyncio.sleep(0.5)
        await type_keys(terminal, TYPED[2])
        await type_keys(terminal, TYPED[3])
        await until(lambda: (workspace / "byte.bin").exists())
        # A line typed, a pause, then Enter: two events, one command line.
        await type_keys(terminal, b"ls -1")
        await asyncio.sleep(RecordedPty.INPUT_PAUSE + 0.5)
        await type_keys(terminal, b"\r")
        await reader.wait_for(b"greeting.txt")
        await reader.close()
    return b"".join(TYPED) + b"ls -1\r"


@pytest.fixture
async def typed_recording(make_repo: Callable[..., Path], tmp_path: Path) -> tuple[Path, bytes]:
    """A session's trajectory (tmp_path/typed.jsonl) of the keys typed into its terminal by
    record_typing, and those keys."""
    out = tmp_path / "typed.jsonl"
    return out, await record_typing(make_repo(SMALL_PROJECT, name="project"), out)


async def test_typed_keys_are_recorded_as_lines_and_exactly(
    typed_recording: tuple[Path, bytes],
) -> None:
    out, typed = typed_recording
    recorded = inputs(out)
    assert [p["data"] for p in recorded] == [
        "echo hellp\x7fo > greeting.txt\r",
        "sleep 30\r",
        "\x03",
        "printf '%s' \udcff > byte.bin\r",
        "ls -1",
        "\r",
    ]
    assert exact(recorded) == typed  # every byte, in order
    assert [p.get("line") for p in recorded] == [
        "echo hello > greeting.txt",
        "sleep 30",
        None,
        "printf '%s' \udcff > byte.bin",
        None,
        "ls -1",
    ]
    events = read_trajectory(out).events
    assert "0 commands (+4 typed in the terminal)" in summarize(read_trajectory(out))
    described = [describe_event(e) for e in events if e.kind == Kind.TERMINAL_INPUT]
    assert described[0] == "terminal $ echo hello > greeting.txt" and described[2] == "typed ^C"
    # The echo of a line is recorded after the line, not a step per key before it.
    kinds = [e.kind for e in events if e.kind.startswith("terminal.")]
    first = kinds.index(Kind.TERMINAL_INPUT)
    assert kinds[first + 1] == Kind.TERMINAL_OUTPUT
    assert len(kinds) < 30


async def test_lines_are_typed_again_byte_for_byte(
    typed_recording: tuple[Path, bytes], tmp_path: Path
) -> None:
    out, typed = typed_recording
    again = tmp_path / "again.jsonl"
    report, _ = await reexecute(out, trajectory_path=again)
    assert [s.kind for s in report.steps].count("terminal.input") == 6
    # The new session recorded what re-execution typed: the same bytes, the same lines.
    assert exact(inputs(again)) == typed
    # Keys typed across a pause may now arrive as one event; the command lines are the same.
    lines = [p["line"] for p in inputs(out) if p.get("line")]
    assert [p["line"] for p in inputs(again) if p.get("line")] == lines


async def test_recordings_with_a_step_per_key_still_load_and_replay(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """Before lines were kept, each key was an event `{"data": key}`; such a file reads and
    re-executes as before."""
    repo = make_repo(SMALL_PROJECT, name="project")
    out = tmp_path / "lines.jsonl"
    session = await Session.open(repo, trajectory_path=out)
    async with session:
        terminal = await session.open_terminal()
        reader = Reader(terminal)
        await terminal.write(b"echo per-key > old.txt\r")
        await reader.wait_for(b"per-key")
        # the command ran (what the sleep here hoped for): its file is in the workspace
        await until(lambda: (Path(session.workspace_path) / "old.txt").exists())
        await reader.close()
    old = tmp_path / "old.jsonl"
    lines = out.read_text().splitlines()
    rewritten: list[str] = [lines[0]]
    renumbered: dict[int, int] = {}
    for text in lines[1:]:
        event = json.loads(text)
        keys = event["payload"]["data"] if event["kind"] == "terminal.input" else None
        parts = [{**event, "payload": {"data": key}} for key in keys] if keys else [event]
        renumbered[event["seq"]] = len(rewritten)
        for part in parts:
            part["seq"] = len(rewritten)
            if "cause" in part:
                part["cause"] = renumbered[part["cause"]]
            rewritten.append(json.dumps(part))
    old.write_text("\n".join(rewritten) + "\n")
    per_key = inputs(old)
    assert len(per_key) == len("echo per-key > old.txt\r")
    assert all("line" not in p for p in per_key)
    # Rewritten lines are not this user's recording (an older RepoSim's file has no chain
    # either): re-executed here only with consent, as `--backend local` and a yes give it.
    report, _ = await reexecute(
        old, trajectory_path=tmp_path / "again.jsonl", backend_kind="local", host_consent=True
    )
    assert [s.kind for s in report.steps].count("terminal.input") == len(per_key)
    assert [p.get("line") for p in inputs(tmp_path / "again.jsonl")] == ["echo per-key > old.txt"]


def test_readable_keys_and_command_lines() -> None:
    assert readable_keys("ls\x1b[A\x1b[D\t\x03") == "ls↑←⇥^C"
    assert readable_keys("git sta\x17commit\x15pwd") == "pwd"
    assert command_line("vi\x7f\x7fless x\r") == "less x"
    assert command_line("\r") is None and command_line("ls") is None


async def test_the_commands_filter_lists_the_terminals_command_lines(
    typed_recording: tuple[Path, bytes],
) -> None:
    out, _ = typed_recording
    async with viewing(out) as (app, pilot):
        screen = screen_of(app)
        timeline = screen.query_one(Timeline)
        while screen.kind_filter != "commands":
            await pilot.press("t")
        await settle(pilot)
        assert screen.source is not None
        shown = [
            describe_event(screen.source.event(timeline.index_at(row)))
            for row in range(timeline.row_count)
        ]
    terminal = [line for line in shown if line.startswith("terminal $")]
    assert terminal == [
        "terminal $ echo hello > greeting.txt",
        "terminal $ sleep 30",
        "terminal $ printf '%s' \udcff > byte.bin",
        "terminal $ ls -1",
    ]
