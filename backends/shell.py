"""A persistent bash shell spoken to over a byte stream, shared by every backend.

Each command's text reaches bash as data, not as input to parse: a short line calls a function
the bootstrap defined (`__rr`), which takes the command's id and then its exact bytes with one
`read -N` (bash reads a pipe one byte per read(2) when it parses, but `read -N` reads as many
bytes as it is told at once), and the same line runs `eval` of that text, so a syntax error in it
is bash's error message and exit status 2 rather than a shell waiting forever. Its stdin
is /dev/null (it cannot swallow the commands that follow), stderr is merged into stdout, and after
it the shell prints a frame marker carrying the exit status and the working directory. Job control
(`set -m`) puts each command in its own process group, so a timeout or an interrupt can kill the
command's whole tree and leave the shell alive. A command that never returns to the shell (a
builtin loop) or kills it (`exit`) gets a fresh shell in the same working directory.

The shell's own stderr is /dev/null: bash reports the death of a background job ("[1]+
Terminated ...") on stderr when it next reads a command, which would otherwise land in whatever
command runs next; a command's own stderr is its output as before. Each command exports
`REPOSIM_COMMAND_ID` (its nonce), so a timeout or an interrupt can tell the processes of this
command, however detached (nohup, setsid), from the background jobs of earlier ones.

Where the channel offers it (`ShellChannel.output_dir`), each command writes its output and then
its frame to a FIFO of its own (backends/command_output.py): what a command's background jobs
print after its frame is drained apart and dropped, never read as a later command's output.

Output goes through an `OutputCapture` (backends/output.py): memory stays bounded however much a
command prints, and a command whose output reaches the capture's cap is stopped.
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

from backends.base import Backend, BackendError, ExecOptions, ExecResult, OutputCallback
from backends.output import OutputCapture

COMMAND_ID_VAR = "REPOSIM_COMMAND_ID"
DEFAULT_TERM = "xterm-256color"
"""TERM for a session's commands: what a user's terminal has. Tests that look at TERM (colour
libraries, curses) behave as in the user's shell; output stays free of colour anyway, since a
command's stdout is a pipe and nothing forces colour, and pagers are `cat`, so nothing waits
for a key."""
_TERM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def check_term(term: str) -> str:
    """`term` if it is a terminal name like xterm-256color; BackendError otherwise."""
    if not isinstance(term, str) or not _TERM_NAME.fullmatch(term):
        raise BackendError(
            f"The terminal type {term!r} is not a name like xterm-256color, vt100 or dumb."
        )
    return term


def _bootstrap(term: str) -> str:
    return (
        "exec 2>/dev/null\n"
        "set -m\n"
        "trap : INT\n"
        # `exit N` in a command ends this shell: still say N, in the command's frame, with
        # \x1f for its directory so the reader knows the shell is gone (issue 25). A function,
        # not an EXIT trap: a trap is inherited by a background job's subshell, which then
        # cannot exec its command, and that subshell's frame and job notices leaked into later
        # commands' output. Subshells calling `exit` print nothing ($BASHPID is not $$).
        'exit() { __rse=${1:-$?}; [ "$BASHPID" = "$$" ] && '
        'printf "\\036RSM-%s:%d:\\037\\036\\n" '
        f'"${COMMAND_ID_VAR}" "$__rse"; builtin exit "$@"; }}\n'
        f"export PS1='' PS2='' PAGER=cat GIT_PAGER=cat MANPAGER=cat TERM={check_term(term)}\n"
        "unset HISTFILE PROMPT_COMMAND\n"
    )


# After SIGKILLing a command's process groups, how long to wait for the shell to print its
# frame before deciding the shell itself is stuck (a builtin loop) and replacing it.
_KILL_GRACE = 1.0
# One compiled pattern for every frame; the nonce group tells this command's frame from a stale
# one (or from a command that prints a look-alike).
_FRAME = re.compile(rb"\x1eRSM-([0-9a-f]{12}):(\d+):([^\x1e]*)\x1e\n")
_INTERRUPT_GRACE = 1.0
_SHELL_EXITED = "\x1f"
"""The directory field of the frame the shell's EXIT trap prints (see _bootstrap)."""


RUNNING_NAME = "rsm-run"
"""The command shell's name (/proc/PID/comm) while it runs a command, where the channel asks
for it (`ShellChannel.names_running`): only the shell itself can set its name, so a process
that watches the session (the Docker reaper) sees synchronously whether a command has begun,
whatever the order in which other notices reach it."""


def _framing(fifos: str | None, name_running: bool = False) -> str:
    """The functions every command's script calls (see `_command_script`).

    `__rr NAME LEN [XLEN]` reads the command's id (12 bytes), its text (LEN bytes) and, when
    given, XLEN bytes of `export` statements for its environment, with `read -N` in the C
    locale (so LEN counts bytes whatever the session's locale; TMOUT would time the read out),
    exports the id and points `__ro` at the command's FIFO. `__rf` prints the frame with the
    status of the command before it (`$?` at a function's start) and the shell's directory,
    and hands the command's background jobs over (`disown -a`). `${3-}`, `"$?"` and `builtin`
    keep them working whatever a command did to `set -u`, IFS or the builtins' names.

    With `name_running`, `__rr` names the shell RUNNING_NAME before anything else and `__rf`
    names it `bash` again before it prints the frame."""
    to = ' >"$__ro"' if fifos is not None else ""
    where = "" if fifos is None else f"__rd={quote(fifos)}\n"
    named = f"builtin printf {RUNNING_NAME} >/proc/$$/comm; " if name_running else ""
    unnamed = "builtin printf bash >/proc/$$/comm; "
    return where + (
        f"__rr() {{ {named}TMOUT= LC_ALL=C builtin read -rN12 __ri; "
        'TMOUT= LC_ALL=C builtin read -rN"$2" __rsc; '
        f"builtin export {COMMAND_ID_VAR}=$__ri; "
        + ("__ro=$__rd/$1; " if fifos is not None else "")
        + '[ -z "${3-}" ] || '
        '{ TMOUT= LC_ALL=C builtin read -rN"$3" __rx; builtin eval "$__rx"; }; }\n'
        + (f"__rf() {{ __rs=$?; {unnamed}" if name_running else "__rf() { ")
        + "builtin printf '\\036RSM-%s:%d:%s\\036\\n' \"$__ri\" "
        + ('"$__rs"' if name_running else '"$?"')
        + ' "$PWD"'
        f"{to}; builtin disown -a; }}\n"
    )


def _command_script(
    nonce: str, command: str, env: dict[str, str] | None, output_name: str | None
) -> bytes:
    """What the shell is sent to run `command`: the line that reads and runs it, the bytes
    `__rr` reads (the id, the command, its exports), and the line that prints its frame.

    The text is data for `read -N`, never parsed as input, so it arrives whole in a read or
    two rather than one read(2) per byte (what bash does for what it parses from a pipe, so
    that it never consumes input meant for a command); only the two short lines are parsed.
    The command runs in a group, not a function, so `return`, `local`, `$1`, `shift` and the
    traps behave as at the prompt. The command goes into a variable first: bash 5.2 mis-parses
    the next input line after an `eval` of a literal with a syntax error, but not after `eval
    "$var"`. The frame has a line of its own: a child killed by SIGINT makes bash drop the rest
    of the current line. `disown -a` (in `__rf`) hands the command's background jobs over
    before the next command: bash reports a job's death after the next foreground program
    ends, so a job killed late (by `kill` on a loaded machine, or when it crashes) would report
    into whichever command runs then. Disowned jobs run on and are killed on interrupt, timeout
    or close like any others, but a later command reaches them by pid ($!), not by %N.

    With a channel of its own (`output_name`), the command's output and then its frame go to
    its FIFO in the directory the bootstrap put in $__rd."""
    # bash drops a NUL byte from what it parses (its strings end at one) and `read` skips it
    # without counting it, which would read into what follows: drop it here, as bash did.
    text = command.replace("\0", "").encode()
    exports = "".join(f"export {k}={quote(v)}; " for k, v in (env or {}).items())
    setup = exports.replace("\0", "").encode()
    name = output_name if output_name is not None else "-"
    to = ' >"$__ro"' if output_name is not None else ""
    sizes = f"{len(text)} {len(setup)}" if setup else f"{len(text)}"
    return (
        f'__rr {name} {sizes};{{ eval "$__rsc"\n}} </dev/null{to} 2>&1\n'.encode()
        + nonce.encode()
        + text
        + setup
        + b"__rf\n"
    )


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

    def output_dir(self) -> str | None:
        """A directory of FIFOs, one per command, that this channel reads (see
        backends/command_output.py), or None: commands write to the shell's own stdout. A
        command's own channel keeps what its leftover background processes print out of later
        commands' output: after `command_done` it is drained apart and thrown away."""
        return None

    def names_running(self) -> bool:
        """Whether the shell names itself RUNNING_NAME while it runs a command (for a watcher
        of the session's processes that must know at once when a command begins)."""
        return False

    def output_name(self) -> str:
        """The name, in `output_dir`, of the next command's FIFO. Called only when `output_dir`
        is not None, so only a channel that returns a directory defines it; the others never
        reach this default."""
        raise NotImplementedError

    async def command_id(self) -> str:
        """The id (`REPOSIM_COMMAND_ID`, the frame's nonce) of the next command: random, or one
        the channel has already handed to whatever reads the command's FIFO."""
        return secrets.token_hex(6)

    async def command_done(self) -> None:
        """The command whose frame was just read is over; the next one gets a fresh channel."""
        return None

    async def signal_command(self, sig: int, command_id: str) -> None:
        """Send `sig` to the processes of the command whose `REPOSIM_COMMAND_ID` is
        `command_id`; channels that cannot tell commands apart signal every child."""
        await self.signal_children(sig)

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

    def __init__(
        self,
        open_channel: Callable[[], Awaitable[ShellChannel]],
        workdir: str,
        *,
        term: str = DEFAULT_TERM,
    ) -> None:
        self._bootstrap = _bootstrap(term)
        self._open_channel = open_channel
        self._workdir = workdir
        self._cwd = workdir
        self._channel: ShellChannel | None = None
        self._lock = asyncio.Lock()
        self._buffer = bytearray()
        self._eof = False
        self._restarted_unreported = False
        self._interrupted = False
        self._command_id = ""
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
        framing = _framing(self._channel.output_dir(), self._channel.names_running())
        await self._channel.send(
            (self._bootstrap + framing + f"cd {quote(cwd)} 2>/dev/null\n").encode()
        )

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

    async def run(self, command: str, options: ExecOptions | None = None) -> ExecResult:
        options = options or ExecOptions()
        capture = options.capture or OutputCapture.whole()
        async with self._lock:
            if self._channel is None:
                capture.discard()
                raise BackendError("The shell is not running; start the backend first.")
            if self._eof:
                await self._restart()
            return await self._run_locked(
                command, options.timeout, options.on_output, options.env, capture
            )

    async def _run_locked(
        self,
        command: str,
        timeout: float | None,
        on_output: OutputCallback | None,
        env: dict[str, str] | None,
        capture: OutputCapture,
    ) -> ExecResult:
        assert self._channel is not None
        nonce = await self._channel.command_id()
        marker = nonce.encode()
        own = self._channel.output_dir() is not None
        script = _command_script(nonce, command, env, self._channel.output_name() if own else None)
        started = time.monotonic()
        wall_started = time.time()
        output = _Output(capture, on_output)
        self._command_id = nonce
        self._interrupted = False
        self._idle.clear()
        timed_out = False
        try:
            await self._channel.send(script)
            try:
                async with asyncio.timeout(timeout):
                    match = await self._read_until(marker, output)
            except (TimeoutError, _OutputCut) as stop:
                # Reading resumes where it stopped: its state lives in self._buffer and output.
                timed_out = isinstance(stop, TimeoutError)
                await self._channel.signal_command(signal.SIGKILL, nonce)
                try:
                    async with asyncio.timeout(_KILL_GRACE):
                        match = await self._read_until(marker, output)
                except TimeoutError:
                    await self._restart()
                    self._restarted_unreported = False
                    return self._result(
                        None, output, started, timed_out=timed_out, shell_restarted=True
                    )
        except asyncio.CancelledError:
            # The caller gave up mid-command: the shell's state is unknown, so replace it
            # before the next command rather than let stale output leak into it.
            capture.discard()
            self._eof = True
            with contextlib.suppress(Exception):
                await asyncio.shield(self._channel.close())
            raise
        finally:
            self._idle.set()
        if match is not None:
            await self._channel.command_done()
            if own:
                self._buffer.clear()  # what followed the frame is the leftovers' output
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
        if cwd == _SHELL_EXITED:  # the command ran `exit N`: its code is N, the shell is new
            await self._restart()
            self._restarted_unreported = False
            return self._result(code, output, started, shell_restarted=True)
        self._cwd = cwd or self._cwd
        killed = timed_out or self._interrupted or output.cut
        oom = False
        if code in (137, 139) or killed:
            oom = await self._channel.oom_killed_since(wall_started)
        if killed:
            # bash announces each job it saw killed ("Killed  sleep 30") when it next notices,
            # which would land in the next command's output: let it do so into a discarded run.
            interrupted = self._interrupted
            await self._run_locked("sleep 0.05; jobs", 5.0, None, None, OutputCapture.whole())
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
        output: _Output,
        started: float,
        **flags: bool,
    ) -> ExecResult:
        taken = output.capture.finish()
        return ExecResult(
            exit_code=code,
            output=taken.view,
            duration=time.monotonic() - started,
            cwd=self._cwd,
            output_size=taken.size,
            output_lines=taken.lines,
            output_sha256=taken.sha256,
            output_elided=taken.elided,
            output_capped=taken.capped,
            output_spool=str(taken.spool) if taken.spool is not None else None,
            **flags,
        )

    async def _read_until(self, nonce: bytes, output: _Output) -> tuple[int, str] | None:
        assert self._channel is not None
        buf = self._buffer
        while True:
            match = _FRAME.search(buf)
            while match is not None and match.group(1) != nonce:
                match = _FRAME.search(buf, match.end())
            if match is not None:
                frame = int(match.group(2)), match.group(3).decode(errors="replace")
                output.emit(bytes(buf[: match.start()]))
                del buf[: match.end()]
                return frame
            # Hold back from the last record separator: it may start a marker not yet complete.
            hold = buf.rfind(b"\x1e")
            cut = len(buf) if hold == -1 or len(buf) - hold > 4200 else hold
            if cut:
                output.emit(bytes(buf[:cut]))
                del buf[:cut]
            chunk = await self._channel.recv()
            while not buf and chunk and b"\x1e" not in chunk:
                # Plain output with nothing held back: straight through, without copies.
                output.emit(chunk)
                chunk = await self._channel.recv()
            if not chunk:
                self._eof = True
                output.emit(bytes(buf))
                buf.clear()
                return None
            buf += chunk

    async def interrupt(self) -> None:
        """Stop the running command: SIGINT to its process groups, SIGKILL if it lingers."""
        if self._idle.is_set() or self._channel is None:
            return
        self._interrupted = True
        command = self._command_id
        await self._channel.signal_command(signal.SIGINT, command)
        if await self._wait_idle(_INTERRUPT_GRACE) or self._channel is None:
            return
        await self._channel.signal_command(signal.SIGKILL, command)
        if not await self._wait_idle(_KILL_GRACE) and self._channel is not None:
            # A builtin loop inside the shell: only killing the shell stops it.
            await self._channel.close()

    async def _wait_idle(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), seconds)
        except TimeoutError:
            return False
        return True


class _OutputCut(Exception):
    """The command's output reached the capture's cap: stop the command."""


class _Output:
    """One command's output on its way out: into the capture and to the live callback. Once
    the capture's cap is reached, what follows is dropped."""

    def __init__(self, capture: OutputCapture, on_output: OutputCallback | None) -> None:
        self.capture = capture
        self._on_output = on_output
        self.cut = False

    def emit(self, data: bytes) -> None:
        """Take output; raises _OutputCut once, when the cap is reached."""
        if not data or self.cut:
            return
        size = self.capture.size
        within = self.capture.feed(data)
        if self._on_output is not None:
            self._on_output(data if within else data[: self.capture.size - size])
        if not within:
            self.cut = True
            raise _OutputCut


class ShellBackend(Backend):
    """A backend whose commands run in a `PersistentShell` (both built-in backends): exec and
    interrupt are the shell's; subclasses start it in `start` and close it in `stop`."""

    _shell: PersistentShell | None = None

    async def run_command(self, command: str, options: ExecOptions) -> ExecResult:
        if self._shell is None:
            raise BackendError(f"The {self.kind} backend has not been started.")
        return await self._shell.run(command, options)

    async def interrupt(self) -> None:
        if self._shell is not None:
            await self._shell.interrupt()
