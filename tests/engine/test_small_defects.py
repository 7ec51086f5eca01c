"""The smaller defects of issue 25 item 9, each on real processes: `exit N` reports N, a str
trajectory path works, config errors name the file, the asciicast header has the real size."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from backends.base import BackendError
from simulator.session import Session
from tests.engine.conftest import TerminalDrain


async def test_exit_in_a_command_reports_its_code_and_the_shell_goes_on(
    make_repo: Callable[..., Path],
) -> None:
    repo = make_repo({"README": "exit\n"})
    async with await Session.open(repo) as session:
        await session.exec("cd sub 2>/dev/null || mkdir sub && cd sub")
        result = await session.exec("echo before; exit 3")
        assert result.exit_code == 3, result
        assert result.output == b"before\n"
        assert result.shell_restarted  # the next command runs in a new shell
        after = await session.exec("echo after; pwd")
        assert after.exit_code == 0
        assert after.output.startswith(b"after\n") and after.output.rstrip().endswith(b"/sub")
        assert (await session.exec("exit")).exit_code == 0
        assert (await session.exec("false")).exit_code == 1


async def test_session_open_takes_a_str_trajectory_path(
    make_repo: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo({"README": "str\n"})
    monkeypatch.chdir(tmp_path)
    async with await Session.open(repo, trajectory_path="x.jsonl") as session:
        await session.exec("true")
    assert (tmp_path / "x.jsonl").is_file()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[docker]\npids = -5\n", "docker.pids: The cpus and pids limits must be positive"),
        (b'[docker]\nmemory = "lots"\n', "docker.memory: The memory limit 'lots' is not a size"),
        (b'[docker]\ndisk = "x1"\n', "docker.disk: The disk limit 'x1' is not a size"),
        (b'[dokcer]\nimage = "x"\n', "there is no table [dokcer] (known: docker, session, ui)"),
        (b"[ui]\ntheme = 42\n", "ui.theme must be a str"),
        (b'[ui]\ncolour = "x"\n', "[ui] has no setting 'colour'"),
    ],
)
def test_config_errors_name_the_file(
    make_repo: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    content: bytes,
    message: str,
) -> None:
    from simulator.user_config import docker_options

    repo = make_repo({"README": "config\n"})
    config = tmp_path / "home" / "reposim" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(content)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("REPOSIM_DOCKER_IMAGE", raising=False)
    with pytest.raises(BackendError) as raised:
        docker_options()
    assert str(raised.value).startswith(f"In {config}, ") and message in str(raised.value)
    assert "\n" not in str(raised.value)
    # Through the CLI: one sentence, exit 2, before any container is made.
    result = subprocess.run(
        [sys.executable, "-m", "reposim", "exec", "--backend", "docker", str(repo), "--", "true"],
        capture_output=True, text=True, env=dict(os.environ), timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == f"reposim: error: {raised.value}\n"


async def test_the_asciicast_header_has_the_terminals_real_size(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    import json

    from simulator.interop import export_text
    from simulator.trajectory import read_trajectory

    repo = make_repo({"README": "cast\n"})
    out = tmp_path / "cast.jsonl"
    async with await Session.open(repo, trajectory_path=out) as session:
        terminal = await session.open_terminal(100, 40)
        reader = TerminalDrain(terminal)
        await terminal.write(b"stty size; echo first-done\n")
        await reader.until(
            lambda received: b"first-done\r\n" in received.replace(b"echo first-done", b""),
            within=60,
        )
        await terminal.resize(90, 30)
        await terminal.write(b"stty size; exit\n")
        await reader.closed(within=60)
        assert b"40 100" in reader.received and b"30 90" in reader.received
    recorded = read_trajectory(out)
    lines = export_text(recorded.header, recorded.events, "asciicast").splitlines()
    header = json.loads(lines[0])
    assert (header["width"], header["height"]) == (100, 40)
    assert [json.loads(line)[1:] for line in lines[1:] if '"r"' in line] == [["r", "90x30"]]
