"""The container itself: how it is configured, what is copied in, and removal at exit.

Init (docker-init, then `sleep infinity`) runs as the container's root with CAP_KILL as its only
capability; every process a session starts runs as the session's uid, with no capability at all
(an exec as a non-root user gets none) and no-new-privileges. A command therefore cannot signal
init or the reaper (`kill -9 -1`, `kill 1` leave the session alive), and cannot gain anything by
running a setuid binary.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from backends.docker.channel import FALLBACK_HOME, WORKSPACE
from backends.docker.options import DockerOptions, size_in_bytes

PRIVATE_DIR = "/tmp/reposim"


class InContainer:
    """`Backend.workspace_path` and `private_dir` for a session in a container (the backend
    and a pool's lease alike)."""

    @property
    def workspace_path(self) -> str:
        return WORKSPACE

    @property
    def private_dir(self) -> str:
        return PRIVATE_DIR


CA_PATH = "/etc/ssl/certs/reposim-ca-bundle.crt"
CA_TARGET_VARS = (
    "SSL_CERT_FILE",
    "PIP_CERT",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
)
# Whether this engine accepts `--storage-opt size` (overlay2 on xfs with pquota): learnt from
# the first container this process creates, so later ones do not ask again.
storage_opt_supported: bool | None = None


RUN_LOCK = "size=1m,mode=1777"


def tmp_bytes(options: DockerOptions) -> int:
    """/tmp is a tmpfs (RAM, so it counts against the memory limit): the disk limit, but at
    most half the memory, so filling it leaves the session memory to run in."""
    return min(options.disk_bytes, size_in_bytes(options.memory, "memory") // 2)


def host_config(
    api: Any, options: DockerOptions, *, storage_opt: bool, volumes: dict[str, str] | None = None
) -> Any:
    """Docker's host config for a session: no capability but CAP_KILL (for root's reaper).

    `volumes`: container path -> the Docker volume to mount there (the folders of the
    size-limited loop filesystem: the workspace, the home directory, /var/tmp)."""
    import docker.types

    ports = {f"{port}/tcp": ("127.0.0.1", host) for port, host in options.ports.items()}
    disk = options.disk_bytes
    mounts = [docker.types.Mount(t, v, type="volume") for t, v in (volumes or {}).items()]
    return api.create_host_config(
        cap_drop=["ALL"],
        cap_add=["KILL"],
        security_opt=["no-new-privileges"],
        mem_limit=options.memory,
        memswap_limit=options.memory,
        nano_cpus=int(options.cpus * 1e9),
        cpuset_cpus=options.cpuset,
        pids_limit=options.pids,
        # No single file may outgrow the disk limit (the kernel refuses the write: EFBIG).
        ulimits=[docker.types.Ulimit(name="fsize", soft=disk, hard=disk)],
        storage_opt={"size": str(disk)} if storage_opt else None,
        mounts=mounts or None,
        # /run/lock, the image's last place its users may write, is a small tmpfs too.
        tmpfs={"/tmp": f"size={tmp_bytes(options)},mode=1777", "/run/lock": RUN_LOCK},
        network_mode="bridge" if options.network else "none",
        port_bindings=ports or None,
        init=True,
    )


def image_home(api: Any, image: str, uid: int, name: str, labels: dict[str, str]) -> str:
    """The home directory of `uid` in `image` (by its passwd; the fallback home when it has
    none), which the session's disk mounts before the container exists. Read once per image
    from a container created and removed unstarted (under the session's name and owner labels,
    so gc finds it after a crash), then kept in RepoSim's cache: an image id names its content."""
    key = f"{image}:{uid}"
    cache = _homes_file()
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(cache.read_text())
        if isinstance(known.get(key), str):
            return str(known[key])
    probe = str(
        api.create_container(
            image, command=["true"], entrypoint=[], name=name, labels=labels,
            network_disabled=True,
        )["Id"]
    )  # fmt: skip
    try:
        passwd = _read_file(api, probe, "/etc/passwd")
    finally:
        api.remove_container(probe, force=True)
    home = ""
    for line in passwd.decode("utf-8", "replace").splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and fields[2] == str(uid):
            home = fields[5]
            break
    if not home or home == "/":  # as identity.sh does
        home = FALLBACK_HOME
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(cache.read_text()) if cache.exists() else {}
        known[key] = home
        cache.parent.mkdir(parents=True, exist_ok=True)
        spool = cache.with_name(f".{cache.name}.{os.getpid()}")
        spool.write_text(json.dumps(known))
        spool.replace(cache)
    return home


def _homes_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reposim" / "image-homes.json"


def _read_file(api: Any, container: str, path: str) -> bytes:
    """One file of a (created) container, or nothing when it has none."""
    import docker.errors

    try:
        stream, _ = api.get_archive(container, path)
    except docker.errors.NotFound:
        return b""
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        for member in tar.getmembers():
            if member.isfile():
                handle = tar.extractfile(member)
                return handle.read() if handle is not None else b""
    return b""


def workspace_archive(source: Path, options: DockerOptions) -> IO[bytes]:
    """One tar with the workspace, the home directory and the CA bundle (the private directory
    is on /tmp, a tmpfs Docker's archive API cannot reach: the command shell makes it)."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it
    uid = options.user

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = uid
        info.uname = info.gname = ""
        return info

    def add_dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = mode
        info.uid = info.gid = uid
        tar.addfile(info)

    with tarfile.open(fileobj=spool, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.add(str(source), arcname=WORKSPACE.lstrip("/"), filter=owned)
        add_dir(tar, FALLBACK_HOME.lstrip("/"), 0o755)
        if options.ca_bundle is not None:
            data = options.ca_bundle.read_bytes()
            info = tarfile.TarInfo(CA_PATH.lstrip("/"))
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    spool.seek(0)
    return spool


# --- containers left behind when the interpreter exits --------------------------------------

_live: dict[str, Any] = {}
_live_volumes: dict[str, Any] = {}
_live_lock = threading.Lock()


def track(container: str, api: Any, *, volume: bool = False) -> None:
    with _live_lock:
        (_live_volumes if volume else _live)[container] = api


def untrack(container: str, *, volume: bool = False) -> None:
    with _live_lock:
        (_live_volumes if volume else _live).pop(container, None)


@atexit.register
def _remove_leftovers() -> None:
    """Remove containers whose session never reached stop() (an error, an abandoned loop), then
    their disk volumes (a volume in use cannot go first)."""
    with _live_lock:
        leftovers = list(_live.items())
        volumes = list(_live_volumes.items())
        _live.clear()
        _live_volumes.clear()
    for container, api in leftovers:
        with contextlib.suppress(Exception):
            api.remove_container(container, force=True, v=True)
    for volume, api in volumes:
        with contextlib.suppress(Exception):
            api.remove_volume(volume, force=True)
