"""Safe defaults: non-root, no capabilities, limits that hold, no network unless asked for."""

from __future__ import annotations

import asyncio
import http.server
import ipaddress
import os
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.docker import DockerBackend

BackendFactory = Callable[..., Awaitable[DockerBackend]]


async def test_runs_as_an_unprivileged_user_without_capabilities(backend: DockerBackend) -> None:
    who = await backend.exec("id -u; id -un; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
    lines = who.output.decode().split()
    assert lines[0] == "1000"
    assert lines[1] == "reposim"
    assert "0000000000000000" in lines  # CapEff: no capability at all
    assert lines[-1] == "1"  # NoNewPrivs: setuid binaries cannot raise privileges
    denied = await backend.exec("touch /etc/reposim-was-here")
    assert denied.exit_code != 0
    assert (await backend.exec("test -S /var/run/docker.sock")).exit_code != 0
    owned = await backend.exec("stat -c %u /workspace /workspace/calc/ops.py")
    assert owned.output.split() == [b"1000", b"1000"]


def _cgroup_value(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    raise AssertionError(f"{key} not in {text!r}")


async def test_a_fork_bomb_hits_the_pids_limit_and_everything_recovers(
    make_backend: BackendFactory, sample_repo: Path
) -> None:
    backend = await make_backend(sample_repo, pids=64)
    # The loop keeps the command in the foreground until the timeout has to clean up.
    bomb = await backend.exec(
        "bomb() { bomb | bomb & }; bomb; while :; do sleep 1 2>/dev/null || :; done", timeout=5
    )
    assert bomb.timed_out, bomb
    events = await backend.exec(
        "cat /sys/fs/cgroup/pids/pids.events 2>/dev/null || cat /sys/fs/cgroup/pids.events"
    )
    assert _cgroup_value(events.output.decode(), "max") > 0  # forks were refused at the limit
    # The bomb's processes are gone and the session's shell works again.
    await backend.exec("sleep 1", timeout=10)
    count = await backend.exec("ls -d /proc/[0-9]* | wc -l; ps -eo pid,ppid,pgid,sid,comm")
    assert count.exit_code == 0, count
    assert int(count.output.split()[0]) < 20, count.output.decode()
    assert (await backend.exec("echo alive")).output == b"alive\n"
    host = await asyncio.create_subprocess_exec("echo", "host fine", stdout=subprocess.PIPE)
    out, _ = await host.communicate()
    assert out == b"host fine\n"


async def test_a_memory_hog_is_oom_killed_and_reported(
    make_backend: BackendFactory, sample_repo: Path
) -> None:
    backend = await make_backend(sample_repo, memory="128m")
    hog = await backend.exec("python3 -c \"x = b'a' * (512 * 2**20); print('sur' + 'vived')\"")
    assert hog.exit_code == 137
    assert hog.oom_killed
    assert b"survived" not in hog.output
    small = await backend.exec("python3 -c \"x = b'a' * (8 * 2**20); print('fine')\"")
    assert small.output == b"fine\n"
    assert not small.oom_killed


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def bridge_server(docker_client: Any) -> Iterator[str]:
    """A real HTTP server on the host's address on Docker's default bridge."""
    config = docker_client.api.inspect_network("bridge")["IPAM"]["Config"][0]
    # Older engines leave Gateway out; the bridge then takes the subnet's first address.
    gateway = config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    server = http.server.ThreadingHTTPServer((gateway, 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://{gateway}:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


FETCH = (
    'python3 -c "import sys, urllib.request; '
    'print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" '
)


async def test_no_network_by_default(backend: DockerBackend, bridge_server: str) -> None:
    interfaces = await backend.exec("ls /sys/class/net")
    assert interfaces.output.split() == [b"lo"]
    fetch = await backend.exec(FETCH + bridge_server, timeout=30)
    assert fetch.exit_code != 0
    assert b"hello from the host" not in fetch.output


async def test_network_when_asked_for(
    make_backend: BackendFactory, sample_repo: Path, bridge_server: str
) -> None:
    backend = await make_backend(sample_repo, network=True)
    fetch = await backend.exec(FETCH + bridge_server, timeout=30)
    assert fetch.exit_code == 0, fetch.output
    assert fetch.output == b"hello from the host\n"


async def test_published_ports_bind_to_loopback_only(
    make_backend: BackendFactory, sample_repo: Path, docker_client: Any
) -> None:
    backend = await make_backend(sample_repo, network=True, ports={8000: None})
    assert backend.container_id is not None
    bindings = docker_client.api.inspect_container(backend.container_id)["NetworkSettings"][
        "Ports"
    ]["8000/tcp"]
    assert bindings and all(b["HostIp"] == "127.0.0.1" for b in bindings)


async def test_ca_bundle_and_proxy_reach_the_container(
    make_backend: BackendFactory, sample_repo: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    bundle = tmp_path / "corp-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    backend = await make_backend(sample_repo, ca_bundle=bundle, network=True)
    shown = await backend.exec('cat "$PIP_CERT"; echo "$SSL_CERT_FILE $HTTPS_PROXY"')
    text = shown.output.decode()
    assert "not really" in text
    assert text.strip().endswith("/etc/ssl/certs/reposim-ca-bundle.crt http://proxy.invalid:3128")


@pytest.fixture
def image_without_user(docker_client: Any) -> Iterator[str]:
    """The test image with its uid-1000 user removed (like python:3.11-slim, which has none)."""
    from tests.docker.conftest import committed_image

    script = "userdel reposim && rm -rf /home/reposim"
    with committed_image(
        docker_client, script, "reposim/test-no-user", f"test-{os.getpid()}"
    ) as image:
        yield image


async def test_an_image_without_our_uid_gets_a_user_and_a_home(
    image_without_user: str, make_backend: BackendFactory, sample_repo: Path
) -> None:
    # (image_without_user comes first so that it is torn down after the session's container)
    backend = await make_backend(sample_repo, image=image_without_user)
    who = await backend.exec('id -u; whoami; echo "$HOME $USER"; touch ~/written && echo ok')
    assert who.output.decode().split("\n")[:4] == ["1000", "reposim", "/home/reposim reposim", "ok"]
    assert "reposim (uid 1000)" in backend.describe().as_dict()["user"]
    pty = await backend.open_pty()
    try:
        await pty.write(b"echo pty-$USER-$HOME\n")
        seen = b""
        while b"pty-reposim-/home/reposim" not in seen:
            chunk = await asyncio.wait_for(pty.read(), 30)
            assert chunk
            seen += chunk
    finally:
        await pty.close()
