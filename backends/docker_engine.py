"""Talking to the Docker engine: connecting with clear errors, and knowing what is ours.

A container is RepoSim's only when a record in RepoSim's private state says so: when a session
creates its container it writes `<state>/containers/<session>.json` (mode 0600, in a 0700
directory) with the container's id, a per-session secret and the creating process (pid, its
start time, host). Labels on containers (`reposim.session`, `reposim.pid`, ...) are for people
and `docker ps --filter`; `reposim gc` never trusts them, because labels are inherited: an image
committed from a labelled container, or imported with labels, hands them to every container
started from it by hand. Images RepoSim makes carry no owner labels at all (`commit_clean`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import socket
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from backends.base import BackendError, BackendUnavailableError
from backends.private_state import (
    me,
    owner_alive,
    private_dir,
    read_records,
    state_dir,
    write_record,
)

LABEL_MANAGED = "reposim.managed"
LABEL_SESSION = "reposim.session"
LABEL_CREATED = "reposim.created"
LABEL_PID = "reposim.pid"
LABEL_PID_START = "reposim.pid_start"
LABEL_HOST = "reposim.host"
LABEL_KIND = "reposim.kind"
OWNERSHIP = "containers"
"""Where the ownership records live, under the private state directory."""
# sha256 of the session's secret: ties a container to its record before its id is known.
LABEL_OWNER = "reposim.owner"
# Labels that describe one session's container: never carried over into an image.
OWNER_LABELS = frozenset(
    {
        LABEL_MANAGED,
        LABEL_SESSION,
        LABEL_CREATED,
        LABEL_PID,
        LABEL_PID_START,
        LABEL_HOST,
        LABEL_KIND,
        LABEL_OWNER,
    }
)


def owner_labels(kind: str, session: str | None = None) -> dict[str, str]:
    """Labels that say which process created the object now: informative only (see above)."""
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


def ownership_dir() -> Path:
    return state_dir() / OWNERSHIP


def _secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass
class ContainerOwnership:
    """This process's claim on one session's container, kept in RepoSim's private state."""

    path: Path
    record: dict[str, Any]

    @classmethod
    def claim(cls, session: str) -> ContainerOwnership:
        """Record the claim before the container exists, so a crash at any point leaves a
        record gc can follow (or drop when no container matches it)."""
        record: dict[str, Any] = {
            "session": session,
            "name": f"reposim-{session}",
            "id": None,
            "secret": secrets.token_hex(16),
            **me(),  # pid, start and (Linux) start in ticks with the boot's id: owner_alive
            "host": socket.gethostname(),
            "created": round(time.time(), 3),
        }
        path = private_dir(OWNERSHIP) / f"{session}.json"
        write_record(path, record)
        return cls(path, record)

    @property
    def labels(self) -> dict[str, str]:
        """The labels to create the container with: the informative ones plus the digest of
        this session's secret (the secret itself stays in the private record)."""
        return {
            **owner_labels("session", self.record["session"]),
            LABEL_OWNER: _secret_digest(self.record["secret"]),
        }

    def bind(self, container_id: str) -> None:
        self.record["id"] = container_id
        write_record(self.path, self.record)

    def own_volumes(self, names: list[str]) -> None:
        """The volumes made for this session (its disk, backends/docker/disk.py): recorded
        before they exist, so gc removes them with the container."""
        self.record["volumes"] = names
        write_record(self.path, self.record)

    def release(self) -> None:
        """The container is gone: nothing is left to collect."""
        self.path.unlink(missing_ok=True)


def _owned_records() -> list[tuple[Path, dict[str, Any]]]:
    return [(p, r) for p, r in read_records(OWNERSHIP) if isinstance(r.get("secret"), str)]


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
    """A container RepoSim's private state says it created, and whether its owner is gone."""

    kind: str  # "container"
    name: str
    session: str
    owner_pid: str
    orphaned: bool
    removed: bool = False
    problem: str = ""
    """Why it could not be checked or removed (the engine did not answer about it), if so."""


def _find_owned(api: Any, record: dict[str, Any]) -> dict[str, Any] | None:
    """The container a record names, only if it proves to be that record's container: the id
    the record holds, or (a crash before the id was written) the record's name together with
    the digest of the record's secret. A container started by hand matches neither."""
    import docker.errors

    digest = _secret_digest(record["secret"])
    ref = record.get("id") or record.get("name")
    if not isinstance(ref, str) or not ref:
        return None
    try:
        info: dict[str, Any] = api.inspect_container(ref)
    except docker.errors.NotFound:
        return None
    labels = (info.get("Config") or {}).get("Labels") or {}
    if record.get("id"):
        return info if info.get("Id") == record["id"] else None
    return info if labels.get(LABEL_OWNER) == digest else None


def _remove_volume(api: Any, record: dict[str, Any]) -> None:
    """The session's disk volumes, if its record names any (Docker keeps one a container uses),
    and the host mount of its disk if the session died before its container started."""
    from backends.docker.disk import release_host_mount

    named = record.get("volumes")
    volumes = [v for v in named if isinstance(v, str) and v] if isinstance(named, list) else []
    if isinstance(record.get("volume"), str) and record["volume"]:  # a record of an older RepoSim
        volumes.append(record["volume"])
    if volumes and isinstance(record.get("session"), str):
        with contextlib.suppress(Exception):
            release_host_mount(record["session"])
    for volume in volumes:
        with contextlib.suppress(Exception):
            api.remove_volume(volume)


def collect_garbage(client: Any, *, dry_run: bool = False) -> list[Leftover]:
    """Remove the containers RepoSim's private state records as created by a process that is
    gone on this host, and only those; records of live owners or other hosts are kept.

    A record whose container no longer exists is dropped (not in a dry run): its session's
    container was removed at stop or at exit."""
    found: list[Leftover] = []
    api = client.api
    host = socket.gethostname()
    for path, record in _owned_records():
        if record.get("host") != host:
            continue
        pid = str(record.get("pid", ""))
        session = str(record.get("session", ""))
        orphaned = not owner_alive(record)
        try:
            info = _find_owned(api, record)
        except Exception as exc:  # the SDK's timeouts and engine errors are several types
            # One container the engine does not answer about (seen: a `runc init` a session's
            # `kill -STOP -1` stopped halfway through an exec holds the container's lock, and
            # every call about it waits) must not stop gc, nor a batch's collection after a
            # killed task, from checking the others.
            name = str(record.get("name") or record.get("id") or session)
            problem = f"the Docker engine did not answer about it ({exc.__class__.__name__})"
            found.append(Leftover("container", name, session, pid, orphaned, problem=problem))
            continue
        if info is None:
            if orphaned and not dry_run:
                _remove_volume(api, record)
                path.unlink(missing_ok=True)
            continue
        name = str(info.get("Name") or info["Id"][:12]).lstrip("/")
        removed = False
        problem = ""
        if orphaned and not dry_run:
            try:
                api.remove_container(info["Id"], force=True, v=True)
                removed = True
            except Exception as exc:
                problem = f"the Docker engine did not remove it ({exc.__class__.__name__})"
            if removed:
                _remove_volume(api, record)
                path.unlink(missing_ok=True)
        found.append(Leftover("container", name, session, pid, orphaned, removed, problem))
    return found


def commit_clean(
    client: Any,
    container: str,
    *,
    repository: str,
    tag: str,
    labels: dict[str, str] | None = None,
    env: list[str] | None = None,
    changes: dict[str, Any] | None = None,
) -> str:
    """`docker commit` without the owner labels; returns the new image's id.

    The engine merges the container's labels (its image's and its own) into a committed
    image and offers no way to delete one, so the committed config is rewritten: the image is
    loaded again with a new config (same layers, only the config and a manifest are sent, the
    engine keeps the layers it already has) and the intermediate commit is removed."""
    api = client.api
    # Never paused: the engine freezes the container for a pausing commit, and an exec that
    # starts meanwhile (the session's file service starts in the background) leaves its
    # `runc init` frozen: the container stayed paused and every `docker inspect` of it hung,
    # `reposim gc` too (issue 25). RepoSim commits a session between its commands.
    committed = api.commit(container, pause=False)
    intermediate = str(committed["Id"])
    try:
        return relabel_image(
            api, intermediate, f"{repository}:{tag}", labels=labels, env=env, changes=changes
        )
    finally:
        with contextlib.suppress(Exception):
            api.remove_image(intermediate, noprune=False)


def relabel_image(
    api: Any,
    image: str,
    reference: str,
    *,
    labels: dict[str, str] | None = None,
    env: list[str] | None = None,
    changes: dict[str, Any] | None = None,
) -> str:
    """Tag as `reference` a copy of `image` whose config has no owner labels, `labels` added,
    the `NAME=value` entries of `env` set (as `docker commit --change ENV` does) and the config
    fields in `changes` set; the layers are shared, not copied."""
    info = api.inspect_image(image)
    config = dict(info.get("Config") or {})
    kept = {k: v for k, v in (config.get("Labels") or {}).items() if k not in OWNER_LABELS}
    config.update(changes or {})
    if env:
        names = {entry.partition("=")[0] for entry in env}
        kept_env = [e for e in config.get("Env") or [] if e.partition("=")[0] not in names]
        config["Env"] = [*kept_env, *env]
    config["Labels"] = {**kept, **(labels or {})}
    diff_ids = list((info.get("RootFS") or {}).get("Layers") or [])
    raw = json.dumps(
        {
            "architecture": info.get("Architecture") or "amd64",
            "os": info.get("Os") or "linux",
            "created": info.get("Created"),
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": [
                {"created": info.get("Created"), "created_by": f"reposim: layer {i + 1}"}
                for i in range(len(diff_ids))
            ],
        }
    ).encode()
    digest = hashlib.sha256(raw).hexdigest()
    manifest = [
        {
            "Config": f"{digest}.json",
            "RepoTags": [reference],
            # Never read: every layer is already in the engine's store.
            "Layers": [f"{i}/layer.tar" for i in range(len(diff_ids))],
        }
    ]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in ((f"{digest}.json", raw), ("manifest.json", json.dumps(manifest))):
            payload = data if isinstance(data, bytes) else data.encode()
            entry = tarfile.TarInfo(name)
            entry.size = len(payload)
            tar.addfile(entry, io.BytesIO(payload))
    for event in api.load_image(archive.getvalue()):
        if isinstance(event, dict) and event.get("error"):
            raise BackendError(f"Docker could not relabel the image {image}: {event['error']}")
    return str(api.inspect_image(reference)["Id"])
