"""What every sub-command shares: clear one-sentence errors, JSON event printing, options."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    # Loaded when a command opens a session, not with the CLI: `reposim open` draws its first
    # frame before then (issue 29).
    from simulator.events import Event
    from simulator.session import Session, Subscriber

T = TypeVar("T")


def user_errors() -> tuple[type[Exception], ...]:
    """Errors a user can cause; each prints as one sentence with exit code 2. (Asked for once an
    exception is out: whatever raised one of these has loaded its module by then.)"""
    from backends.base import BackendError
    from simulator.session_errors import SessionError
    from simulator.trajectory import TrajectoryError

    return (BackendError, SessionError, TrajectoryError)


class CliError(click.ClickException):
    """A user-facing error: one sentence, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"reposim: error: {self.format_message()}", err=True)


def run_cli(group: click.Group) -> int:
    try:
        group.main(standalone_mode=False, prog_name="reposim")
    except click.exceptions.Abort:
        click.echo("reposim: aborted.", err=True)
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("reposim: interrupted.", err=True)
        return 130
    except Exception as exc:
        if not isinstance(exc, user_errors()):
            raise
        click.echo(f"reposim: error: {exc}", err=True)
        return 2
    return 0


# Signals that end a command the way Ctrl-C does (SIGHUP does not exist on Windows).
_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def run_async(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine; user errors become CliError, Ctrl-C, SIGTERM or SIGHUP a clean exit 130.

    SIGTERM and SIGHUP (the terminal was closed) cancel the main task like Ctrl-C does, so
    sessions close, their processes and containers are removed and the trajectory ends with
    its reason instead of being cut off.
    """

    async def main() -> T:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if task is not None:
            # Not every loop can take signal handlers: none on some platforms
            # (NotImplementedError), none off the main thread (ValueError, RuntimeError) when
            # a command runs inside a worker; there Ctrl-C still arrives as KeyboardInterrupt.
            for sig in _STOP_SIGNALS:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, task.cancel)
        try:
            return await factory()
        finally:
            for sig in _STOP_SIGNALS:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(sig)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    except Exception as exc:
        if not isinstance(exc, user_errors()):
            raise
        raise CliError(str(exc)) from None


def existing_dir(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.exists():
        raise CliError(f"{path} does not exist.")
    if not target.is_dir():
        raise CliError(f"{path} is not a directory.")
    return target.resolve()


def existing_file(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.exists():
        raise CliError(f"{path} does not exist.")
    if target.is_dir():
        raise CliError(f"{path} is a directory, not a file.")
    return target


def json_printer(stream: Any = None) -> Callable[[Event], None]:
    out = stream or sys.stdout

    def emit(event: Event) -> None:
        out.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
        out.flush()

    return emit


def on_workflow_steps(show: Callable[[dict[str, Any], dict[str, Any]], None]) -> Subscriber:
    """A session subscriber that hands each workflow step's payload, and its detail, to `show`
    (the workflow commands' progress lines); other events pass by."""

    from simulator.event_kinds import Kind

    def on_event(event: Event) -> None:
        if event.kind == Kind.WORKFLOW_STEP:
            step = event.payload
            show(step, step.get("detail") or {})

    return on_event


def step_seconds(step: dict[str, Any]) -> str:
    """How long a workflow step took, as " 1.2s" ("" while it runs)."""
    return f" {step['seconds']:.1f}s" if step.get("seconds") is not None else ""


def _parse_ports(values: tuple[str, ...]) -> dict[int, int | None]:
    ports: dict[int, int | None] = {}
    for value in values:
        host, _, container = value.rpartition(":")
        try:
            ports[int(container)] = int(host) if host else None
        except ValueError:
            raise CliError(
                f"--publish {value} is not PORT or HOST_PORT:CONTAINER_PORT (e.g. 8000:8000)."
            ) from None
    return ports


def _parse_env(values: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep:
            continue  # a ready environment's name (see _ready_environment)
        if not key:
            raise CliError(f"--env {value} is not KEY=VALUE.")
        env[key] = val
    return env


def _ready_environment(values: tuple[str, ...]) -> str | None:
    """The image of `--env NAME` (a value without `=`): a ready environment `reposim setup
    --save-env` made."""
    names = [value for value in values if "=" not in value]
    if not names:
        return None
    if len(names) > 1:
        raise CliError(f"--env names one ready environment, got {', '.join(names)}.")
    from simulator.setup.envimage import resolve_environment

    return resolve_environment(names[0]).tag


_DOCKER_FLAGS = (
    "image",
    "network",
    "memory",
    "cpus",
    "pids",
    "disk",
    "ca_bundle",
    "publish",
    "env",
)


@dataclass(frozen=True)
class SessionFlags:
    """What the session flags of `@backend_options` asked for, as one `flags` argument."""

    backend_kind: str
    in_place: bool
    trajectory: str | None
    as_json: bool
    backend_options: dict[str, Any]
    """The container flags that were given (and --term), passed to open_session explicitly."""

    @property
    def trajectory_path(self) -> Path | None:
        return Path(self.trajectory).resolve() if self.trajectory else None

    async def open(
        self,
        path: Path,
        *,
        subscribers: Sequence[Subscriber] | None = None,
        say_stale: bool = True,
        **options: Any,
    ) -> Session:
        """open_session on `path` as the flags say; with --json, every event is printed as a
        JSON line unless `subscribers` says otherwise. `options`: open_session's others.
        `say_stale`: a stale prepared virtualenv is said on stderr (not while a UI shows)."""
        from simulator.session import open_session

        if subscribers is None:
            subscribers = [json_printer()] if self.as_json else []
        session = await open_session(
            path,
            backend=self.backend_kind,
            backend_options=self.backend_options,
            in_place=self.in_place,
            trajectory_path=self.trajectory_path,
            subscribers=subscribers,
            **options,
        )
        stale = session.description.extra.get("venv_stale")
        # with --json, its note is one of the events printed
        if stale and say_stale and not self.as_json:
            click.echo(f"reposim: {stale}.", err=True)
        return session


def backend_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--backend, --in-place, --trajectory, --json and the container options, shared by commands
    that open a session. They reach the command as one `flags: SessionFlags` argument."""

    command = func

    @functools.wraps(command)
    def with_docker_options(*args: Any, **kwargs: Any) -> Any:
        flags = {name: kwargs.pop(name) for name in _DOCKER_FLAGS}
        term = kwargs.pop("term")
        ready_image = _ready_environment(flags["env"])
        if ready_image is not None:
            if flags["image"]:
                raise CliError("--env NAME and --image both choose the image; give one.")
            if kwargs["backend_kind"] == "local":
                kwargs["backend_kind"] = "docker"  # a ready environment is a container image
            flags["image"] = ready_image
        options: dict[str, Any] = {
            "image": flags["image"],
            "network": flags["network"],
            "memory": flags["memory"],
            "cpus": flags["cpus"],
            "pids": flags["pids"],
            "disk": flags["disk"],
            "ca_bundle": flags["ca_bundle"],
            "ports": _parse_ports(flags["publish"]) or None,
            "env": _parse_env(flags["env"]) or None,
            "term": term,
        }
        kwargs["flags"] = SessionFlags(
            backend_kind=kwargs.pop("backend_kind"),
            in_place=kwargs.pop("in_place"),
            trajectory=kwargs.pop("trajectory"),
            as_json=kwargs.pop("as_json"),
            backend_options={k: v for k, v in options.items() if v is not None},
        )
        return command(*args, **kwargs)

    docker_options = [
        click.option(
            "--image",
            help="Container image (default: $REPOSIM_DOCKER_IMAGE, docker.image in "
            "~/.config/reposim/config.toml, else python:3.11-slim).",
        ),
        click.option(
            "--network/--no-network",
            default=None,
            help="Give the container a network (default: none, the container is offline).",
        ),
        click.option("--memory", help="Container memory limit, e.g. 2g (default 2g, no swap)."),
        click.option(
            "--cpus", type=float, help="Container CPU limit (default: every host core but one)."
        ),
        click.option("--pids", type=int, help="Container process limit (default 512)."),
        click.option(
            "--disk",
            help="What the session may write in the container, e.g. 20g (default 10g).",
        ),
        click.option(
            "--ca-bundle",
            type=click.Path(exists=True, dir_okay=False),
            help="A CA bundle for pip/git/curl in the container (default: $SSL_CERT_FILE, "
            "$PIP_CERT or $REQUESTS_CA_BUNDLE when set).",
        ),
        click.option(
            "--publish",
            "-p",
            multiple=True,
            metavar="[HOST:]PORT",
            help="Publish a container port on 127.0.0.1 only (repeatable).",
        ),
        click.option(
            "--env",
            multiple=True,
            metavar="KEY=VALUE|NAME",
            help="An environment variable for the container (repeatable); a NAME without `=` "
            "starts from the ready environment `reposim setup --save-env` made (see "
            "`reposim env list`) on the docker backend.",
        ),
    ]
    docker_options.append(
        click.option(
            "--term",
            metavar="NAME",
            help="TERM for the session's commands (default: term in [session] of "
            "~/.config/reposim/config.toml, else xterm-256color; the terminal pane always "
            "has xterm-256color).",
        )
    )
    wrapped: Callable[..., Any] = with_docker_options
    for option in reversed(docker_options):
        wrapped = option(wrapped)
    func = wrapped
    func = click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print every event as a JSON line on stdout instead of plain output.",
    )(func)
    func = click.option(
        "--trajectory",
        "trajectory",
        type=click.Path(dir_okay=False),
        help="Where to write the trajectory (default: under ~/.local/share/reposim/trajectories).",
    )(func)
    func = click.option(
        "--in-place",
        is_flag=True,
        help="Work on the repository itself instead of a scratch copy (local backend only).",
    )(func)
    func = click.option(
        "--backend",
        "backend_kind",
        type=click.Choice(["local", "docker"]),
        default="local",
        show_default=True,
        help="Where commands run: this machine (not a sandbox) or a container.",
    )(func)
    return func
