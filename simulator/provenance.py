"""Knowing which trajectories this user recorded on this machine: a seal nobody else can make.

A trajectory's header carries `seal`, an HMAC-SHA256 of the rest of the header under a key only
this user can read (`<config dir>/trajectory.key`, 32 random bytes, mode 0600, made on first
use). The header is written first and the events are appended after it, so the seal alone
proves nothing about the lines under it: anyone holding one sealed file of this user (a shared
trajectory, a published data set) could put other commands under its header (issue 25).

So the writer of a sealed file also chains its event lines: tag(n) = HMAC(chain key,
tag(n-1) || the exact bytes of event line n), starting from the header's seal, the chain key
derived from the user's key. The tags (16 bytes each) go, one per line as each line is written,
to a log in the user's private state (`<state dir>/trajectory-chains/<digest of the seal>`,
mode 0600), not into the file: the file's bytes stay what they always were, so exports, other
tools and older RepoSim (whose event lines are strict: an unknown field is corrupt) read it as
before, and a stranger holding the file sees no tag to splice. Re-execution runs a line's
commands on this machine without asking only when every line up to it checks out: any prefix
of a file written here does (a cut-off file, a copy), and an edited, inserted, removed or
reordered line breaks trust from that line on. Anything else (someone else's file, an imported
one, an older file with no chain, a header edited after it was written) is foreign.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.errors import BackendError
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


# -- the chain over event lines ------------------------------------------------------------------

CHAINS = "trajectory-chains"
_TAG = 16
_CHAIN_LABEL = b"reposim.trajectory.chain/1\x00"


def _chain_key(create: bool) -> bytes | None:
    key = user_key(create=create)
    if key is None:
        return None
    return hmac.new(key, _CHAIN_LABEL, hashlib.sha256).digest()


def _chain_name(seal_value: str) -> str:
    return hashlib.sha256(seal_value.encode()).hexdigest()[:40]


def _chain_log(seal_value: str) -> Path:
    from backends.private_state import private_dir

    return private_dir(CHAINS) / _chain_name(seal_value)


def _chain_record(log: Path) -> Path:
    """Beside a chain's tags: where its trajectory was written (`{"trajectory": path}`)."""
    return log.with_name(log.name + ".json")


class ChainWriter:
    """The tags of a sealed file's event lines, appended to its private log as they are written
    (each with one write, so a killed writer leaves tags for every line it finished)."""

    def __init__(self, key: bytes, seal_value: str, fd: int) -> None:
        self._key = key
        self._state = hmac.new(key, seal_value.encode(), hashlib.sha256).digest()
        self._fd: int | None = fd

    @classmethod
    def start(cls, seal_value: str, trajectory: Path | None = None) -> ChainWriter | None:
        """A chain for the file `trajectory` whose header (already written) carries
        `seal_value`; None if the user's private state cannot hold it (then the file's events
        are simply not trusted). Where the file is goes beside the tags, for `reposim gc`."""
        key = _chain_key(create=True)
        if key is None:
            return None
        try:
            log = _chain_log(seal_value)
            if trajectory is not None:
                from backends.private_state import write_record

                write_record(_chain_record(log), {"trajectory": str(trajectory.absolute())})
            fd = os.open(
                log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except (OSError, BackendError):  # no private state: the events stay untrusted
            return None
        return cls(key, seal_value, fd)

    def add(self, line: bytes) -> None:
        """The next event line, exactly as written (without its newline)."""
        if self._fd is None:
            return
        self._state = hmac.new(self._key, self._state + line, hashlib.sha256).digest()
        try:
            os.write(self._fd, self._state[:_TAG])
        except OSError:  # a gap: the lines after it are not trusted, never the other way
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class ChainCheck:
    """Checks a file's event lines, in order, against the tags its writer kept; `check` is
    False from the first line that is not the one written here at that place."""

    def __init__(self, header: dict[str, Any]) -> None:
        self._tags = b""
        self._state: bytes | None = None
        self._key: bytes | None = None
        self._count = 0
        seal_value = header.get(SEAL_FIELD)
        self.header_trusted = isinstance(seal_value, str) and sealed_here(header)
        if not isinstance(seal_value, str) or not self.header_trusted:
            return
        key = _chain_key(create=False)
        if key is None:
            return
        try:
            fd = os.open(_chain_log(seal_value), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (OSError, BackendError):  # no log (an older file, another machine): untrusted
            return
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                return
            if info.st_mode & 0o077:
                return
            self._tags = handle.read()
        self._key = key
        self._state = hmac.new(key, seal_value.encode(), hashlib.sha256).digest()

    def check(self, line: bytes) -> bool:
        """Whether the next event line is the one written here at this place (and so is every
        line before it)."""
        if self._state is None or self._key is None:
            return False
        expected = self._tags[self._count * _TAG : (self._count + 1) * _TAG]
        state = hmac.new(self._key, self._state + line, hashlib.sha256).digest()
        if len(expected) != _TAG or not hmac.compare_digest(state[:_TAG], expected):
            self._state = None  # broken: nothing after it is trusted either
            return False
        self._state = state
        self._count += 1
        return True


# -- reposim gc: chains whose trajectory is gone ---------------------------------------------------


@dataclass(frozen=True)
class OrphanChain:
    """A chain's tags whose trajectory is gone; `removed` unless a dry run (or it failed)."""

    path: Path
    trajectory: Path
    removed: bool


def _chain_of(trajectory: Path) -> str | None:
    """The chain name of the seal `trajectory`'s header carries now; "" when the file is gone
    or holds no sealed header; None when it cannot be read (so it may still be the one)."""
    try:
        with trajectory.open("rb") as handle:
            first = handle.readline(1 << 20)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except OSError:
        return None
    try:
        header = json.loads(first)
    except ValueError:
        return ""
    value = header.get(SEAL_FIELD) if isinstance(header, dict) else None
    return _chain_name(value) if isinstance(value, str) else ""


def collect_chains(*, search: Path | None = None, dry_run: bool = False) -> list[OrphanChain]:
    """Remove the tags of trajectories that are provably gone: the file written beside the
    tags no longer exists, or now holds another recording (no header with that seal), and no
    `*.jsonl` directly in `search` (the default trajectory folder) carries that seal either.
    Tags with no such record (written before it was kept) are never removed: their file may
    be anywhere. A copy elsewhere of a removed file loses its trust, never gains any: it then
    re-executes in a container, or on the host after a question."""
    from backends.private_state import state_dir

    directory = state_dir() / CHAINS
    if not directory.is_dir():
        return []
    candidates: list[tuple[Path, Path]] = []
    for record in sorted(directory.glob("*.json")):
        log = record.with_name(record.name.removesuffix(".json"))
        try:
            info = record.lstat()
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            written = Path(str(json.loads(record.read_text())["trajectory"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        now = _chain_of(written)
        if now is not None and now != log.name:  # None: unreadable, so maybe still the one
            candidates.append((log, written))
    if not candidates:
        return []
    elsewhere = set()
    if search is not None and search.is_dir():
        for path in search.glob("*.jsonl"):
            elsewhere.add(_chain_of(path))
    found = []
    for log, written in candidates:
        if log.name in elsewhere or None in elsewhere:
            continue  # there, or maybe in a file that could not be read
        removed = False
        if not dry_run:
            with contextlib.suppress(OSError):
                log.unlink(missing_ok=True)
                _chain_record(log).unlink()
                removed = True
        found.append(OrphanChain(log, written, removed))
    return found
