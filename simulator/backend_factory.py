"""Choosing and building a backend by name: the one place the engine names concrete backends.

Container options (image, limits, network...) are what the caller passes, explicitly, as one
typed `BackendOptions`; what it leaves out comes from the user's config file
(simulator/user_config.py), and the docker backend receives it all as one typed `DockerOptions`.
Nothing is inherited from an earlier command: re-executing a trajectory uses the options it is
given, not the ones of the command line that happened to run before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.base import Backend, BackendError
from simulator.paths import workspaces_dir

if TYPE_CHECKING:  # the docker backend is imported only by sessions that use it
    from backends.docker.pool import PoolSettings, WarmPool

BACKEND_KINDS = ("local", "docker")


@dataclass(frozen=True)
class BackendOptions:
    """What a caller asks of a backend; None leaves it to the user's config file, else the
    backend's default. `term` (TERM for commands) applies to both backends, the rest to the
    docker backend (backends/docker/options.py says what each means)."""

    image: str | None = None
    network: bool | None = None
    memory: str | None = None
    cpus: float | None = None
    pids: int | None = None
    cpuset: str | None = None
    disk: str | None = None
    user: int | None = None
    ca_bundle: Path | str | None = None
    proxy: bool | None = None
    env: Mapping[str, str] | None = None
    ports: Mapping[int, int | None] | None = None
    session_id: str | None = None
    term: str | None = None

    @classmethod
    def of(cls, values: BackendOptions | Mapping[str, Any] | None) -> BackendOptions:
        """Options from a mapping (a command's flags, a batch task's JSON payload); a key that
        is no option is a BackendError."""
        if isinstance(values, BackendOptions):
            return values
        given = dict(values or {})
        unknown = sorted(set(given) - {f.name for f in fields(cls)})
        if unknown:
            raise BackendError(f"The docker backend has no option {unknown[0]!r}.")
        return cls(**given)

    def given(self) -> dict[str, Any]:
        """The options that were given (not None), by name."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }


def make_backend(
    kind: str, source: Path, *, in_place: bool = False, options: BackendOptions | None = None
) -> Backend:
    """A backend of `kind` on `source`, not started (open_session starts it), with `options`
    (the container's image and limits, and TERM for both backends; default from the user's
    config)."""
    from simulator.user_config import session_term

    options = options or BackendOptions()
    term = session_term(options.term)
    if kind == "local":
        from backends.local import LocalBackend
        from simulator.venvcache import lookup

        # The venv a `reposim setup` of this repository left (used when it has none of its
        # own; a stale one is described, not used, and the session says so).
        cached = lookup(source)
        return LocalBackend(
            source,
            in_place=in_place,
            scratch_root=workspaces_dir(),
            term=term,
            prepared_venv=cached.prepared() if cached is not None else None,
        )
    if kind == "docker":
        if in_place:
            raise BackendError("--in-place works with the local backend only.")
        # Imported on demand: only people who use containers need the docker backend.
        from backends.docker import DockerBackend
        from simulator.user_config import docker_options

        return DockerBackend(source, docker_options({**options.given(), "term": term}))
    raise BackendError(f"Unknown backend {kind!r}; choose one of {', '.join(BACKEND_KINDS)}.")


def pool_settings(size: int | None = None, idle: float | None = None) -> PoolSettings:
    """The warm pool's size and idle limit: the caller's (flags), else `[pool]` in the user's
    config file (`size = 2`, `idle = 300`), else 1 ready container drained after 300 s idle."""
    from backends.docker.pool import PoolSettings
    from simulator.paths import config_file
    from simulator.user_config import ConfigError, load_config

    path = config_file()
    table = load_config(path).get("pool", {})
    if not isinstance(table, dict):
        raise ConfigError(f"In {path}, `pool` must be a table ([pool] with size = 2, idle = 300).")
    unknown = sorted(set(table) - {"size", "idle"})
    if unknown:
        raise ConfigError(f"In {path}, [pool] has no setting {unknown[0]!r} (known: idle, size).")
    values = {"size": table.get("size"), "idle": table.get("idle")}
    for key, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ConfigError(f"In {path}, pool.{key} must be a number.")
    if size is not None:
        values["size"] = size
    if idle is not None:
        values["idle"] = idle
    try:
        return PoolSettings(**{k: v for k, v in values.items() if v is not None})
    except BackendError as exc:
        raise ConfigError(f"{exc} (from the flags or {path})") from None


def warm_pool(
    source: Path,
    *,
    pool_size: int | None = None,
    pool_idle: float | None = None,
    options: BackendOptions | None = None,
) -> WarmPool | None:
    """A pool of warm docker sessions on `source` with these `options` (as for make_backend),
    or None when the pool's size is 0 (sessions then start their own container).
    The caller owns it: `pool.lease()` is a backend for open_session, `pool.close()` at the end."""
    from simulator.user_config import docker_options, session_term

    settings = pool_settings(pool_size, pool_idle)
    if settings.size == 0:
        return None
    from backends.docker.channel import WORKSPACE
    from backends.docker.container import PRIVATE_DIR
    from backends.docker.pool import WarmPool
    from simulator.checkpoint_repo import checkpoint_prepare_script

    options = options or BackendOptions()
    term = session_term(options.term)
    # Each container gets the session's checkpoint repository ahead, with the workspace staged
    # in its index: the start's checkpoint then only stats the files instead of hashing them.
    prepare = checkpoint_prepare_script(WORKSPACE, PRIVATE_DIR)
    return WarmPool(
        source, docker_options({**options.given(), "term": term}), settings, prepare=prepare
    )
