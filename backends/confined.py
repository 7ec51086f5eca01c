"""File operations confined to a directory that a concurrent rename or symlink swap cannot
break out of.

Resolving a path and then opening it by name leaves a gap: a directory swapped for a symlink
in between (renameat2 RENAME_EXCHANGE) sends the open outside. Here nothing is opened by a
name that was checked earlier; every lookup starts from a file descriptor of the root:

- `openat2(2)` with RESOLVE_BENEATH (Linux 5.6+): the kernel resolves the whole path, symlinks
  included, and refuses any step that leaves the root, atomically;
- elsewhere, a walk one component at a time with O_NOFOLLOW from directory descriptors we hold,
  reading each symlink and resolving it ourselves (`..` never goes above the root, an absolute
  target is refused).

Operations that act on a name (stat, delete, rename, create) open the parent directory that
way and then act on the last component relative to it, without following it. Writes refuse a
regular file with more than one hard link: its other name may be outside the workspace.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat as stat_mod
from collections import deque
from collections.abc import Iterator
from pathlib import PurePosixPath

from backends.base import BackendError, FileMissingError, PathEscapeError

_O_PATH = getattr(os, "O_PATH", 0)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (asm-generic)
_MAX_LINKS = 40
_NAME_MAX = 255
_PATH_MAX = 4096


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
except (OSError, AttributeError):  # pragma: no cover - no libc to call into
    _libc = None


def _openat2(dirfd: int, path: bytes, flags: int, mode: int, resolve: int) -> int:
    assert _libc is not None
    how = _OpenHow(flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, resolve)
    for _ in range(16):
        fd = int(
            _libc.syscall(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dirfd),
                ctypes.c_char_p(path),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code not in (errno.EAGAIN, errno.EINTR):  # EAGAIN: a rename raced `..`; retry
            raise OSError(code, os.strerror(code), path.decode(errors="replace"))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), path.decode(errors="replace"))


def openat2_available() -> bool:
    if _libc is None or not _O_PATH:
        return False
    try:
        fd = _openat2(os.open("/", _O_PATH), b".", _O_PATH, 0, _RESOLVE_BENEATH)
    except OSError:
        return False
    os.close(fd)
    return True


def check_name(path: str) -> None:
    """One clear sentence for names no file system takes."""
    if "\0" in path:
        raise BackendError(f"{path!r} contains a NUL byte, which no file name can hold.")
    raw = os.fsencode(path)
    if len(raw) >= _PATH_MAX:
        raise BackendError(f"The path {path[:60]}... is longer than {_PATH_MAX} bytes.")
    for part in raw.split(b"/"):
        if len(part) > _NAME_MAX:
            name = part[:40].decode(errors="replace")
            raise BackendError(
                f"The name {name}... in {path[:60]!r} is longer than {_NAME_MAX} bytes."
            )


def _check_single_file(st: os.stat_result, path: str, doing: str) -> None:
    """BackendError unless `st` is a regular file with no other name (a hard link could lead
    outside the workspace); `doing` ends the refusal ("read it ...")."""
    if not stat_mod.S_ISREG(st.st_mode):
        raise BackendError(f"{path} is not a regular file.")
    if st.st_nlink > 1:
        raise BackendError(
            f"{path} is a hard link to a file with other names, possibly outside the "
            f"workspace; refusing to {doing}."
        )


class ConfinedRoot:
    """A directory, held open, and operations on paths beneath it."""

    def __init__(self, root: str, *, use_openat2: bool | None = None) -> None:
        self.root = os.path.realpath(root)
        self._fd = os.open(self.root, (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)
        self.openat2 = openat2_available() if use_openat2 is None else use_openat2

    def close(self) -> None:
        """Idempotent: a second os.close could close a descriptor that reused the number."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- paths -------------------------------------------------------------------------------

    def relative(self, path: str) -> str:
        """`path` relative to the root ("." for the root); an absolute path must lie in it."""
        check_name(path)
        if path.startswith("/"):
            pure = PurePosixPath(os.path.normpath(path))
            root = PurePosixPath(self.root)
            if pure != root and root not in pure.parents:
                raise self._escape(path)
            return pure.relative_to(root).as_posix() or "."
        # `..` and symlinks are resolved as the kernel does, beneath the root.
        return PurePosixPath(path).as_posix() if path else "."

    def _escape(self, path: str) -> PathEscapeError:
        return PathEscapeError(f"{path} is outside the workspace; refusing to touch it.")

    def open(self, path: str, flags: int, mode: int = 0o666) -> int:
        """A descriptor for `path`, symlinks followed only while they stay beneath the root."""
        rel = self.relative(path)
        try:
            if self.openat2:
                return _openat2(
                    self._fd,
                    os.fsencode(rel),
                    flags,
                    mode,
                    _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS,
                )
            return self._walk_open(rel, flags, mode)
        except OSError as exc:
            raise self._error(exc, path) from None

    def _walk_open(self, rel: str, flags: int, mode: int) -> int:
        parent, name = self._walk(rel, follow_last=True)
        try:
            if name is None:
                return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=parent)
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
        finally:
            os.close(parent)

    def _walk(self, rel: str, *, follow_last: bool) -> tuple[int, str | None]:
        """(descriptor of the directory holding the last component, that component's name, not
        followed); name None when the path is the root or ends in `..` resolved to a directory.
        Symlinks on the way are resolved by hand, never by the kernel."""
        stack = [os.dup(self._fd)]
        queue = deque(p for p in rel.split("/") if p not in ("", "."))
        links = 0
        try:
            while queue:
                part = queue.popleft()
                if part == "..":
                    if len(stack) == 1:
                        raise OSError(errno.EXDEV, "escapes the root")
                    os.close(stack.pop())
                    continue
                last = not queue
                try:
                    st = os.stat(part, dir_fd=stack[-1], follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        return self._hand_over(stack), part
                    raise
                if stat_mod.S_ISLNK(st.st_mode) and (follow_last or not last):
                    links += 1
                    if links > _MAX_LINKS:
                        raise OSError(errno.ELOOP, "too many symbolic links")
                    target = os.readlink(part, dir_fd=stack[-1])
                    if target.startswith("/"):
                        raise OSError(errno.EXDEV, "absolute symbolic link")
                    queue.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))
                    continue
                if last:
                    return self._hand_over(stack), part
                fd = os.open(
                    part,
                    (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                    dir_fd=stack[-1],
                )
                stack.append(fd)
                if not stat_mod.S_ISDIR(os.fstat(fd).st_mode):  # swapped since the stat
                    raise OSError(errno.ENOTDIR, "not a directory")
            return self._hand_over(stack), None
        except BaseException:
            for fd in stack:
                os.close(fd)
            raise

    @staticmethod
    def _hand_over(stack: list[int]) -> int:
        top = stack.pop()
        for fd in stack:
            os.close(fd)
        return top

    def parent(self, path: str) -> tuple[int, str]:
        """(descriptor of the directory that holds `path`, the last name, not followed)."""
        rel = self.relative(path)
        pure = PurePosixPath(rel)
        if rel == "." or pure.name in ("", ".."):
            os.close(self.open(rel, _O_PATH or os.O_RDONLY))  # outside? say so first
            raise BackendError(f"{path} does not end in a name; give the file or directory itself.")
        parent = pure.parent.as_posix()
        fd = self.open(parent, (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY)
        return fd, pure.name

    def _error(self, exc: OSError, path: str) -> BackendError:
        code = exc.errno
        if code == errno.EXDEV:
            return self._escape(path)
        if code == errno.ENOENT:
            return FileMissingError(f"{path} does not exist in the workspace.")
        if code == errno.ENOTDIR:
            return BackendError(f"A part of {path} is not a directory.")
        if code == errno.EISDIR:
            return BackendError(f"{path} is a directory, not a file.")
        if code == errno.ELOOP:
            return BackendError(f"{path} goes through too many symbolic links.")
        if code in (errno.EACCES, errno.EPERM):
            return BackendError(f"{path} is not accessible (permission denied).")
        if code == errno.ENAMETOOLONG:
            return BackendError(f"{path[:60]} is too long a name for the file system.")
        return BackendError(f"{path}: {exc.strerror or exc}.")

    # -- operations --------------------------------------------------------------------------

    def open_dir(self, path: str) -> int | None:
        """A descriptor of the directory `path` beneath the root, or None when `path` is
        something else (opened without blocking, as a FIFO would)."""
        fd = self.open(path, os.O_RDONLY | os.O_NONBLOCK)
        if stat_mod.S_ISDIR(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
        return None

    def read(self, path: str) -> bytes:
        fd = self.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            st = os.fstat(fd)
            if stat_mod.S_ISDIR(st.st_mode):
                raise BackendError(f"{path} is a directory, not a file.")
            _check_single_file(st, path, "read it through the file API")
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def write(self, path: str, data: bytes) -> None:
        rel = self.relative(path)
        parent = PurePosixPath(rel).parent.as_posix()
        if parent != ".":
            self.makedirs(parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK
        fd = self.open(rel, flags, 0o666)
        with os.fdopen(fd, "wb") as handle:
            _check_single_file(os.fstat(handle.fileno()), path, "write through it")
            handle.truncate(0)
            handle.write(data)

    def makedirs(self, path: str) -> None:
        parts = [p for p in self.relative(path).split("/") if p not in ("", ".")]
        for end in range(1, len(parts) + 1):
            prefix = "/".join(parts[:end])
            try:
                fd = self.open(prefix, (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY)
            except FileMissingError:
                parent, name = self.parent(prefix)
                try:
                    os.mkdir(name, dir_fd=parent)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise self._error(exc, prefix) from None
                finally:
                    os.close(parent)
                continue
            os.close(fd)

    def lstat(self, path: str) -> os.stat_result:
        if self.relative(path) == ".":
            return os.fstat(self._fd)
        parent, name = self.parent(path)
        try:
            return os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError as exc:
            raise self._error(exc, path) from None
        finally:
            os.close(parent)

    def delete(self, path: str) -> None:
        """Delete a file, a symlink (dangling or not; never what it points to) or a tree."""
        if self.relative(path) == ".":
            raise BackendError("Refusing to delete the workspace root.")
        parent, name = self.parent(path)
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if stat_mod.S_ISDIR(st.st_mode):
                # shutil.rmtree with dir_fd walks by descriptors and never follows symlinks.
                shutil.rmtree(name, dir_fd=parent)
            else:
                os.unlink(name, dir_fd=parent)
        except OSError as exc:
            raise self._error(exc, path) from None
        finally:
            os.close(parent)

    def rename(self, src: str, dst: str) -> None:
        dst_rel = self.relative(dst)
        dst_parent = PurePosixPath(dst_rel).parent.as_posix()
        src_fd, src_name = self.parent(src)
        try:
            try:
                os.stat(src_name, dir_fd=src_fd, follow_symlinks=False)
            except OSError as exc:
                raise self._error(exc, src) from None
            if dst_parent != ".":
                self.makedirs(dst_parent)
            dst_fd, dst_name = self.parent(dst)
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False)
                    raise BackendError(f"{dst} already exists; refusing to overwrite it.")
                try:
                    os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                except OSError as exc:
                    raise self._error(exc, dst) from None
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)

    def scandir(self, path: str) -> Iterator[tuple[str, os.stat_result, bool | None]]:
        """(name, lstat, is a directory when followed — None for a dangling symlink)."""
        fd = self.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    is_dir: bool | None = stat_mod.S_ISDIR(st.st_mode)
                    if stat_mod.S_ISLNK(st.st_mode):
                        try:
                            is_dir = entry.is_dir()
                            if not is_dir and not entry.is_file():
                                is_dir = None
                        except OSError:
                            is_dir = None
                    yield entry.name, st, is_dir
        finally:
            os.close(fd)
