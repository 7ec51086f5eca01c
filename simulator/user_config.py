"""The user's configuration file, `~/.config/reposim/config.toml`, read once and checked.

It holds the docker backend's defaults and the session's:

    [docker]
    image = "reposim/base:bookworm-2"
    memory = "4g"      # also: cpus, pids, disk

    [session]
    term = "xterm-256color"   # TERM for commands (the default); "dumb" for plain tools
    output_budget = "4G"      # command output a session keeps on disk in all (before gzip)

The backend never reads it: `docker_options` turns it (and $REPOSIM_DOCKER_IMAGE, and what the
caller asks for) into the typed `DockerOptions` the backend is given. A file a user broke (not
UTF-8, not TOML, a value of the wrong type) is one sentence that names the file and the fix.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.base import BackendError
from backends.output import DEFAULT_BUDGET, parse_size
from backends.shell import DEFAULT_TERM, check_term
from simulator.paths import config_file

if TYPE_CHECKING:  # the docker backend is imported only by sessions that use it
    from backends.docker.options import DockerOptions

# Keys of [docker] and the types they take.
_DOCKER_KEYS: dict[str, tuple[type, ...]] = {
    "image": (str,),
    "memory": (str,),
    "cpus": (int, float),
    "pids": (int,),
    "disk": (str,),
    "network": (bool,),
}


class ConfigError(BackendError):
    """The configuration file cannot be used; the message says where and how to fix it."""


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The parsed file ({} when there is none)."""
    path = path or config_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"Cannot read {path} ({exc.strerror}).") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}); "
            "save it as UTF-8."
        ) from None
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}).") from None
    check_config(config, path)
    return config


# The tables config.toml may have, and for [ui] the keys and their types ([docker] and
# [session] are checked key by key where they are read).
_TABLES = ("docker", "session", "ui")
_UI_KEYS: dict[str, type] = {"theme": str}


def check_config(config: dict[str, Any], path: Path) -> None:
    """Refuse what RepoSim would otherwise ignore silently: a table it does not know (a typo
    such as [dokcer] would leave every default in place) and a [ui] value of the wrong type."""
    for name, value in config.items():
        if name not in _TABLES:
            raise ConfigError(
                f"In {path}, there is no table [{name}] (known: {', '.join(_TABLES)})."
            )
        if not isinstance(value, dict):
            raise ConfigError(f"In {path}, `{name}` must be a table ([{name}]), not a value.")
    for key, value in config.get("ui", {}).items():
        wanted = _UI_KEYS.get(key)
        if wanted is None:
            raise ConfigError(
                f"In {path}, [ui] has no setting {key!r} (known: {', '.join(_UI_KEYS)})."
            )
        if not isinstance(value, wanted):
            raise ConfigError(
                f"In {path}, ui.{key} must be a {wanted.__name__} (a theme name such as"
                f' "reposim-dark"), not {type(value).__name__}.'
            )


def docker_defaults(path: Path | None = None) -> dict[str, Any]:
    """The [docker] table, checked key by key."""
    path = path or config_file()
    table = load_config(path).get("docker", {})
    if not isinstance(table, dict):
        raise ConfigError(
            f'In {path}, `docker` must be a table ([docker] with keys like image = "..."), '
            f"not a {type(table).__name__}."
        )
    values: dict[str, Any] = {}
    for key, value in table.items():
        types = _DOCKER_KEYS.get(key)
        if types is None:
            known = ", ".join(sorted(_DOCKER_KEYS))
            raise ConfigError(f"In {path}, [docker] has no setting {key!r} (known: {known}).")
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            wanted = " or ".join(t.__name__ for t in types)
            raise ConfigError(
                f"In {path}, docker.{key} must be a {wanted}, not {type(value).__name__}."
            )
        values[key] = value
    return values


_SESSION_KEYS = ("output_budget", "term")


def _session_table(path: Path) -> dict[str, Any]:
    table = load_config(path).get("session", {})
    if not isinstance(table, dict):
        raise ConfigError(
            f'In {path}, `session` must be a table ([session] with keys like term = "..."), '
            f"not a {type(table).__name__}."
        )
    unknown = sorted(set(table) - set(_SESSION_KEYS))
    if unknown:
        raise ConfigError(
            f"In {path}, [session] has no setting {unknown[0]!r} (known: "
            f"{', '.join(_SESSION_KEYS)})."
        )
    return table


def session_term(given: str | None = None, path: Path | None = None) -> str:
    """TERM for a session's commands: `given` (the --term flag), else `[session] term`, else
    xterm-256color (what a user's terminal has)."""
    if given is not None:
        return check_term(given)
    path = path or config_file()
    term = _session_table(path).get("term", DEFAULT_TERM)
    try:
        return check_term(term)
    except BackendError as exc:
        raise ConfigError(f"In {path}, session.term: {exc}") from None


def session_output_budget(path: Path | None = None) -> int:
    """Bytes of command output a session keeps in all: `[session] output_budget` ("4G", "512M"
    or a number of bytes), else 4 GiB."""
    path = path or config_file()
    value = _session_table(path).get("output_budget", DEFAULT_BUDGET)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        try:
            return parse_size(value)
        except (ValueError, IndexError):
            pass
    raise ConfigError(
        f'In {path}, session.output_budget must be a size like "4G" or "512M", not {value!r}.'
    )


def docker_options(overrides: Mapping[str, Any] | None = None) -> DockerOptions:
    """What the caller asked for, else $REPOSIM_DOCKER_IMAGE (image), else the config file."""
    from backends.docker.options import DockerOptions

    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    values: dict[str, Any] = {}
    if set(_DOCKER_KEYS) - set(given):
        path = config_file()
        defaults = docker_defaults(path)
        for key, value in defaults.items():
            if key in given:
                continue
            try:  # each value the file gives, checked alone: an error can name its place
                DockerOptions.build(**{key: value})
            except BackendError as exc:
                raise ConfigError(f"In {path}, docker.{key}: {exc}") from None
        values.update(defaults)
    if os.environ.get("REPOSIM_DOCKER_IMAGE"):
        values["image"] = os.environ["REPOSIM_DOCKER_IMAGE"]
    values.update(given)
    return DockerOptions.build(**values)
