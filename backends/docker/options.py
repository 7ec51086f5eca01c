"""What a docker session is made of: `DockerOptions`, typed and checked once, given by the caller.

The backend reads no configuration of its own: the composition root (the CLI, or an engine
caller) decides the image and the limits, from flags, the environment or the user's config file,
and hands over one `DockerOptions`. Invalid values are refused here with one clear sentence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from backends.base import BackendError
from backends.shell import DEFAULT_TERM, check_term

DEFAULT_IMAGE = "python:3.11-slim"
DEFAULT_UID = 1000
DEFAULT_MEMORY = "2g"
DEFAULT_PIDS = 512
DEFAULT_DISK = "10g"
CA_ENV_VARS = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE")
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([bkmg]?)$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30}


def default_cpus() -> float:
    """Every core of the host but one, so a CPU hog in a session leaves the host usable."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return float(max(1, cores - 1))


def size_in_bytes(text: str, what: str) -> int:
    """`512m`, `2g`, `1.5g` or a plain number of bytes; one sentence when it is none of those."""
    match = _SIZE.match(text.strip())
    if match is None:
        raise BackendError(f"The {what} limit {text!r} is not a size like 512m or 2g.")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def host_ca_bundle() -> Path | None:
    """The CA bundle this machine's tools are pointed at, to pass into the container."""
    for var in CA_ENV_VARS:
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    return None


def proxy_env() -> dict[str, str]:
    env = {}
    for var in PROXY_VARS:
        for name in (var, var.lower()):
            if os.environ.get(name):
                env[name] = os.environ[name]
    return env


@dataclass(frozen=True)
class DockerLimits:
    """The resource limits a container gets (recorded in the trajectory's header)."""

    memory: str
    cpus: float
    pids: int
    disk: str

    def as_dict(self) -> dict[str, Any]:
        return {"memory": self.memory, "cpus": self.cpus, "pids": self.pids, "disk": self.disk}


@dataclass(frozen=True)
class DockerOptions:
    """Everything a docker session can be asked for; defaults are the safe ones."""

    image: str = DEFAULT_IMAGE
    network: bool = False
    """A network for the container (none by default: setup steps that install ask for one)."""
    memory: str = DEFAULT_MEMORY
    """Memory limit, swap included (`512m`, `2g`)."""
    cpus: float = field(default_factory=default_cpus)
    """CPU limit; by default every core of the host but one."""
    pids: int = DEFAULT_PIDS
    cpuset: str | None = None
    """The CPUs the container may run on (`1`, `0-1`): pins it, e.g. for timing (perf)."""
    disk: str = DEFAULT_DISK
    """What the session may write: its workspace, /tmp and the rest of the container's layer."""
    user: int = DEFAULT_UID
    ca_bundle: Path | None = field(default_factory=host_ca_bundle)
    """A CA bundle for pip/git/curl in the container (default: the host's, when set)."""
    proxy: bool = True
    """Pass the host's proxy variables in (with a network only)."""
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    ports: Mapping[int, int | None] = field(default_factory=lambda: MappingProxyType({}))
    """Container port -> host port (None: any free one), published on 127.0.0.1 only."""
    session_id: str | None = None
    term: str = DEFAULT_TERM
    """TERM for commands (the terminal pane's is always xterm-256color)."""

    def __post_init__(self) -> None:
        check_term(self.term)
        if not isinstance(self.image, str) or not self.image:
            raise BackendError("The docker image must be a non-empty name like debian:bookworm.")
        size_in_bytes(self.memory, "memory")
        if size_in_bytes(self.disk, "disk") < 64 * 2**20:
            raise BackendError(f"The disk limit {self.disk!r} is too small; give at least 64m.")
        if self.cpuset is not None and not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", self.cpuset):
            raise BackendError(f"The CPU set {self.cpuset!r} is not a list like 1 or 0-1,3.")
        if not self.cpus > 0 or self.pids <= 0:
            raise BackendError("The cpus and pids limits must be positive numbers.")
        if self.user == 0:
            raise BackendError("The docker backend never runs sessions as root; pick a uid > 0.")
        if self.ca_bundle is not None:
            bundle = Path(self.ca_bundle)
            if not bundle.is_file():
                raise BackendError(f"The CA bundle {bundle} does not exist.")
            object.__setattr__(self, "ca_bundle", bundle)
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "ports", MappingProxyType(dict(self.ports)))

    @classmethod
    def build(cls, **values: Any) -> DockerOptions:
        """Options from keyword values, where None means "the default" (flags not given)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise BackendError(f"The docker backend has no option {unknown[0]!r}.")
        return cls(**{k: v for k, v in values.items() if v is not None})

    @property
    def limits(self) -> DockerLimits:
        return DockerLimits(self.memory, self.cpus, self.pids, self.disk)

    @property
    def disk_bytes(self) -> int:
        return size_in_bytes(self.disk, "disk")
