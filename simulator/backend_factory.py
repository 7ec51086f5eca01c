"""Choosing and building a backend by name: the one place the engine names concrete backends.

Container options (image, limits, network...) come from the caller, or from
`cli_backend_options`, which the command line sets from its flags so that every command that
opens a session honours them without passing them along by hand. Explicit options win.
"""

from __future__ import annotations

import contextvars
import importlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from backends.base import Backend, BackendError

BACKEND_KINDS = ("local", "docker")

DOCKER_OPTIONS = frozenset(
    {
        "image",
        "network",
        "memory",
        "cpus",
        "pids",
        "user",
        "ca_bundle",
        "proxy",
        "env",
        "ports",
        "session_id",
    }
)

cli_backend_options: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "cli_backend_options", default=MappingProxyType({})
)
"""Docker options given on the command line; read by make_backend when the caller gives none."""


def make_backend(kind: str, source: Path, *, in_place: bool = False, **options: Any) -> Backend:
    if kind == "local":
        from backends.local import LocalBackend

        return LocalBackend(source, in_place=in_place)
    if kind == "docker":
        if in_place:
            raise BackendError("--in-place works with the local backend only.")
        merged = {**cli_backend_options.get(), **options}
        unknown = set(merged) - DOCKER_OPTIONS
        if unknown:
            raise BackendError(f"The docker backend has no option {sorted(unknown)[0]!r}.")
        # Imported on demand: the Docker SDK is only needed by people who use containers.
        docker_backend = importlib.import_module("backends.docker")
        backend: Backend = docker_backend.DockerBackend(
            source, **{k: v for k, v in merged.items() if v is not None}
        )
        return backend
    raise BackendError(f"Unknown backend {kind!r}; choose one of {', '.join(BACKEND_KINDS)}.")
