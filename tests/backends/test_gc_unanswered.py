"""gc, and the batch's collection after a killed task, go on when the engine does not answer
about one container.

Seen on this machine: a session's `kill -STOP -1` stopped a `runc init` halfway through an exec
(it had taken the session's uid, not yet run the program); the container's lock stayed held, and
every engine call about that container (inspect, kill, remove) waited. `reposim gc --dry-run`
then stopped with a ReadTimeout traceback after 60 s, and a batch's collection after a killed
task raised out of the worker. A real HTTP server on 127.0.0.1 stands in for such an engine: it
answers the ping and the other containers' questions, and never answers about the wedged one.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import docker
import pytest

from backends.docker_engine import OWNERSHIP, collect_garbage
from backends.private_state import private_dir, write_record

WEDGED, GONE = "a" * 64, "b" * 64


class _Engine(BaseHTTPRequestHandler):
    release = threading.Event()

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, code: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.endswith("/version"):
            self._answer(200, {"ApiVersion": "1.41", "Version": "20.10.24"})
        elif self.path.endswith("/_ping"):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"OK")
        elif f"/containers/{WEDGED}/json" in self.path:
            self.release.wait(60)  # a wedged container: no answer
        else:
            self._answer(404, {"message": "No such container"})


@pytest.fixture
def engine() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    _Engine.release.set()
    server.shutdown()
    server.server_close()
    _Engine.release.clear()


@pytest.fixture
def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two containers this user's RepoSim created, both owners gone: one wedged, one removed
    since."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for session, cid in (("wedged000001", WEDGED), ("gone00000001", GONE)):
        write_record(
            private_dir(OWNERSHIP) / f"{session}.json",
            {
                "session": session,
                "name": f"reposim-{session}",
                "id": cid,
                "secret": "0" * 32,
                "pid": 2**22 + 1,  # above pid_max's default: no live process has it
                "pid_start": 1.0,
                "host": socket.gethostname(),
                "created": 1.0,
            },
        )


def test_gc_goes_on_past_a_container_the_engine_does_not_answer_about(
    engine: str, records: None, tmp_path: Path
) -> None:
    client = docker.DockerClient(base_url=engine, version="1.41", timeout=2)
    started = time.monotonic()
    found = collect_garbage(client)
    assert time.monotonic() - started < 30
    assert [(item.session, item.removed) for item in found] == [("wedged000001", False)]
    assert "did not answer" in found[0].problem and found[0].orphaned
    # The record of the container that is gone was dropped; the wedged one's is kept for later.
    left = sorted(p.name for p in (tmp_path / "state" / "reposim" / OWNERSHIP).glob("*.json"))
    assert left == ["wedged000001.json"]


def test_gc_says_which_container_it_could_not_check_in_one_line(engine: str, records: None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reposim", "gc", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DOCKER_HOST": engine},
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "reposim-wedged000001" in line]
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith("not done: container reposim-wedged000001") and (
        "did not answer" in lines[0]
    )
