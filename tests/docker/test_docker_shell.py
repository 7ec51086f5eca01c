"""The persistent shell inside the container: state, streaming, exit codes, timeouts, PTY."""

from __future__ import annotations

import asyncio
from pathlib import Path

from backends.docker import DockerBackend
from tests.docker.conftest import BackendFactory


async def test_cwd_and_environment_survive_between_commands(backend: DockerBackend) -> None:
    first = await backend.exec("cd calc && export GREETING='hello there'")
    assert first.exit_code == 0
    assert first.cwd == "/workspace/calc"
    second = await backend.exec('echo "$GREETING from $PWD"')
    assert second.output == b"hello there from /workspace/calc\n"


async def test_exit_codes_are_exact_and_stderr_is_merged(backend: DockerBackend) -> None:
    assert (await backend.exec("false")).exit_code == 1
    result = await backend.exec("sh -c 'echo to-out; echo to-err >&2; exit 7'")
    assert result.exit_code == 7
    assert b"to-out" in result.output and b"to-err" in result.output
    syntax = await backend.exec("if then fi")
    assert syntax.exit_code == 2
    assert (await backend.exec("echo still here")).output == b"still here\n"


async def test_a_look_alike_frame_is_output_and_ids_outlast_a_batch(backend: DockerBackend) -> None:
    """The output relay ends a command at the frame with the command's own id (it is given the
    ids ahead, 64 at a time, instead of one request per command): another id's frame is output
    like any other, and commands past the first batch of ids keep exact output."""
    fake = await backend.exec("printf 'a\\036RSM-%s:0:/x\\036\\nb\\n' 0123456789ab")
    assert fake.output == b"a\x1eRSM-0123456789ab:0:/x\x1e\nb\n" and fake.exit_code == 0
    for n in range(100):
        assert (await backend.exec(f"echo {n}")).output == f"{n}\n".encode()


async def test_output_streams_while_the_command_runs(backend: DockerBackend) -> None:
    seen_first = asyncio.Event()
    chunks: list[bytes] = []

    def on_output(chunk: bytes) -> None:
        chunks.append(chunk)
        if b"first" in b"".join(chunks):
            seen_first.set()

    # The command waits for a file that the test writes only after it saw the first line.
    running = asyncio.ensure_future(
        backend.exec(
            "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second",
            on_output=on_output,
            timeout=60,
        )
    )
    await asyncio.wait_for(seen_first.wait(), 30)
    assert not running.done()
    await backend.write_file("go", b"")  # the file shell works while the command shell is busy
    result = await running
    assert result.exit_code == 0
    assert result.output == b"first\nsecond\n"


async def test_timeout_kills_the_command_tree_and_the_shell_stays(backend: DockerBackend) -> None:
    await backend.exec("cd /tmp && export KEPT=yes")
    result = await backend.exec("sleep 301 & sleep 302", timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    after = await backend.exec('echo "$KEPT $PWD"; echo "left=$(pgrep -cf "sleep 30[12]")"')
    # bash may also print a notice about the killed background job (shell.py's job notices)
    lines = after.output.decode().splitlines()
    assert "yes /tmp" in lines
    assert "left=0" in lines


async def test_a_builtin_loop_that_times_out_gets_a_fresh_shell(backend: DockerBackend) -> None:
    await backend.exec("cd calc")
    result = await backend.exec("while :; do :; done", timeout=1)
    assert result.timed_out and result.shell_restarted
    after = await backend.exec("pwd")
    assert after.output == b"/workspace/calc\n"


async def test_interrupt_stops_the_command_and_keeps_the_shell(backend: DockerBackend) -> None:
    started = asyncio.Event()
    running = asyncio.ensure_future(
        backend.exec("echo started; sleep 300", on_output=lambda _c: started.set(), timeout=60)
    )
    await asyncio.wait_for(started.wait(), 30)
    await backend.interrupt()
    result = await running
    assert result.interrupted
    assert result.exit_code is None
    assert (await backend.exec("echo ok")).output == b"ok\n"


async def read_until(pty: object, needle: bytes, limit: float = 30) -> bytes:
    from backends.base import Pty

    assert isinstance(pty, Pty)
    seen = b""

    async def loop() -> bytes:
        nonlocal seen
        while needle not in seen:
            chunk = await pty.read()
            if not chunk:
                break
            seen += chunk
        return seen

    return await asyncio.wait_for(loop(), limit)


async def test_pty_runs_an_interactive_shell_and_resizes(backend: DockerBackend) -> None:
    pty = await backend.open_pty(cols=80, rows=24)
    try:
        await pty.write(b"echo $((6 * 7)) $USER $PWD\n")
        out = await read_until(pty, b"42 reposim /workspace")
        assert b"42 reposim /workspace" in out
        await pty.resize(100, 30)
        await pty.write(b"stty size\n")
        assert b"30 100" in await read_until(pty, b"30 100")
        await pty.write(b"exit\n")
        rest = b""
        while chunk := await asyncio.wait_for(pty.read(), 30):
            rest += chunk
        assert pty.closed
    finally:
        await pty.close()
    assert (await backend.exec("echo shell unaffected")).exit_code == 0


async def test_commands_see_a_real_terminal_type_and_plain_pagers(
    make_backend: BackendFactory, sample_repo: Path
) -> None:
    backend = await make_backend(sample_repo)
    probe = 'printf "%s|%s|%s|" "$TERM" "$PAGER" "$GIT_PAGER"; [ -t 1 ] && echo tty || echo pipe'
    assert (await backend.exec(probe)).output == b"xterm-256color|cat|cat|pipe\n"
    other = await make_backend(sample_repo, term="vt100")
    assert (await other.exec('echo "$TERM"')).output == b"vt100\n"
