"""Talking to the Docker engine: connecting with clear errors, and the labels we put on things.

Every container and image RepoSim creates carries `reposim.managed=1` plus who made it (host,
process id and that process's start time), so `reposim gc` can tell a crash's leftovers from a
live session's container, and never touches anything it did not create.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

import psutil

from backends.base import BackendUnavailableError

LABEL_MANAGED = "reposim.managed"
LABEL_SESSION = "reposim.session"
LABEL_CREATED = "reposim.created"
LABEL_PID = "reposim.pid"
LABEL_PID_START = "reposim.pid_start"
LABEL_HOST = "reposim.host"
LABEL_KIND = "reposim.kind"


def owner_labels(kind: str, session: str | None = None) -> dict[str, str]:
    """The labels that say this process created the object now."""
    me = psutil.Process()
    labels = {
        LABEL_MANAGED: "1",
        LABEL_KIND: kind,
        LABEL_CREATED: f"{time.time():.3f}",
        LABEL_PID: str(me.pid),
        LABEL_PID_START: f"{me.create_time():.3f}",
        LABEL_HOST: socket.gethostname(),
    }
    if session:
        labels[LABEL_SESSION] = session
    return labels


def owner_alive(labels: dict[str, str]) -> bool | None:
    """Whether the process that created an object still runs; None if it ran on another host."""
    if labels.get(LABEL_HOST) != socket.gethostname():
        return None
    try:
        pid = int(labels.get(LABEL_PID, ""))
        started = float(labels.get(LABEL_PID_START, "nan"))
    except ValueError:
        return False
    try:
        proc = psutil.Process(pid)
        # A recycled pid belongs to a process started later than the one that made the object.
        return abs(proc.create_time() - started) < 1.0
    except psutil.NoSuchProcess:
        return False


def _docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def explain_connection_error(exc: BaseException) -> BackendUnavailableError:
    """One sentence a user can act on, for anything that stops us from reaching the daemon."""
    host = _docker_host()
    text = f"{exc!r} {exc}"
    if "Permission denied" in text or "PermissionError" in text:
        return BackendUnavailableError(
            f"Permission denied on the Docker socket ({host}): add your user to the `docker` "
            "group (`sudo usermod -aG docker $USER`, then log in again) or run as root."
        )
    if "No such file" in text or "FileNotFoundError" in text or "Connection refused" in text:
        return BackendUnavailableError(
            f"The Docker daemon is not running at {host}: start it (`sudo systemctl start "
            "docker`, or `sudo dockerd &`) or point DOCKER_HOST at a running engine."
        )
    return BackendUnavailableError(
        f"The Docker daemon at {host} is not reachable ({exc.__class__.__name__}): check that "
        "it runs (`docker info`) and that DOCKER_HOST is right."
    )


def connect(timeout: float = 60.0) -> Any:
    """A `docker.DockerClient` for the engine the environment points at, or a clear error."""
    try:
        import docker
    except ImportError:  # pragma: no cover - docker is a declared dependency
        raise BackendUnavailableError(
            "The Docker SDK is not installed: run `uv add docker`."
        ) from None
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except Exception as exc:  # the SDK wraps socket errors in several exception types
        raise explain_connection_error(exc) from None
    return client


def image_missing_error(image: str) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"The image {image} is not on this machine: run `docker pull {image}`, or build a local "
        f"Debian image with `reposim image bootstrap --tag {image}` when no registry is reachable."
    )


@dataclass(frozen=True)
class Leftover:
    """Something RepoSim created on the engine, and whether its owner is gone."""

    kind: str  # "container" | "volume"
    name: str
    session: str
    owner_pid: str
    orphaned: bool
    removed: bool = False


def collect_garbage(client: Any, *, dry_run: bool = False) -> list[Leftover]:
    """Remove RepoSim containers and volumes whose creating process is gone (and only those).

    Objects without our label are never looked at; objects made on another host, or by a
    process that still runs, are kept."""
    found: list[Leftover] = []
    api = client.api
    selector = {"label": f"{LABEL_MANAGED}=1"}
    for info in api.containers(all=True, filters=selector):
        labels = info.get("Labels") or {}
        orphaned = owner_alive(labels) is False
        removed = False
        if orphaned and not dry_run:
            with contextlib.suppress(Exception):
                api.remove_container(info["Id"], force=True, v=True)
                removed = True
        names = info.get("Names") or [info["Id"][:12]]
        found.append(
            Leftover(
                "container",
                names[0].lstrip("/"),
                labels.get(LABEL_SESSION, ""),
                labels.get(LABEL_PID, ""),
                orphaned,
                removed,
            )
        )
    volumes = api.volumes(filters=selector).get("Volumes") or []
    for volume in volumes:
        labels = volume.get("Labels") or {}
        orphaned = owner_alive(labels) is False
        removed = False
        if orphaned and not dry_run:
            with contextlib.suppress(Exception):
                api.remove_volume(volume["Name"], force=True)
                removed = True
        found.append(
            Leftover(
                "volume",
                volume["Name"],
                labels.get(LABEL_SESSION, ""),
                labels.get(LABEL_PID, ""),
                orphaned,
                removed,
            )
        )
    return found
