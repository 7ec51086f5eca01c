"""Choosing and building a backend by name: the one place the engine names concrete backends.

Container options (image, limits, network...) come from the caller, or from
`cli_backend_options`, which the command line sets from its flags so that every command that
opens a session honours them without passing them along by hand. Explicit options win; what
neither gives comes from the user's config file (simulator/user_config.py), and the docker
backend receives it all as one typed `DockerOptions`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from backends.base import Backend, BackendError
from simulator.paths import workspaces_dir

BACKEND_KINDS = ("local", "docker")

cli_backend_options: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "cli_backend_options", default=MappingProxyType({})
)
"""Docker options given on the command line; read by make_backend when the caller gives none."""


def make_backend(kind: str, source: Path, *, in_place: bool = False, **options: Any) -> Backend:
    if kind == "local":
        from backends.local import LocalBackend

        return LocalBackend(source, in_place=in_place, scratch_root=workspaces_dir())
    if kind == "docker":
        if in_place:
            raise BackendError("--in-place works with the local backend only.")
        # Imported on demand: only people who use containers need the docker backend.
        from backends.docker import DockerBackend
        from simulator.user_config import docker_options

        return DockerBackend(source, docker_options({**cli_backend_options.get(), **options}))
    raise BackendError(f"Unknown backend {kind!r}; choose one of {', '.join(BACKEND_KINDS)}.")
