"""Terminal pane throughput: `cat` of a large coloured file, pyte as the reference, same run.

Measures, on one machine in one run:
  - pyte (the emulator pyte-based Textual terminals use) fed a sample of the file;
  - our emulator core (TerminalScreen) fed the whole file;
  - the whole pane end to end: a real shell on a local Session's recorded PTY in a headless
    Textual app, `cat FILE` typed into it, until the shell's next prompt is on screen; every
    byte read is counted, and key events posted to the app during the flood are timed; the
    process's CPU per MB is split by thread (the event loop, the PTY reader, the recorder's
    blob writer), with the CPU of its child processes (the PTY's relay, the shell) beside it, and
    the pane's repaints are counted.
Targets: issue 4, >= 20 MB/s end to end with the UI still answering keys (pyte about 0.6 MB/s);
issue 29, end to end >= 50% of the kernel PTY ceiling measured in the same run, every byte parsed.
Run: uv run python bench/ui_terminal.py [--mb 50]   (quick, on a loaded machine: --mb 10)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyte
from _report import ms, percentile, table
from textual import events
from textual.app import App, ComposeResult
from textual.widget import Widget

from simulator.session import Session
from widgets.terminal_pane import TerminalPane
from widgets.terminal_screen import TerminalScreen

COLS, ROWS = 160, 40
CEILING_SHARE = 0.5
"""Issue 29: the pane end to end at this share of the kernel PTY ceiling, same run."""


def coloured_lines(megabytes: float) -> bytes:
    """Log-like lines with 16-colour, 256-colour and true-colour SGR codes."""
    levels = ["\x1b[32mINFO\x1b[0m", "\x1b[33mWARN\x1b[0m", "\x1b[1;31mERROR\x1b[0m"]
    lines = []
    size = 0
    i = 0
    target = int(megabytes * 1_000_000)
    while size < target:
        line = (
            f"\x1b[2m{i:08d}\x1b[0m {levels[i % 3]} \x1b[38;5;{i % 256}mworker-{i % 17}\x1b[0m "
            f"request /api/v1/items/{i * 7919 % 100000} took \x1b[38;2;{i % 256};128;64m"
            f"{i % 997} ms\x1b[0m status={200 + i % 5}\n"
        )
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines).encode()


def pyte_rate(sample: bytes) -> float:
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    pty_like = sample.replace(b"\n", b"\r\n")
    start = time.perf_counter()
    for offset in range(0, len(pty_like), 65536):
        stream.feed(pty_like[offset : offset + 65536])
    return len(pty_like) / (time.perf_counter() - start)


def core_rate(data: bytes) -> float:
    screen = TerminalScreen(COLS, ROWS)
    pty_like = data.replace(b"\n", b"\r\n")
    start = time.perf_counter()
    for offset in range(0, len(pty_like), 65536):
        screen.feed(pty_like[offset : offset + 65536].decode())
    elapsed = time.perf_counter() - start
    assert screen.chars_fed == len(pty_like)
    return len(pty_like) / elapsed


def raw_pty_rate(path: Path) -> float:
    """How fast this machine's kernel moves `cat` output through a PTY (with the usual
    newline translation) to a reader that does nothing else: the ceiling for any terminal."""
    master, slave = os.openpty()
    start = time.perf_counter()
    proc = subprocess.Popen(["cat", str(path)], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    total = 0
    while True:
        try:
            chunk = os.read(master, 1 << 20)
        except OSError:
            break
        if not chunk:
            break
        total += len(chunk)
    elapsed = time.perf_counter() - start
    proc.wait()
    os.close(master)
    return total / elapsed


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each of this process's threads, by name (Python's names, found through
    their native ids; a thread that ended is missing)."""
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        name = names.get(int(task.name), "other")
        name = name.rstrip("0123456789").rstrip("-_") or name  # pty-reader-9 -> pty-reader
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def children_cpu() -> float:
    """CPU seconds of this process's direct children themselves (the PTY's relay, the shell;
    not their children: `cat` is the shell's)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for task in Path("/proc/self/task").iterdir():
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def back_at_prompt(pane: TerminalPane, after: str) -> bool:
    rows, y = pane.screen_text(), pane.term.y
    return y > 0 and rows[y] == "READY$" and rows[y - 1] == "READY$ " + after


class Probe(Widget):
    """Receives timed key events during the flood to show that the UI keeps answering."""

    def __init__(self) -> None:
        super().__init__()
        self.latencies: list[float] = []

    def on_key(self, event: events.Key) -> None:
        self.latencies.append(time.perf_counter() - event.time)
        event.stop()  # the probe's keys must not reach the shell


async def end_to_end(repo: Path, file_size: int, newline_count: int) -> dict[str, float]:
    session = await Session.open(repo, trajectory_path=repo.parent / "bench.jsonl")
    pane = TerminalPane(session)
    probe = Probe()

    class Bench(App[None]):
        def compose(self) -> ComposeResult:
            yield pane
            yield probe

    app = Bench()
    result: dict[str, float] = {}
    try:
        async with app.run_test(size=(COLS + 1, ROWS + 2)) as pilot:
            pane.focus()
            await pilot.pause(0.3)
            await pane.send(b"export PS1='READY$ '\r")
            while "READY$" not in "".join(pane.screen_text()):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)
            # What the shell wraps around any command's output (the echoed newline, readline's
            # mode switches, the prompt), measured on a command that prints nothing.
            before = pane.bytes_read
            await pane.send(b"true\r")
            while not back_at_prompt(pane, after="true"):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)
            framing = pane.bytes_read - before - len("true")
            start_bytes = pane.bytes_read
            command = b"cat big.log\r"
            expected = len("cat big.log") + file_size + newline_count + framing
            repaints = 0
            apply_updates = pane._apply_updates

            def counted() -> None:
                nonlocal repaints
                repaints += 1
                apply_updates()

            pane._apply_updates = counted  # type: ignore[method-assign]
            threads_start = thread_cpu()
            children_start = children_cpu()
            start = time.perf_counter()
            cpu_start = time.process_time()
            await pane.send(command)
            while pane.bytes_read - start_bytes < expected:
                event = events.Key("x", "x")
                event.time = time.perf_counter()
                probe.post_message(event)
                await asyncio.sleep(0.05)
            elapsed = time.perf_counter() - start
            result["cpu"] = time.process_time() - cpu_start
            threads_end = thread_cpu()
            result["children"] = children_cpu() - children_start
            for name, cpu in threads_end.items():
                result[f"thread:{name}"] = cpu - threads_start.get(name, 0.0)
            result["repaints"] = repaints
            await pilot.pause(0.5)
            result["elapsed"] = elapsed
            result["read"] = pane.bytes_read - start_bytes
            result["expected"] = expected
            # The stream is ASCII: one character parsed per byte read.
            result["parsed_all"] = float(pane.term.chars_fed == pane.bytes_read)
            result["rate"] = (pane.bytes_read - start_bytes) / elapsed
            result["key_median"] = statistics.median(probe.latencies)
            result["key_p95"] = percentile(probe.latencies, 0.95)
            result["key_max"] = max(probe.latencies)
            result["keys"] = len(probe.latencies)
    finally:
        await session.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=50.0, help="size of the file to cat")
    parser.add_argument("--pyte-mb", type=float, default=2.0, help="sample fed to pyte")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    data = coloured_lines(args.mb)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        (repo / "big.log").write_bytes(data)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "config", "core.autocrlf", "false"], check=True)
        reference = pyte_rate(data[: int(args.pyte_mb * 1_000_000)])
        core = core_rate(data)
        ceiling = raw_pty_rate(repo / "big.log")
        e2e = asyncio.run(end_to_end(repo, len(data), data.count(b"\n")))
    mb = 1_000_000
    print(
        table(
            f"Terminal throughput, `cat` of {len(data) / mb:.1f} MB of coloured lines at "
            f"{COLS}x{ROWS} (machine shared with other jobs; figures are noisy)",
            [
                ("emulator only (MB/s)", f"pyte {reference / mb:.2f}", f"{core / mb:.1f}"),
                ("kernel PTY, reader does nothing (MB/s)", "-", f"{ceiling / mb:.1f} (ceiling)"),
                (
                    "pane end to end (MB/s)",
                    f"pyte-based widgets ~0.6 (pyte here {reference / mb:.2f})",
                    f"{e2e['rate'] / mb:.1f}  ({e2e['rate'] / reference:.0f}x pyte)",
                ),
                (
                    "pane's process CPU (all threads) per MB",
                    "-",
                    f"{e2e['cpu'] / (e2e['read'] / mb) * 1000:.1f} ms  "
                    f"({e2e['read'] / e2e['cpu'] / mb:.1f} MB per CPU second; "
                    "a slower run has more repaints per MB)",
                ),
                (
                    "  of which, by thread (ms per MB)",
                    "-",
                    ", ".join(
                        f"{name[len('thread:') :]} {cpu / (e2e['read'] / mb) * 1000:.1f}"
                        for name, cpu in sorted(e2e.items(), key=lambda item: -item[1])
                        if name.startswith("thread:") and cpu > 0
                    ),
                ),
                (
                    "  child processes (the PTY's relay, the shell) per MB",
                    "-",
                    f"{e2e['children'] / (e2e['read'] / mb) * 1000:.1f} ms (not in the line above)",
                ),
                (
                    "repaints during the flood",
                    "-",
                    f"{int(e2e['repaints'])} ({e2e['repaints'] / e2e['elapsed']:.1f} a second)",
                ),
                (
                    "pane end to end / PTY ceiling",
                    f"target >= {CEILING_SHARE:.0%}",
                    f"{e2e['rate'] / ceiling:.0%}"
                    + (" (met)" if e2e["rate"] / ceiling >= CEILING_SHARE else " (NOT met)"),
                ),
                (
                    "bytes read / expected",
                    "-",
                    f"{int(e2e['read'])} / {int(e2e['expected'])}"
                    + ("  every byte parsed" if e2e["parsed_all"] else "  NOT ALL PARSED"),
                ),
                (
                    "key latency during flood",
                    "-",
                    f"median {ms(e2e['key_median'])}  p95 {ms(e2e['key_p95'])}  "
                    f"max {ms(e2e['key_max'])}  (n={int(e2e['keys'])})",
                ),
            ],
        )
    )
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after (1 min)"
    )


if __name__ == "__main__":
    main()
