"""Issue 25's probes, rerun as a user would: through the CLI and the engine's public API, on
this machine's Docker engine and the local backend. One line per probe: contained or not, and
what was seen. Exit status 1 when any probe is not contained.

    uv run python bench/safety_probes.py [--image reposim/base:bookworm-2] [--searches 4000]

Each probe creates what it needs (a throwaway git repository, its own containers and files)
and removes only what it created. The disk probe measures the host's free space where Docker
keeps its data while a background writer runs in a session with `--disk 1g`; other work on the
machine that writes to that filesystem at the same time counts against it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from _docker_common import IMAGE, sample_repo

from backends.docker.disk import images_dir
from simulator.events import Actor, Event, Kind
from simulator.session import Session, open_session
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter, read_trajectory
from tests.engine.test_confinement_races import _SWAPPER
from tests.replay.test_untrusted import old_host_id

GIB = 1 << 30


@dataclass
class Probe:
    name: str
    contained: bool
    seen: str


def reposim(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, with no terminal (nothing can be confirmed at a prompt)."""
    return subprocess.run(
        [sys.executable, "-m", "reposim", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )


def docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300)


async def docker_session(repo: Path, image: str, trajectory: Path, **limits: object) -> Session:
    return await open_session(
        repo,
        backend="docker",
        backend_options={"image": image, **limits},
        trajectory_path=trajectory,
    )


# -- 1: gc touches only what RepoSim made --------------------------------------------------------


async def gc_ownership(image: str, work: Path) -> Probe:
    name = f"probe-not-reposim-{uuid.uuid4().hex[:8]}"
    started = docker("run", "-d", "--name", name, image, "sleep", "600")
    if started.returncode != 0:
        return Probe("gc: a container a user started by hand", False, started.stderr.strip())
    cid = started.stdout.strip()
    try:
        dry = reposim("gc", "--dry-run")
        listed = name in dry.stdout or cid[:12] in dry.stdout
        labels = docker("inspect", "-f", "{{json .Config.Labels}}", cid).stdout.strip()
        alive = docker("inspect", "-f", "{{.State.Running}}", cid).stdout.strip() == "true"
        seen = (
            f"`reposim gc --dry-run` {'lists' if listed else 'does not list'} a plain "
            f"`docker run` of {image} (labels {labels}); still running: {alive}"
        )
        return Probe("gc: a container a user started by hand", not listed and alive, seen)
    finally:
        docker("rm", "-f", cid)


# -- 2: no host run on a forged claim --------------------------------------------------------------


def _verified_on_the_host(name: str, path: Path, marker: Path) -> Probe:
    """`replay --verify` of `path` on the local backend, with no terminal to confirm at:
    contained when the command that would create `marker` did not run."""
    out = path.with_name(path.stem + "-out.jsonl")
    result = reposim(
        "replay", "--verify", str(path), "--backend", "local", "--trajectory", str(out)
    )
    ran = marker.exists()
    seen = f"exit {result.returncode}: {result.stderr.strip()[:160]!r}; the command ran: {ran}"
    return Probe(name, not ran, seen)


async def forged_claim(work: Path) -> Probe:
    marker = work / "forged-ran"
    path = work / "forged.jsonl"
    header = TrajectoryHeader.new("stranger")
    writer = TrajectoryWriter(path, header)
    writer.write(Event(1, 0.1, Actor.AGENT, Kind.EXEC, {"command": f"touch {marker}"}))
    writer.close()
    lines = path.read_text().splitlines(keepends=True)
    head = json.loads(lines[0])
    head.pop("seal", None)  # a stranger has no key to seal with; the claim is the host field
    head["host"] = old_host_id()  # the digest older RepoSim trusted; anyone can compute it
    lines[0] = json.dumps(head) + "\n"
    path.write_text("".join(lines))
    return _verified_on_the_host("replay --verify of a forged host claim", path, marker)


async def edited_events(repo: Path, work: Path) -> Probe:
    recorded = work / "mine.jsonl"
    made = reposim("exec", str(repo), "--trajectory", str(recorded), "--", "echo", "harmless")
    if made.returncode != 0:
        return Probe("replay --verify of my own file, events edited", False, made.stderr[-300:])
    marker = work / "edited-ran"
    text = recorded.read_text()
    edited = work / "edited.jsonl"
    edited.write_text(text.replace("echo harmless", f"touch {marker}"))
    return _verified_on_the_host("replay --verify of my own file, events edited", edited, marker)


# -- 3: a disk limit with a background writer ----------------------------------------------------


def _docker_root() -> str:
    out = docker("info", "-f", "{{.DockerRootDir}}").stdout.strip()
    return out or "/var/lib/docker"


def _host_filesystems() -> list[str]:
    """Where a session's files can land on the host: Docker's data (the writable layer) and
    RepoSim's loop-disk images, one path per filesystem."""
    paths, devices = [], set()
    for path in (_docker_root(), str(images_dir())):
        with contextlib.suppress(OSError):
            device = Path(path).stat().st_dev
            if device not in devices:
                devices.add(device)
                paths.append(path)
    return paths


async def disk_limit(repo: Path, image: str, work: Path) -> Probe:
    roots = _host_filesystems()
    session = await docker_session(repo, image, work / "disk.jsonl", disk="1g")
    try:
        before = {root: shutil.disk_usage(root).free for root in roots}
        await session.exec(
            "for d in /workspace $HOME /tmp; do "
            "nohup dd if=/dev/zero of=$d/fill bs=1M count=3000 >/dev/null 2>&1 & done; echo started"
        )
        peak = 0
        last_change, last = time.monotonic(), -1
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            drop = sum(before[root] - shutil.disk_usage(root).free for root in roots)
            peak = max(peak, drop)
            if abs(drop - last) > 1 << 20:
                last, last_change = drop, time.monotonic()
            elif time.monotonic() - last_change > 10:  # the writers stopped (or were stopped)
                break
            await asyncio.sleep(0.2)
        after = await session.exec("echo harmless", timeout=60)
        limit = 1 * GIB
        ok = peak <= limit * 1.1 and after.exit_code == 0 and after.output == b"harmless\n"
        seen = (
            f"three 3 GB background writers (workspace, home, /tmp): host free space dropped "
            f"at most {peak / 2**20:,.0f} MiB against {limit * 1.1 / 2**20:,.0f} allowed "
            f"(limit + 10%); the next command: exit {after.exit_code}, {after.output[:40]!r}"
        )
        return Probe("--disk 1g with background writers", ok, seen)
    finally:
        await session.close()


# -- 4: a background fork bomb and the next command ----------------------------------------------


async def fork_bomb(repo: Path, image: str, work: Path) -> Probe:
    session = await docker_session(repo, image, work / "bomb.jsonl", pids=64)
    try:
        bomb = await session.exec(":(){ :|:& };:", timeout=30)
        await asyncio.sleep(1)  # the next command, typed a second later
        results = [await session.exec("echo next; ls / | head -1", timeout=60) for _ in range(5)]
        clean = all(r.output == b"next\nbin\n" and r.exit_code == 0 for r in results)
        deadline = time.monotonic() + 60
        count = 999
        while time.monotonic() < deadline:
            out = (await session.exec("ps -e --no-headers | wc -l", timeout=30)).output.split()
            count = int(out[-1]) if out and out[-1].isdigit() else 999
            if count < 12:
                break
            await asyncio.sleep(0.5)
        said = [r.cleared for r in results]
        seen = (
            f"bomb exit {bomb.exit_code}; the five next commands' output clean: {clean} "
            f"(a clear overlapped them: {said}); processes left {count}"
        )
        return Probe("a background fork bomb, then commands", clean and count < 12, seen)
    finally:
        await session.close()


# -- 5: kill -STOP -1 and the file service --------------------------------------------------------


async def stop_everything(repo: Path, image: str, work: Path) -> Probe:
    session = await docker_session(repo, image, work / "stop.jsonl")
    try:
        await session.exec("kill -STOP -1", timeout=30)
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(session.write("after.txt", "written"), 30)
            back = await asyncio.wait_for(session.read("after.txt"), 30)
            took = time.monotonic() - t0
            ok = back == "written" and took < 10
            seen = f"write then read after `kill -STOP -1`: {took:.2f} s, read back {back!r}"
        except TimeoutError as error:
            ok, seen = False, f"the file service did not answer within 30 s ({error!r})"
        return Probe("kill -STOP -1, then the file API", ok, seen)
    finally:
        await session.close()


# -- 6: bytes kept exactly -------------------------------------------------------------------------


async def exact_bytes(repo: Path, image: str, work: Path) -> Probe:
    path = work / "bytes.jsonl"
    session = await docker_session(repo, image, path)
    try:
        a = await session.exec(r"printf 'A\377Z'")
        b = await session.exec(r"printf 'A\376Z'")
        three = await session.exec("exit 3")
        raw = bytes(range(128, 256)) + b"\x00end"
        written_ok = True
        try:
            await session.write("raw.bin", raw)
            back = await session._backend.read_file("raw.bin")
            written_ok = back == raw
        except Exception as error:
            written_ok, back = False, repr(error).encode()
    finally:
        await session.close()
    events = read_trajectory(path).events
    outputs = [e.payload for e in events if e.kind is Kind.EXEC_RESULT]
    distinct = len(outputs) >= 2 and outputs[0] != outputs[1]
    ok = a.output == b"A\377Z" and b.output == b"A\376Z" and distinct and written_ok
    ok = ok and three.exit_code == 3
    seen = (
        f"outputs {a.output!r} / {b.output!r}, recorded distinct: {distinct}; non-UTF-8 write "
        f"read back exactly: {written_ok}; `exit 3` gave exit code {three.exit_code}"
    )
    return Probe("bytes exact, exit codes kept", ok, seen)


# -- 7: search under a directory-swap race (local backend) ---------------------------------------


async def search_race(work: Path, searches: int) -> Probe:
    repo = sample_repo()
    (repo / "d").mkdir()
    (repo / "d" / "f").write_text("inside\n")
    git = ["git", "-C", str(repo), "-c", "user.name=p", "-c", "user.email=p@p"]
    await asyncio.to_thread(subprocess.run, [*git, "add", "-A"], check=True)
    await asyncio.to_thread(subprocess.run, [*git, "commit", "-qm", "d"], check=True)
    outside = work / "outside"
    outside.mkdir()
    (outside / "f").write_text("SECRET outside\n")
    session = await open_session(repo, backend="local", trajectory_path=work / "search.jsonl")
    workspace = Path(session.workspace_path)
    (workspace / "l").symlink_to(outside)
    swapper = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-c", _SWAPPER, str(workspace / "d"), str(workspace / "l")],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen_counts = {"inside": 0, "escaped": 0, "refused": 0}
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "swapping\n"
        for _ in range(searches):
            try:
                matches = await session.search("e", "d", ignore_case=True, actor=Actor.AGENT)
            except Exception:  # a refusal is the contained outcome
                seen_counts["refused"] += 1
                continue
            texts = " ".join(m.text for m in matches)
            seen_counts["escaped" if "SECRET" in texts else "inside"] += 1
    finally:
        swapper.kill()
        swapper.wait()
        await session.close()
        shutil.rmtree(repo, ignore_errors=True)
    ok = seen_counts["escaped"] == 0 and seen_counts["inside"] > 0
    return Probe(f"search under a swap race ({searches}x)", ok, str(seen_counts))


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=IMAGE)
    parser.add_argument("--searches", type=int, default=4000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reposim-probes-"))
    repo = sample_repo()
    print(f"load {os.getloadavg()[0]:.1f}; image {args.image}; scratch {work}", flush=True)
    probes: list[Callable[[], Awaitable[Probe]]] = [
        lambda: gc_ownership(args.image, work),
        lambda: forged_claim(work),
        lambda: edited_events(repo, work),
        lambda: fork_bomb(repo, args.image, work),
        lambda: stop_everything(repo, args.image, work),
        lambda: exact_bytes(repo, args.image, work),
        lambda: disk_limit(repo, args.image, work),
        lambda: search_race(work, args.searches),
    ]
    results = []
    for probe in probes:
        t0 = time.monotonic()
        try:
            result = await probe()
        except Exception as error:  # a probe that breaks is not contained
            result = Probe(getattr(probe, "__name__", "probe"), False, f"raised {error!r}")
        results.append(result)
        mark = "contained" if result.contained else "NOT CONTAINED"
        took = time.monotonic() - t0
        print(f"{mark:>14}  {result.name} ({took:.0f} s): {result.seen}", flush=True)
    with contextlib.suppress(OSError):
        shutil.rmtree(work)
    shutil.rmtree(repo, ignore_errors=True)
    failed = [r for r in results if not r.contained]
    print(
        f"{len(results) - len(failed)} of {len(results)} contained; load {os.getloadavg()[0]:.1f}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
