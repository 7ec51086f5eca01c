"""One helper per family of options that several commands share, so that a flag reads, checks
and defaults the same wherever it appears.

- `model_options(help)`: `--model/-m` (what the model does there is the command's own help)
  and `--api-base`; `model_client(model, api_base)` builds the client or says in one sentence
  why it cannot.
- `theme_option`: `--theme`, checked against the installed themes before the command runs.
- `budget_options(...)`: the agent's budgets (`--max-steps`, `--max-tokens`, `--max-cost`,
  `--max-time`), received as one `budgets: Budgets`.
- `number_option(...)`: a number option with a floor and a default that --help shows.
- `choice_option(...)`: an option taking one of a few words, its default shown in --help.
- `json_option(help)`: `--json`, received as `as_json`.
- `mode_option(help)`: the agent's `--mode auto|confirm`.
- `output_option(help)`: `-o/--output FILE`; `folder_option(...)`: an option naming a folder.
- `backend_kind_options(...)`: `--backend local|docker` and its `--image`, for a command that
  is not a session command (those take `backend_options`).
- `threshold_options`: what makes a harness valid (`--min-cov`, `--min-mutation`, `--repeats`,
  `--max-mutants`, `--min-mutants`, `--min-parity`), received as one `thresholds: Thresholds`.

The session and container options are `backend_options` (common.py), the batch ones
`batch_options` (batch.py). Engine modules load when a command runs, not with its options.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from reposim.cli.common import CliError

if TYPE_CHECKING:
    from simulator.agent import ModelClient

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

API_BASE_HELP = "An OpenAI-compatible endpoint for --model."


def model_options(model_help: str) -> Decorator:
    """`--model/-m` with `model_help` and `--api-base`; the command receives `model` and
    `api_base` (None when not given)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option("--api-base", help=API_BASE_HELP)(func)
        return click.option("--model", "-m", help=model_help)(func)

    return decorate


def number_option(
    *decls: str,
    minimum: float,
    default: float | None = None,
    whole: bool | None = None,
    multiple: bool = False,
    help: str,
) -> Decorator:
    """A number option no smaller than `minimum` whose default (if any) --help shows: whole
    numbers when `whole`, or (`whole` not given) when `default` is an int, else any number;
    `multiple`: repeatable."""
    if whole is None:
        whole = isinstance(default, int)
    kind: click.IntRange | click.FloatRange = click.FloatRange(min=minimum)
    if whole:
        kind = click.IntRange(min=int(minimum))
    return click.option(
        *decls, type=kind, default=default, show_default=True, multiple=multiple, help=help
    )


def json_option(help: str) -> Decorator:
    """`--json`, a flag the command receives as `as_json`; `help` says what it prints."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def mode_option(help: str) -> Decorator:
    """`--mode auto|confirm` of a command that runs the agent; `help` says how confirm asks."""
    return choice_option("--mode", choices=["auto", "confirm"], default="auto", help=help)


def choice_option(
    *decls: str, choices: Sequence[str], default: str, help: str | None = None
) -> Decorator:
    """An option taking one of `choices` whose default --help shows."""
    return click.option(
        *decls, type=click.Choice(choices), default=default, show_default=True, help=help
    )


def output_option(help: str | None = None, *, required: bool = False) -> Decorator:
    """`-o/--output FILE` (not a folder), received as `output`; `help` says what is written."""
    return click.option(
        "-o", "--output", type=click.Path(dir_okay=False), required=required, help=help
    )


def folder_option(*decls: str, help: str) -> Decorator:
    """An option naming a folder (a path that is not a file)."""
    return click.option(*decls, type=click.Path(file_okay=False), help=help)


def backend_kind_options(dest: str, *, default: str, help: str, image_help: str) -> Decorator:
    """`--backend` (received as `dest`, its default shown) and the `--image` it runs in
    with docker, for a command that runs on this machine or in a container."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = click.option("--image", help=image_help)(func)
        return choice_option(
            "--backend", dest, choices=["local", "docker"], default=default, help=help
        )(func)

    return decorate


def model_client(model: str | None, api_base: str | None) -> ModelClient:
    """The litellm client of `model` (None: $REPOSIM_MODEL); a model that is not configured
    (no name, no key) is a CliError."""
    from simulator.agent import ModelConfigError, litellm_client

    try:
        return litellm_client(model, api_base=api_base)
    except ModelConfigError as exc:
        raise CliError(str(exc)) from None


def _known_theme(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    from themes import theme_names

    if value is not None and value not in theme_names():
        raise CliError(
            f"There is no theme named {value!r}; choose one of {', '.join(theme_names())}."
        )
    return value


def theme_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--theme NAME`, one of the installed themes; the command receives `theme`."""
    return click.option(
        "--theme",
        callback=_known_theme,
        help="Colour theme (default: [ui] theme in ~/.config/reposim/config.toml, else "
        "reposim-dark).",
    )(func)


_BUDGETS = {
    "max_steps": ("--max-steps", int, "Model calls allowed for the task."),
    "max_tokens": ("--max-tokens", int, "Tokens (prompt + completion) allowed for the task."),
    "max_cost": ("--max-cost", float, "Dollars allowed (only calls litellm can price count)."),
    "max_time": ("--max-time", float, "Seconds of wall time allowed for the task."),
}


def budget_options(*, max_steps: int = 50, names: tuple[str, ...] = tuple(_BUDGETS)) -> Decorator:
    """The agent's budgets `names` (all four by default; --max-steps defaults to `max_steps`,
    the others to no limit); the command receives them as one `budgets: Budgets`. A budget of
    0 or less is a CliError."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        def with_budgets(*args: Any, **kwargs: Any) -> Any:
            from simulator.agent import Budgets

            given = {name: kwargs.pop(name) for name in names}
            for name, value in given.items():
                if value is not None and value <= 0:
                    raise CliError(f"{_BUDGETS[name][0]} must be more than 0.")
            return func(*args, budgets=Budgets(**given), **kwargs)

        wrapped: Callable[..., Any] = functools.wraps(func)(with_budgets)
        for name in reversed(names):
            flag, kind, text = _BUDGETS[name]
            default = max_steps if name == "max_steps" else None
            wrapped = click.option(flag, type=kind, default=default, show_default=True, help=text)(
                wrapped
            )
        return wrapped

    return decorate


_THRESHOLDS = [
    (
        "--min-cov",
        click.FloatRange(0, 1),
        0.8,
        "Branch coverage of the target a valid harness reaches.",
    ),
    (
        "--min-mutation",
        click.FloatRange(0, 1),
        0.6,
        "Share of the target's mutants a valid harness kills.",
    ),
    (
        "--repeats",
        click.IntRange(min=1),
        3,
        "Runs on the reference (tests that pass only sometimes are flaky).",
    ),
    (
        "--max-mutants",
        click.IntRange(min=0),
        40,
        "Mutants per target (spread over the function when there are more).",
    ),
    (
        "--min-mutants",
        click.IntRange(min=0),
        10,
        "Mutants a valid harness must face (or all the operators make of a smaller function).",
    ),
    (
        "--min-parity",
        click.FloatRange(0, 1),
        0.75,
        "Of the mutants the repository's tests kill, the share a valid harness kills.",
    ),
]


def threshold_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """What a valid harness must reach; the command receives them as one
    `thresholds: Thresholds` (simulator/harness/validate.py)."""
    names = [flag[2:].replace("-", "_") for flag, *_ in _THRESHOLDS]

    def with_thresholds(*args: Any, **kwargs: Any) -> Any:
        from simulator.harness.validate import Thresholds

        given = {name: kwargs.pop(name) for name in names}
        return func(*args, thresholds=Thresholds(**given), **kwargs)

    wrapped: Callable[..., Any] = functools.wraps(func)(with_thresholds)
    for flag, kind, default, text in reversed(_THRESHOLDS):
        wrapped = click.option(flag, type=kind, default=default, show_default=True, help=text)(
            wrapped
        )
    return wrapped
