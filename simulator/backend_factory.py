"""Choosing and building a backend by name: the one place the engine names concrete backends.

Container options (image, limits, network...) are what the caller passes, explicitly; what it
leaves out comes from the user's config file (simulator/user_config.py), and the docker backend
receives it all as one typed `DockerOptions`. Nothing is inherited from an earlier command:
re-executing a trajectory uses the options it is given, not the ones of the command line that
happened to run before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.base import Backend, BackendError
from simulator.paths import workspaces_dir

BACKEND_KINDS = ("local", "docker")


def make_backend(kind: str, source: Path, *, in_place: bool = False, **options: Any) -> Backend:
    """A backend of `kind` on `source`, not started (open_session starts it). `options` are
    the docker backend's (image, memory, cpus, pids, network, ...) and `term` (TERM for
    commands, both backends; default from the user's config)."""
    from simulator.user_config import session_term

    term = session_term(options.pop("term", None))
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

        return DockerBackend(source, docker_options({**options, "term": term}))
    raise BackendError(f"Unknown backend {kind!r}; choose one of {', '.join(BACKEND_KINDS)}.")
