"""Knowing which trajectories this user recorded on this machine: a seal nobody else can make.

A trajectory's header carries `seal`, an HMAC-SHA256 of the rest of the header under a key only
this user can read (`<config dir>/trajectory.key`, 32 random bytes, mode 0600, made on first
use). Re-execution runs a trajectory's commands on this machine without asking only when the
seal checks out; anything else (someone else's file, an imported one, an older file whose
`host` field was a digest anyone could compute, a header edited after it was written) is
foreign. The seal covers the header, not the events appended after it: a file is trusted as
this user's recording, and the events in it are the ones that user's sessions wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from simulator.paths import config_dir

SEAL_FIELD = "seal"
_PREFIX = "hmac-sha256:"
_KEY_BYTES = 32


def key_file() -> Path:
    return config_dir() / "trajectory.key"


def _read_key(path: Path) -> bytes | None:
    """The key, if it is a regular file of this user's that nobody else can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return None
        if info.st_mode & 0o077:
            # Someone else could have read it: a seal made with it proves nothing.
            return None
        data = handle.read(_KEY_BYTES + 1)
    return data if len(data) == _KEY_BYTES else None


def user_key(*, create: bool = True) -> bytes | None:
    """This user's sealing key; made on first use (None if it cannot be, or is unsafe)."""
    path = key_file()
    key = _read_key(path)
    if key is not None or not create:
        return key
    if path.exists() or path.is_symlink():
        return None  # there, but not a private key of ours: never overwritten silently
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_key(path)  # another process made it first
    except OSError:
        return None
    with os.fdopen(fd, "wb") as handle:
        handle.write(secrets.token_bytes(_KEY_BYTES))
    return _read_key(path)


def _canonical(header: dict[str, Any]) -> bytes:
    body = {k: v for k, v in header.items() if k != SEAL_FIELD}
    return json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def seal(header: dict[str, Any]) -> str | None:
    """The seal for a header dict being written now (None without a usable key)."""
    key = user_key()
    if key is None:
        return None
    return _PREFIX + hmac.new(key, _canonical(header), hashlib.sha256).hexdigest()


def sealed_here(header: dict[str, Any]) -> bool:
    """Whether this header, exactly as read, was sealed with this user's key."""
    claimed = header.get(SEAL_FIELD)
    if not isinstance(claimed, str) or not claimed.startswith(_PREFIX):
        return False
    key = user_key(create=False)
    if key is None:
        return False
    expected = _PREFIX + hmac.new(key, _canonical(header), hashlib.sha256).hexdigest()
    return hmac.compare_digest(claimed, expected)
