"""Trajectories from someone else: every reader refuses what it should in one sentence, blobs
stay in their directory and match their digest, and commands recorded elsewhere never run on
this machine without being asked to."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from simulator.events import Actor, Event, Kind
from simulator.replay import reexecute, resume
from simulator.replay.reexec import REPLAYED_KINDS, StepResult, untrusted_line
from simulator.session import Session
from simulator.trajectory import (
    TrajectoryError,
    TrajectoryHeader,
    TrajectoryWriter,
    blob_dir,
    open_trajectory,
    read_trajectory,
)
from tests.replay.replay_helpers import SMALL_PROJECT, record_session
from tests.replay.test_replay_cli import reposim

DEEP = 200_000


def one_sentence(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.startswith("reposim: error: "), result.stderr[-2000:]
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


def refused_on_the_host(path: Path, out: Path) -> str:
    """`replay --verify --backend local` of a file not provably this user's, without a terminal
    to confirm at: exit 2 and the one sentence that says why (nothing runs)."""
    refused = reposim(
        "replay", "--verify", str(path), "--backend", "local", "--trajectory", str(out)
    )  # fmt: skip
    assert refused.returncode == 2
    return one_sentence(refused)


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def with_header(path: Path, out: Path, **changes: object) -> Path:
    lines = lines_of(path)
    header = json.loads(lines[0])
    header.update(changes)
    lines[0] = json.dumps(header) + "\n"
    out.write_text("".join(lines), encoding="utf-8")
    return out


# -- blobs -------------------------------------------------------------------------------------


def _blob_trajectory(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "t.jsonl"
    big = "x" * 20_000 + "the end"
    writer = TrajectoryWriter(path, TrajectoryHeader.new("b"))
    writer.write(Event(1, 0.1, Actor.HUMAN, Kind.NOTE, {"text": big}))
    writer.close()
    return path, big


def test_a_blob_reference_outside_the_blob_directory_is_refused(tmp_path: Path) -> None:
    path, _ = _blob_trajectory(tmp_path)
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the secret")
    line = json.loads(lines_of(path)[1])
    line["payload"]["blobs"]["text"] = "../../../outside/secret.txt"
    path.write_text(lines_of(path)[0] + json.dumps(line) + "\n")
    trajectory = read_trajectory(path)
    with pytest.raises(TrajectoryError, match="not a sha256 digest") as caught:
        trajectory.load_blob(trajectory.events[0], "text")
    assert "the secret" not in str(caught.value)


def test_a_changed_blob_does_not_match_its_digest(tmp_path: Path) -> None:
    path, big = _blob_trajectory(tmp_path)
    trajectory = read_trajectory(path)
    assert trajectory.load_blob(trajectory.events[0], "text") == big
    (blob,) = blob_dir(path).iterdir()
    blob.write_text("rm -rf ~")
    with pytest.raises(TrajectoryError, match="does not match its digest"):
        trajectory.load_blob(trajectory.events[0], "text")


def test_a_blob_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    path, _ = _blob_trajectory(tmp_path)
    (blob,) = blob_dir(path).iterdir()
    outside = tmp_path / "elsewhere.txt"
    outside.write_bytes(blob.read_bytes())  # even with the right content
    blob.unlink()
    blob.symlink_to(outside)
    trajectory = read_trajectory(path)
    with pytest.raises(TrajectoryError, match="is not a file in"):
        trajectory.load_blob(trajectory.events[0], "text")


# -- depth, types, bytes -----------------------------------------------------------------------


@pytest.mark.malformed_trajectories
def test_deeply_nested_json_is_one_sentence_in_every_reader(original: Path, tmp_path: Path) -> None:
    nested = "[" * DEEP + "]" * DEEP
    deep_event = tmp_path / "deep-event.jsonl"
    deep_event.write_text(
        lines_of(original)[0]
        + json.dumps({"seq": 1, "t": 0.0, "actor": "human", "kind": "note"})[:-1]
        + f', "payload": {{"text": "x", "x": {nested}}}}}\n'
    )
    deep_header = tmp_path / "deep-header.jsonl"
    deep_header.write_text('{"schema": "reposim.trajectory/1", "x": ' + nested + "}\n")
    deep_foreign = tmp_path / "deep.traj"
    deep_foreign.write_text('{"history": ' + nested + "}\n")

    show = reposim("trajectory", "show", str(deep_event))
    assert show.returncode == 1 and "Traceback" not in show.stderr
    assert "line 2 is corrupt (nested more than" in show.stderr
    for args in (
        ["trajectory", "show", str(deep_header)],
        ["trajectory", "show", str(deep_foreign)],
        ["replay", "--verify", str(deep_header)],
        ["replay", "--verify", str(deep_foreign)],
        ["import", str(deep_foreign), "-o", str(tmp_path / "x.jsonl")],
        ["import", str(deep_header), "-o", str(tmp_path / "y.jsonl")],
    ):
        result = reposim(*args)
        assert result.returncode == 2, (args, result.stderr[-500:])
        assert "nested" in one_sentence(result), args


@pytest.mark.malformed_trajectories
def test_a_header_with_wrong_types_is_one_sentence(original: Path, tmp_path: Path) -> None:
    bad = with_header(original, tmp_path / "bad.jsonl", backend=5)
    for args in (
        ["trajectory", "show", str(bad)],
        ["replay", "--verify", str(bad)],
        ["export", str(bad), "--to", "swe-agent"],
    ):
        result = reposim(*args)
        assert result.returncode == 2, args
        assert "`backend` must be an object, not a number" in one_sentence(result)


@pytest.mark.malformed_trajectories
def test_a_bad_byte_is_reported_at_its_line_and_the_events_before_it_stay(
    original: Path, tmp_path: Path
) -> None:
    lines = [line.encode() for line in lines_of(original)]
    assert sum(map(len, lines[:6])) < 8192  # the bad byte is in the file's first 8 KB
    lines[5] = lines[5].replace(b'"seq"', b'"s\xffq"', 1)
    bad = tmp_path / "bad-byte.jsonl"
    bad.write_bytes(b"".join(lines))
    result = reposim("trajectory", "show", "--json", str(bad))
    assert result.returncode == 1
    assert "line 6 is not UTF-8 text" in result.stderr
    shown = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["seq"] for e in shown[1:]] == [1, 2, 3, 4]


def test_a_byte_order_mark_is_read_alike_by_show_and_verify(original: Path, tmp_path: Path) -> None:
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + original.read_bytes())
    shown = reposim("trajectory", "show", str(bom))
    assert shown.returncode == 0, shown.stderr
    verified = reposim("replay", "--verify", str(bom), "--trajectory", str(tmp_path / "v.jsonl"))
    assert verified.returncode == 0, verified.stderr


@pytest.mark.malformed_trajectories
def test_verify_of_a_file_corrupt_in_the_middle_fails_and_says_what_it_checked(
    original: Path, tmp_path: Path
) -> None:
    lines = lines_of(original)
    kinds = [json.loads(line)["kind"] for line in lines[1:]]
    before = sum(1 for kind in kinds[:3] if kind in REPLAYED_KINDS)
    assert 0 < before < sum(1 for kind in kinds if kind in REPLAYED_KINDS)
    lines[4] = lines[4][:20] + "\n"
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text("".join(lines))
    result = reposim("replay", "--verify", str(corrupt), "--trajectory", str(tmp_path / "v.jsonl"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "line 5 is corrupt" in result.stderr
    checked = next(line for line in result.stdout.splitlines() if "actions re-executed" in line)
    assert checked.startswith(f"{before} actions re-executed"), checked


async def test_a_file_name_that_is_not_utf8_is_recorded_exactly(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo({"README": "names\n"})
    name = os.fsdecode(b"caf\xe9-\xff.txt")
    out = tmp_path / "names.jsonl"
    async with await Session.open(repo, trajectory_path=out) as session:
        await session.create(name, "hello\n")
        await session.write(name, "hello again\n")
    recorded = read_trajectory(out)
    assert recorded.problem is None
    created = next(e for e in recorded.events if e.kind == Kind.FILE_CREATE)
    assert os.fsencode(created.payload["path"]) == b"caf\xe9-\xff.txt"
    assert [e.kind for e in recorded.events].count(Kind.FILE_WRITE) == 1
    out.read_bytes().decode("utf-8")  # the file itself stays UTF-8


# -- commands recorded elsewhere ---------------------------------------------------------------


async def recorded_touch(repo: Path, marker: Path, trajectory: Path) -> tuple[Path, Path]:
    """Record, on this machine, a session on `repo` whose one command touches `marker`, then
    remove the marker: a re-execution here makes it again. The marker and the trajectory."""
    async with await Session.open(repo, trajectory_path=trajectory) as session:
        await session.exec(f"touch {marker}")
    marker.unlink()
    return marker, trajectory


async def test_verify_never_runs_a_foreign_trajectorys_commands_on_this_machine(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    marker, original = await recorded_touch(
        make_repo(SMALL_PROJECT, name="project"),
        tmp_path / "ran-on-the-host",
        tmp_path / "mine.jsonl",
    )
    mine = reposim("replay", "--verify", str(original), "--trajectory", str(tmp_path / "a.jsonl"))
    assert mine.returncode == 0, mine.stderr
    assert marker.exists()  # recorded here: re-executed here, as before
    marker.unlink()

    foreign = with_header(original, tmp_path / "foreign.jsonl", host="0123456789abcdef")
    result = reposim("replay", "--verify", str(foreign), "--trajectory", str(tmp_path / "b.jsonl"))
    assert "was not recorded by you on this machine" in result.stderr
    assert not marker.exists()
    # --backend local is not enough without a terminal to confirm at: one sentence, no run.
    refused = refused_on_the_host(foreign, tmp_path / "c.jsonl")
    assert "only after you confirm at a terminal" in refused
    assert not marker.exists()
    declined = at_terminal(["replay", "--verify", str(foreign), "--backend", "local"], answer="n\n")
    assert declined.returncode == 2 and "Not run" in declined.output
    assert not marker.exists()
    consented = at_terminal(
        ["replay", "--verify", str(foreign), "--backend", "local",
         "--trajectory", str(tmp_path / "d.jsonl")],
        answer="y\n",
    )  # fmt: skip
    assert consented.returncode == 0, consented.output
    assert marker.exists()
    # What re-ran a stranger's commands is not sealed either: it cannot launder them.
    assert not read_trajectory(tmp_path / "d.jsonl").header.sealed_here


def old_host_id() -> str:
    """The `host` value older RepoSim wrote and trusted: anyone can compute it."""
    machine = ""
    for candidate in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            machine = Path(candidate).read_text(encoding="ascii", errors="replace").strip()
        if machine:
            break
    seed = f"{machine or socket.gethostname()}:{os.getuid()}"
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


async def test_a_forged_host_claim_does_not_run_on_this_machine(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    marker, original = await recorded_touch(
        make_repo(SMALL_PROJECT, name="project"),
        tmp_path / "forged-ran-here",
        tmp_path / "template.jsonl",
    )
    # A stranger's file: no seal, and the `host` value the old check accepted.
    lines = lines_of(original)
    header = json.loads(lines[0])
    header.pop("seal", None)
    header["host"] = old_host_id()
    forged = tmp_path / "forged.jsonl"
    forged.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    assert not read_trajectory(forged).header.sealed_here
    # Without a container engine the verify fails to start; either way nothing runs here.
    result = reposim(
        "replay", "--verify", str(forged), "--trajectory", str(tmp_path / "v.jsonl"),
        "--image", "reposim/absent:forged",
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "was not recorded by you on this machine" in result.stderr or "absent" in result.stderr
    assert not marker.exists()
    # A header edited after it was sealed no longer checks out either.
    edited = with_header(original, tmp_path / "edited.jsonl", session="someone-else")
    assert read_trajectory(original).header.sealed_here
    assert not read_trajectory(edited).header.sealed_here


async def test_other_commands_under_a_sealed_header_do_not_run_on_this_machine(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """Issue 25: the seal covered only the header, which is written before the events, so anyone
    holding one file this user recorded (a shared trajectory, a published data set) could put
    other commands under it: `replay --verify` ran them on the host, no prompt."""
    repo = make_repo(SMALL_PROJECT, name="project")
    marker = tmp_path / "ran-here"
    original = tmp_path / "mine.jsonl"
    async with await Session.open(repo, trajectory_path=original) as session:
        await session.exec("echo hello")
        await session.exec("echo again")
    lines = lines_of(original)
    number = next(n for n, line in enumerate(lines, 1) if '"command":"echo again"' in line)
    forged = tmp_path / "forged.jsonl"
    edited = list(lines)
    edited[number - 1] = edited[number - 1].replace(
        '"echo again"', json.dumps(f"touch {marker}; echo again")
    )
    forged.write_text("".join(edited), encoding="utf-8")
    assert lines_of(forged)[0] == lines[0]  # the same sealed header, byte for byte
    # By default it re-runs in a container (absent here: it cannot start); nothing runs here.
    result = reposim(
        "replay", "--verify", str(forged), "--trajectory", str(tmp_path / "v.jsonl"),
        "--image", "reposim/absent:forged",
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"line {number}" in result.stderr.lower(), result.stderr
    assert not marker.exists()
    # On the host only after a confirmation; without a terminal, one sentence naming the line.
    assert f"line {number}" in refused_on_the_host(forged, tmp_path / "w.jsonl").lower()
    assert not marker.exists()
    # The untouched file still re-executes here without a question.
    mine = reposim("replay", "--verify", str(original), "--trajectory", str(tmp_path / "m.jsonl"))
    assert mine.returncode == 0, mine.stderr


async def test_a_line_changed_in_place_while_re_executing_is_not_run(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    """Trust is checked before anything runs, but the file is read again as it runs: a file
    rewritten in place in between (someone else's folder, a race) must not run what it now
    says. Each line is checked again from the very bytes that are run."""
    repo = make_repo(SMALL_PROJECT, name="project")
    marker = tmp_path / "ran-here"
    evil = f"touch {marker}"
    benign = "echo again".ljust(len(evil))
    original = tmp_path / "mine.jsonl"
    async with await Session.open(repo, trajectory_path=original) as session:
        await session.exec("echo hello")
        await session.exec(benign)
    raw = original.read_bytes()
    at = raw.index(json.dumps(benign).encode())
    number = raw[:at].count(b"\n") + 1

    def rewrite(step: StepResult) -> None:
        if step.kind == "exec" and "hello" in step.action:  # the first command has run
            with original.open("r+b") as handle:  # same length: the offsets stay
                handle.seek(at)
                handle.write(json.dumps(evil).encode())

    report, _ = await reexecute(original, trajectory_path=tmp_path / "v.jsonl", on_step=rewrite)
    assert not marker.exists()
    assert report.problem is not None and f"Line {number} of" in report.problem, report.problem
    execs = [s.action for s in report.steps if s.kind == "exec"]
    assert len(execs) == 1 and "echo hello" in execs[0], execs


def first_untrusted(path: Path, until: int | None = None) -> int | None:
    with open_trajectory(path) as source:
        return untrusted_line(source, until)


async def test_trust_holds_line_by_line_up_to_the_first_changed_line(
    original: Path, tmp_path: Path
) -> None:
    """Any prefix of a file written here is trusted (a cut-off file, a copy); from an edited,
    inserted, removed or reordered line on, nothing is."""
    lines = lines_of(original)
    count = len(lines)
    assert count > 12
    assert first_untrusted(original) is None

    def variant(name: str, body: list[str]) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(body), encoding="utf-8")
        return path

    assert first_untrusted(variant("copy", lines)) is None
    assert first_untrusted(variant("cut", [*lines[:-1], lines[-1][:10]])) is None
    assert first_untrusted(variant("prefix", lines[:7])) is None
    assert first_untrusted(variant("appended", [*lines, lines[-1]])) == count + 1
    assert first_untrusted(variant("removed", lines[:5] + lines[6:])) == 6
    assert first_untrusted(variant("swapped", [*lines[:5], lines[6], lines[5], *lines[7:]])) == 6
    assert first_untrusted(variant("inserted", [*lines[:8], lines[3], *lines[8:]])) == 9
    changed = json.loads(lines[9])
    changed["t"] += 1
    assert (
        first_untrusted(variant("edited", [*lines[:9], json.dumps(changed) + "\n", *lines[10:]]))
        == 10
    )
    header = json.loads(lines[0])
    header["session"] = "someone-else"
    assert first_untrusted(variant("header", [json.dumps(header) + "\n", *lines[1:]])) == 1
    # A fork before the changed line re-runs only trusted lines.
    edited = tmp_path / "edited.jsonl"
    assert first_untrusted(edited, until=changed["seq"] - 1) is None
    assert first_untrusted(edited, until=changed["seq"]) == 10

    # A resumed cut-off file: the new session's own lines are trusted again, and it is sealed.
    session = await resume(tmp_path / "cut.jsonl", trajectory_path=tmp_path / "resumed.jsonl")
    try:
        await session.write("more.txt", "continued\n")
    finally:
        await session.close()
    resumed = read_trajectory(tmp_path / "resumed.jsonl")
    assert resumed.header.parent is not None and not resumed.header.parent.foreign
    assert resumed.header.seal is not None
    assert first_untrusted(tmp_path / "resumed.jsonl") is None


@dataclass
class TerminalRun:
    returncode: int
    output: str


def at_terminal(args: list[str], *, answer: str, timeout: float = 300) -> TerminalRun:
    """Run reposim with a pseudo-terminal for stdin and stderr; type `answer` at its prompt."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reposim", *args],
        stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=dict(os.environ),
    )  # fmt: skip
    os.close(slave)
    seen = b""
    answered = False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk and proc.poll() is not None:
                break
            seen += chunk
            if not answered and b"[y/N]" in seen:
                os.write(master, answer.encode())
                answered = True
        elif proc.poll() is not None:
            break
    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    assert proc.stdout is not None
    out = proc.stdout.read().decode(errors="replace")
    proc.stdout.close()
    os.close(master)
    return TerminalRun(proc.returncode, seen.decode(errors="replace") + out)


async def test_an_imported_file_is_foreign(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo(SMALL_PROJECT, name="project")
    original = await record_session(repo, tmp_path / "r.jsonl")
    assert read_trajectory(original).header.sealed_here
    exported = tmp_path / "r.traj"
    exporting = reposim("export", str(original), "--to", "swe-agent", "-o", str(exported))
    assert exporting.returncode == 0
    imported = tmp_path / "imported.jsonl"
    assert reposim("import", str(exported), "-o", str(imported)).returncode == 0
    assert not read_trajectory(imported).header.sealed_here
