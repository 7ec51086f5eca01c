"""`reposim exec` and `reposim test`: one command or one test run in a recorded session."""

from __future__ import annotations

import sys

import click

from backends.output import DEFAULT_CAP, format_size, parse_size
from reposim.cli.common import CliError, SessionFlags, backend_options, existing_dir, run_async
from simulator.events import Actor
from simulator.testrun import TestRunResult


def _output_cap(text: str) -> int | None:
    if text.strip().lower() in ("none", "0", "off"):
        return None
    try:
        return parse_size(text)
    except ValueError:
        raise CliError(
            f"--output-cap {text} is not a size (e.g. 512M, 2G, or none for no cap)."
        ) from None


def _write_raw(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


@click.command("exec")
@click.argument("path")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option(
    "--timeout", type=float, default=None, help="Kill the command after this many seconds."
)
@click.option(
    "--output-cap",
    default=format_size(DEFAULT_CAP).replace(" ", ""),
    show_default=True,
    metavar="SIZE",
    help="Stop the command once it has printed this much (e.g. 512M, 4G; none: no cap). "
    "Memory stays small either way: output past a window is spooled to the trajectory's "
    "blob directory.",
)
@backend_options
def exec_command(
    path: str,
    command: tuple[str, ...],
    timeout: float | None,
    output_cap: str,
    flags: SessionFlags,
) -> None:
    """Run COMMAND in a session on the repository at PATH and record it.

    Put `--` before the command so that its own options are not taken for reposim's:

        reposim exec ./myrepo -- pytest -q

    The exit code is the command's (124 if it timed out, 125 if its output reached the cap,
    130 if interrupted).
    """
    root = existing_dir(path)
    cap = _output_cap(output_cap)
    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise click.UsageError("Give the command to run after `--`.")
    line = argv[0] if len(argv) == 1 else " ".join(_shell_quote(a) for a in argv)

    async def run() -> int:
        session = await flags.open(root, output_cap=cap)
        reason = "closed"
        try:
            result = await session.exec(
                line,
                actor=Actor.HUMAN,
                timeout=timeout,
                on_output=None if flags.as_json else _write_raw,
            )
        except BaseException:
            reason = "interrupted"
            raise
        finally:
            await session.close(reason)
            if not flags.as_json:
                click.echo(f"reposim: trajectory {session.trajectory_path}", err=True)
        if result.timed_out:
            click.echo(
                f"reposim: the command timed out after {timeout} s and was killed.", err=True
            )
            return 124
        if result.output_capped:
            click.echo(
                f"reposim: the command's output reached the {format_size(result.output_size)} "
                "cap (--output-cap) and the command was stopped; the trajectory keeps what it "
                "printed up to there.",
                err=True,
            )
            return 125
        if result.oom_killed:
            click.echo("reposim: the command was killed for running out of memory.", err=True)
        if result.exit_code is None:
            return 130
        return result.exit_code

    sys.exit(run_async(run))


def _shell_quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def print_test_report(run: TestRunResult) -> None:
    if not run.structured:
        click.echo(f"tests {run.summary()}")
        return
    for test in run.tests:
        if test.outcome in ("failed", "error"):
            where = f" ({test.file}:{test.line})" if test.file else ""
            first = test.message.splitlines()[0] if test.message else ""
            click.echo(f"{test.outcome.upper():7} {test.id}{where}  {first}")
    click.echo(f"{run.summary()} in {run.duration:.2f}s")


@click.command("test")
@click.argument("path")
@click.argument("selector", required=False)
@click.option(
    "--command",
    "test_command",
    help="The test command (default: the one kept for the repository by `reposim open`, else "
    "the one detected: make test, ctest, unittest, python -m pytest). "
    "pytest commands give per-test results; any other passes or fails by exit code.",
)
@click.option(
    "--timeout", type=float, default=None, help="Kill the test run after this many seconds."
)
@backend_options
def test_command(
    path: str,
    selector: str | None,
    test_command: str | None,
    timeout: float | None,
    flags: SessionFlags,
) -> None:
    """Run the tests of the repository at PATH (optionally only SELECTOR) and record them.

    Prints per-test failures with their location and a summary; exits 0 when the run passed.
    """
    root = existing_dir(path)
    if test_command is None:
        from simulator.test_command import choose

        test_command = choose(root, None)

    async def run() -> int:
        session = await flags.open(root, test_command=test_command)
        try:
            result = await session.run_tests(selector, timeout=timeout)
        finally:
            await session.close()
        if not flags.as_json:
            print_test_report(result)
            click.echo(f"reposim: trajectory {session.trajectory_path}", err=True)
        return 0 if result.passed else 1

    sys.exit(run_async(run))


def register(group: click.Group) -> None:
    group.add_command(exec_command)
    group.add_command(test_command)
