"""The local backend's persistent shell and workspace confinement, on real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import pytest

from backends.base import PathEscapeError
from backends.local import LocalBackend
from tests.conftest import WAIT


async def test_workspace_is_a_copy_and_the_checkout_is_untouched(
    backend: LocalBackend, sample_repo: Path
) -> None:
    assert backend.workspace != sample_repo
    await backend.write_file("calc/ops.py", b"changed\n")
    assert "def add" in (sample_repo / "calc/ops.py").read_text()
    log = await backend.exec("git log --oneline | wc -l")
    assert log.output.strip() == b"1"  # history came along


async def test_uncommitted_changes_come_along(make_repo, tmp_path: Path) -> None:
    repo = make_repo({"a.txt": "committed\n"})
    (repo / "a.txt").write_text("dirty\n")
    (repo / "new.txt").write_text("untracked\n")
    b = LocalBackend(repo, scratch_root=tmp_path / "s")
    await b.start()
    try:
        assert await b.read_file("a.txt") == b"dirty\n"
        assert await b.read_file("new.txt") == b"untracked\n"
    finally:
        await b.stop()


async def test_cwd_env_and_venv_persist(backend: LocalBackend) -> None:
    await backend.exec("cd calc && export GREETING=hello")
    result = await backend.exec('pwd; echo "$GREETING"')
    lines = result.output.decode().split()
    assert lines[0].endswith("/calc")
    assert lines[1] == "hello"
    await backend.exec("cd .. && python3 -m venv --without-pip .venv-t && . .venv-t/bin/activate")
    active = await backend.exec('echo "$VIRTUAL_ENV"')
    assert active.output.decode().strip().endswith(".venv-t")


async def test_syntax_error_does_not_wedge_the_shell(backend: LocalBackend) -> None:
    bad = await backend.exec("echo 'unterminated")
    assert bad.exit_code == 2
    assert b"unexpected EOF" in bad.output
    good = await backend.exec("echo fine")
    assert good.output == b"fine\n" and good.exit_code == 0


async def test_commands_cannot_read_the_shells_stdin(backend: LocalBackend) -> None:
    result = await backend.exec("cat; echo after", timeout=180)  # the suite's deadline
    assert result.output == b"after\n"


async def test_timeout_kills_the_process_group_and_shell_survives(backend: LocalBackend) -> None:
    await backend.exec("export KEEP=1")
    marker = backend.workspace / "child-alive"
    # An unusual duration, so that no other process on the machine matches it in `ps`.
    result = await backend.exec(f"(sleep 900.173; touch {marker}) & sleep 900.173", timeout=0.5)
    assert result.timed_out and result.exit_code is None
    assert not result.shell_restarted
    after = await backend.exec('echo "$KEEP"')
    assert after.output == b"1\n"
    # Killed processes leave the table once reaped: wait for that (a deadline, far below the
    # 900 s they would live if they had not been killed; 10 s against 29 s was tight at load).
    deadline = time.monotonic() + WAIT
    while True:
        ps = await backend.exec("ps -eo args | grep -c '[s]leep 900.173' || true")
        if ps.output.strip() == b"0" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert ps.output.strip() == b"0"


async def test_builtin_loop_timeout_restarts_the_shell_in_the_same_directory(
    backend: LocalBackend,
) -> None:
    await backend.exec("cd calc")
    result = await backend.exec("while true; do :; done", timeout=0.3)
    assert result.timed_out and result.shell_restarted
    where = await backend.exec("pwd")
    assert where.output.decode().strip().endswith("/calc")


async def test_paths_that_escape_are_refused(backend: LocalBackend, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    for path in ("../outside.txt", "../../etc/passwd", str(outside), "calc/../../x"):
        with pytest.raises(PathEscapeError):
            await backend.read_file(path)
        with pytest.raises(PathEscapeError):
            await backend.write_file(path, b"x")
    (backend.workspace / "link").symlink_to(outside)
    with pytest.raises(PathEscapeError):
        await backend.read_file("link")
    with pytest.raises(PathEscapeError):
        await backend.delete("link/..")
    assert outside.read_text() == "secret"


async def test_pty_runs_an_interactive_shell(backend: LocalBackend) -> None:
    pty = await backend.open_pty(100, 30)
    try:
        await pty.write(b"stty size; echo pty-$((40+2))\n")
        seen = b""
        async with asyncio.timeout(10):
            while b"pty-42" not in seen or b"30 100" not in seen:
                seen += await pty.read()
        await pty.resize(120, 40)
        await pty.write(b"stty size\n")
        async with asyncio.timeout(10):
            while b"40 120" not in seen:
                seen += await pty.read()
    finally:
        await pty.close()
    assert pty.closed


async def test_closing_a_pty_twice_leaves_a_reused_descriptor_alone(
    backend: LocalBackend, tmp_path: Path
) -> None:
    """The terminal pane closes its PTY and the backend's stop closes it again. The second close
    must not close the descriptor number the first one freed: by then another thread (the
    shell's process walk reading /proc) may hold that number, and closing it under the reader
    gave EBADF/ENOTDIR in a full-suite run."""
    pty = await backend.open_pty()
    number = pty._master  # type: ignore[attr-defined]
    await pty.close()
    other = tmp_path / "other"
    other.write_text("still open")
    placeholder = os.open(other, os.O_RDONLY)
    try:
        os.dup2(placeholder, number)  # someone else's file now has the freed number
        await pty.close()
        assert os.read(number, 64) == b"still open"
    finally:
        for fd in {placeholder, number}:
            with contextlib.suppress(OSError):
                os.close(fd)
