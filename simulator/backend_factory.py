"""Choosing and building a backend by name: the one place the engine names concrete backends."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from backends.base import Backend, BackendError

BACKEND_KINDS = ("local", "docker")


def make_backend(kind: str, source: Path, *, in_place: bool = False, **options: Any) -> Backend:
    if kind == "local":
        from backends.local import LocalBackend

        return LocalBackend(source, in_place=in_place)
    if kind == "docker":
        if in_place:
            raise BackendError("--in-place works with the local backend only.")
        # Imported on demand: the Docker SDK is only needed by people who use containers.
        docker_backend = importlib.import_module("backends.docker")
        backend: Backend = docker_backend.DockerBackend(source, **options)
        return backend
    raise BackendError(f"Unknown backend {kind!r}; choose one of {', '.join(BACKEND_KINDS)}.")
