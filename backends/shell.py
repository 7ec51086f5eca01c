"""A persistent bash shell spoken to over a byte stream, shared by every backend.

Each command is sent as one `eval` of a single-quoted string, so a syntax error in it is bash's
error message and exit status 2 rather than a shell waiting forever for a closing quote. Its stdin
is /dev/null (it cannot swallow the commands that follow), stderr is merged into stdout, and after
it the shell prints a frame marker carrying the exit status and the working directory. Job control
(`set -m`) puts each command in its own process group, so a timeout or an interrupt can kill the
command's whole tree and leave the shell alive. A command that never returns to the shell (a
builtin loop) or kills it (`exit`) gets a fresh shell in the same working directory.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import re
import secrets
import signal
import time
from collections.abc import Awaitable, Callable

from backends.base import Backend, BackendError, ExecResult, OutputCallback

_BOOTSTRAP = (
    "set -m 2>/dev/null\n"
    "trap : INT\n"
    "export PS1='' PS2='' PAGER=cat GIT_PAGER=cat TERM=dumb\n"
    "unset HISTFILE PROMPT_COMMAND\n"
)
# After SIGKILLing a command's process groups, how long to wait for the shell to print its
# frame before deciding the shell itself is stuck (a builtin loop) and replacing it.
_KILL_GRACE = 1.0
# One compiled pattern for every frame; the nonce group tells this command's frame from a stale
# one (or from a command that prints a look-alike).
_FRAME = re.compile(rb"\x1eRSM-([0-9a-f]{12}):(\d+):([^\x1e]*)\x1e\n")
_INTERRUPT_GRACE = 1.0


class ShellChannel(abc.ABC):
    """A bidirectional byte stream to a running bash, plus the means to signal its children."""

    @abc.abstractmethod
    async def send(self, data: bytes) -> None: ...

    @abc.abstractmethod
    async def recv(self) -> bytes:
        """The next chunk of output; b"" at end of stream (the shell died)."""

    @abc.abstractmethod
    async def signal_children(self, sig: int) -> None:
        """Send `sig` to every process group the shell started (never to the shell itself)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Kill the shell and everything under it."""

    async def oom_killed_since(self, since: float) -> bool:
        """Whether the kernel's OOM killer struck inside this shell since `since` (if knowable)."""
        return False


def quote(text: str) -> str:
    """Single-quote `text` for bash."""
    return "'" + text.replace("'", "'\\''") + "'"


class PersistentShell:
    """Runs commands one at a time in a long-lived bash reached through a `ShellChannel`."""

    def __init__(self, open_channel: Callable[[], Awaitable[ShellChannel]], workdir: str) -> None:
        self._open_channel = open_channel
        self._workdir = workdir
        self._cwd = workdir
        self._channel: ShellChannel | None = None
        self._lock = asyncio.Lock()
        self._buffer = bytearray()
        self._eof = False
        self._restarted_unreported = False
        self._interrupted = False
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def cwd(self) -> str:
        """The shell's working directory as of the last command."""
        return self._cwd

    @property
    def running(self) -> bool:
        return not self._idle.is_set()

    async def start(self) -> None:
        await self._spawn(self._workdir)

    async def _spawn(self, cwd: str) -> None:
        self._channel = await self._open_channel()
        self._buffer.clear()
        self._eof = False
        await self._channel.send((_BOOTSTRAP + f"cd {quote(cwd)} 2>/dev/null\n").encode())

    async def close(self) -> None:
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await channel.close()

    async def _restart(self) -> None:
        if self._channel is not None:
            with contextlib.suppress(Exception):
                await self._channel.close()
        await self._spawn(self._cwd)
        self._restarted_unreported = True

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        async with self._lock:
            if self._channel is None:
                raise BackendError("The shell is not running; start the backend first.")
            if self._eof:
                await self._restart()
            return await self._run_locked(command, timeout, on_output, env)

    async def _run_locked(
        self,
        command: str,
        timeout: float | None,
        on_output: OutputCallback | None,
        env: dict[str, str] | None,
    ) -> ExecResult:
        assert self._channel is not None
        nonce = secrets.token_hex(6)
        marker = nonce.encode()
        exports = "".join(f"export {k}={quote(v)}; " for k, v in (env or {}).items())
        # The command goes into a variable first: bash 5.2 mis-parses the next input line after
        # an `eval` of a literal with a syntax error, but not after `eval "$var"`. The frame
        # marker has a line of its own: a child killed by SIGINT makes bash drop the rest of
        # the current line.
        script = (
            f"__reposim_cmd={quote(command)}\n"
            f'{{ {exports}eval "$__reposim_cmd"\n}} </dev/null 2>&1\n'
            f'printf \'\\036RSM-{nonce}:%d:%s\\036\\n\' "$?" "$PWD"\n'
        )
        started = time.monotonic()
        wall_started = time.time()
        output = bytearray()
        self._interrupted = False
        self._idle.clear()
        timed_out = False
        try:
            await self._channel.send(script.encode())
            try:
                async with asyncio.timeout(timeout):
                    match = await self._read_until(marker, output, on_output)
            except TimeoutError:
                # Reading resumes where it stopped: its state lives in self._buffer and output.
                timed_out = True
                await self._channel.signal_children(signal.SIGKILL)
                try:
                    async with asyncio.timeout(_KILL_GRACE):
                        match = await self._read_until(marker, output, on_output)
                except TimeoutError:
                    await self._restart()
                    self._restarted_unreported = False
                    return self._result(None, output, started, timed_out=True, shell_restarted=True)
        except asyncio.CancelledError:
            # The caller gave up mid-command: the shell's state is unknown, so replace it
            # before the next command rather than let stale output leak into it.
            self._eof = True
            with contextlib.suppress(Exception):
                await asyncio.shield(self._channel.close())
            raise
        finally:
            self._idle.set()
        restarted = self._restarted_unreported
        self._restarted_unreported = False
        if match is None:  # the shell died under the command (`exit`, killed)
            await self._restart()
            self._restarted_unreported = False
            return self._result(
                None,
                output,
                started,
                timed_out=timed_out,
                interrupted=self._interrupted,
                shell_restarted=True,
            )
        code, cwd = match
        self._cwd = cwd or self._cwd
        killed = timed_out or self._interrupted
        oom = False
        if code in (137, 139) or killed:
            oom = await self._channel.oom_killed_since(wall_started)
        if killed:
            # bash announces each job it saw killed ("Killed  sleep 30") when it next notices,
            # which would land in the next command's output: let it do so into a discarded run.
            interrupted = self._interrupted
            await self._run_locked("sleep 0.05; jobs", 5.0, None, None)
            self._interrupted = interrupted
        return self._result(
            None if killed else code,
            output,
            started,
            timed_out=timed_out,
            interrupted=self._interrupted,
            shell_restarted=restarted,
            oom_killed=oom,
        )

    def _result(
        self,
        code: int | None,
        output: bytearray,
        started: float,
        **flags: bool,
    ) -> ExecResult:
        return ExecResult(
            exit_code=code,
            output=bytes(output),
            duration=time.monotonic() - started,
            cwd=self._cwd,
            **flags,
        )

    async def _read_until(
        self,
        nonce: bytes,
        output: bytearray,
        on_output: OutputCallback | None,
    ) -> tuple[int, str] | None:
        assert self._channel is not None
        buf = self._buffer
        while True:
            match = _FRAME.search(buf)
            while match is not None and match.group(1) != nonce:
                match = _FRAME.search(buf, match.end())
            if match is not None:
                frame = int(match.group(2)), match.group(3).decode(errors="replace")
                self._emit(bytes(buf[: match.start()]), output, on_output)
                del buf[: match.end()]
                return frame
            # Hold back from the last record separator: it may start a marker not yet complete.
            hold = buf.rfind(b"\x1e")
            cut = len(buf) if hold == -1 or len(buf) - hold > 4200 else hold
            if cut:
                self._emit(bytes(buf[:cut]), output, on_output)
                del buf[:cut]
            chunk = await self._channel.recv()
            if not chunk:
                self._eof = True
                self._emit(bytes(buf), output, on_output)
                buf.clear()
                return None
            buf += chunk

    @staticmethod
    def _emit(data: bytes, output: bytearray, on_output: OutputCallback | None) -> None:
        if not data:
            return
        output += data
        if on_output is not None:
            on_output(data)

    async def interrupt(self) -> None:
        """Stop the running command: SIGINT to its process groups, SIGKILL if it lingers."""
        if self._idle.is_set() or self._channel is None:
            return
        self._interrupted = True
        await self._channel.signal_children(signal.SIGINT)
        if await self._wait_idle(_INTERRUPT_GRACE) or self._channel is None:
            return
        await self._channel.signal_children(signal.SIGKILL)
        if not await self._wait_idle(_KILL_GRACE) and self._channel is not None:
            # A builtin loop inside the shell: only killing the shell stops it.
            await self._channel.close()

    async def _wait_idle(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), seconds)
        except TimeoutError:
            return False
        return True


class ShellBackend(Backend):
    """A backend whose commands run in a `PersistentShell` (both built-in backends): exec and
    interrupt are the shell's; subclasses start it in `start` and close it in `stop`."""

    _shell: PersistentShell | None = None

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        if self._shell is None:
            raise BackendError(f"The {self.kind} backend has not been started.")
        return await self._shell.run(command, timeout=timeout, on_output=on_output, env=env)

    async def interrupt(self) -> None:
        if self._shell is not None:
            await self._shell.interrupt()
