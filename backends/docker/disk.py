"""The session's writable places the kernel holds to the disk limit: one ext4 filesystem of the
limit's size in a sparse image file, on a loop device, whose folders are mounted (as Docker
volumes) at the workspace, the user's home and /var/tmp: every place of the image the session's
uid may write.

Why this way: overlay2 on ext4 (the usual engine) refuses `--storage-opt size`, and a watch on the
container's layer sees a fast writer only after it has written a second's worth (gigabytes on
an SSD). A filesystem of fixed size refuses the write itself (ENOSPC), background writers
included, wherever in it they write, and the host never holds more than the image file's size
for it. (Issue 25: with only the workspace on it, a writer into the home directory, still in the
layer, ran to 1,182 MB under a 1g limit.)

Docker's local volume driver mounts a block device but, unlike mount(8), cannot set up a loop
device itself (engine 20.10 answers `data: loop: invalid argument` to `o=loop`), and it mounts
a device's root, not a folder of it (volume subpaths need engine 26). So this process attaches
the loop device, mounts it on the host for the moment Docker takes its folders as bind volumes
(`type=none, o=bind`: Docker still fills an empty one from the image's folder), and detaches
its own mount once the container has started (MNT_DETACH): the container's mounts keep the
filesystem. That needs root (CAP_SYS_ADMIN and /dev/loop-control); without it the backend falls
back to watching the container's layer.

The loop device is attached with autoclear: the kernel detaches it when its filesystem's last
mount goes (the container removed, by this session or by `reposim gc`), and its image file is
already unlinked, so the host gets the space back then, crash or not. The volumes' names are in
the session's ownership record, so `reposim gc` removes them with a killed session's container,
and the host mount of a session killed before its container started.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import posixpath
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from backends.base import BackendError

LOOP_CONTROL = "/dev/loop-control"
_LOOP_CTL_GET_FREE = 0x4C82
_LOOP_CONFIGURE = 0x4C0A
_LO_FLAGS_AUTOCLEAR = 4
_LO_INFO64_SIZE = 232
_LO_FLAGS_OFFSET = 52
_LO_FILE_NAME_OFFSET = 56
_MNT_DETACH = 2
VOLUME_PREFIX = "reposim-disk-"
# The places of an image its users may write (besides /tmp, a tmpfs, and /run/lock, a small one):
# each a folder of the filesystem, mounted there. The home directory is the session user's.
VAR_TMP = "/var/tmp"
# Where a home directory is never mounted: the filesystem's root, the system's own folders.
_NOT_A_HOME = (
    "/", "/bin", "/dev", "/etc", "/lib", "/proc", "/run", "/sbin", "/sys", "/tmp", "/usr", "/var",
)  # fmt: skip


def images_dir() -> Path:
    """Where the image files live: RepoSim's cache directory (XDG rules, as simulator/paths)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reposim" / "disks"


def loop_devices_usable() -> bool:
    """Whether this process may attach loop devices, mount them (root) and make the
    filesystem."""
    return (
        os.geteuid() == 0
        and os.access(LOOP_CONTROL, os.R_OK | os.W_OK)
        and shutil.which("mkfs.ext4") is not None
    )


def volume_name(session_id: str) -> str:
    """The workspace's volume (the other places' volumes add a suffix to it)."""
    return f"{VOLUME_PREFIX}{session_id}"


def mountable_home(home: str, workspace: str) -> bool:
    """Whether a user's home directory can be one of the disk's folders (not a system folder,
    nor the workspace or a folder around it)."""
    home = posixpath.normpath(home)
    return (
        home.startswith("/")
        and home not in _NOT_A_HOME
        and not any(home.startswith(f"{system}/") for system in _NOT_A_HOME[1:])
        and home != workspace
        and not home.startswith(workspace + "/")
        and not workspace.startswith(home + "/")
    )


def host_mount(session_id: str) -> Path:
    """Where the filesystem is mounted on the host while the container is made."""
    return images_dir() / f"{session_id}.mnt"


def release_host_mount(session_id: str) -> bool:
    """Detach a session's host mount if a crash left it (the container never started); returns
    whether there was one. Its filesystem goes when no container mounts it any more."""
    where = host_mount(session_id)
    if not os.path.ismount(where):
        with contextlib.suppress(OSError):
            where.rmdir()
        return False
    _umount_detach(where)
    with contextlib.suppress(OSError):
        where.rmdir()
    return True


@dataclass
class LoopDisk:
    """One session's loop device. Its image file is unlinked as soon as the device is attached:
    the kernel keeps the data while the device is attached and frees it when autoclear detaches
    the device (its last mount gone), so no image file can outlive its session, even one
    killed with SIGKILL. `mountpoint`: the host mount Docker takes the folders from, until
    `mounted()`; `image` (a descriptor of the unlinked file) measures what it holds on the host;
    `folders`: the container path -> the host folder for each place on the disk."""

    device: str
    image: int
    mountpoint: Path | None
    folders: dict[str, str] = field(default_factory=dict)

    @classmethod
    def make(
        cls, session_id: str, size: int, uid: int, places: dict[str, tuple[str, int, int]]
    ) -> LoopDisk:
        """`places`: container path -> (folder name, owner uid, mode) of each place to hold."""
        directory = images_dir()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = directory / f"{session_id}.img"
        image = -1
        try:
            with open(path, "xb") as handle:
                handle.truncate(size)  # sparse: the host holds only what is written
            _run(
                # no reserved blocks (the session gets the whole limit), inode tables
                # initialised lazily by the kernel (a fast mkfs).
                ["mkfs.ext4", "-F", "-q", "-m", "0", "-b", "4096",
                 "-E", "lazy_itable_init=1,lazy_journal_init=1", str(path)],
            )  # fmt: skip
            image = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            number, hold = _attach(path)
        except BaseException:
            if image >= 0:
                os.close(image)
            raise
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
        device = f"/dev/loop{number}"
        mountpoint = host_mount(session_id)
        disk = cls(device, image, None)
        try:
            mountpoint.mkdir(mode=0o700, exist_ok=True)
            # `discard` returns freed blocks to the host (the loop driver punches holes in the
            # image), so deleting files lowers host usage; `noinit_itable`: the kernel does not
            # zero the fresh inode tables in the background (they would count as written).
            _mount(device, mountpoint, "ext4", "discard,noinit_itable")
            disk.mountpoint = mountpoint
            for target, (name, owner, mode) in places.items():
                folder = mountpoint / name
                folder.mkdir()
                os.chown(folder, owner, owner)
                folder.chmod(mode)
                disk.folders[target] = str(folder)
        except BaseException:
            disk.close()
            raise
        finally:
            os.close(hold)  # the host mount holds the device now
        return disk

    def mounted(self) -> None:
        """The container has started (its mounts hold the filesystem): detach ours, so the
        device goes with the container's."""
        if self.mountpoint is not None:
            _umount_detach(self.mountpoint)
            with contextlib.suppress(OSError):
                self.mountpoint.rmdir()
            self.mountpoint = None

    def allocated(self) -> int:
        """Bytes of host disk the image holds now."""
        try:
            return os.fstat(self.image).st_blocks * 512
        except OSError:
            return 0

    def close(self) -> None:
        self.mounted()
        if self.image >= 0:
            os.close(self.image)
            self.image = -1


def volume_options(folder: str) -> dict[str, str]:
    """The local driver's options for one of the disk's folders: a bind volume (Docker fills it
    from the image's folder when it is empty, as any named volume)."""
    return {"type": "none", "o": "bind", "device": folder}


_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _mount(device: str, target: Path, fstype: str, data: str) -> None:
    if _libc.mount(device.encode(), os.fsencode(target), fstype.encode(), 0, data.encode()) != 0:
        code = ctypes.get_errno()
        raise BackendError(f"Could not mount the session's disk: {os.strerror(code)}")


def _umount_detach(target: Path) -> None:
    if _libc.umount2(os.fsencode(target), _MNT_DETACH) != 0:
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOENT):  # not (or no longer) a mount point
            raise BackendError(f"Could not detach the session's disk: {os.strerror(code)}")


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise BackendError(
            f"Could not make the session's disk ({command[0]}): "
            f"{detail[-1] if detail else done.returncode}"
        )


def _attach(image: Path) -> tuple[int, int]:
    """Attach the image to a free loop device with autoclear; returns its number and an open
    descriptor that keeps it attached until it is mounted."""
    backing = os.open(image, os.O_RDWR | os.O_CLOEXEC)
    control = os.open(LOOP_CONTROL, os.O_RDWR | os.O_CLOEXEC)
    try:
        info = bytearray(_LO_INFO64_SIZE)
        struct.pack_into("=I", info, _LO_FLAGS_OFFSET, _LO_FLAGS_AUTOCLEAR)
        name = os.fsencode(image)[:63]
        info[_LO_FILE_NAME_OFFSET : _LO_FILE_NAME_OFFSET + len(name)] = name
        config = struct.pack("=II", backing, 0) + bytes(info) + bytes(64)
        for _ in range(32):  # another process may take the free device first
            number = fcntl.ioctl(control, _LOOP_CTL_GET_FREE)
            device = os.open(f"/dev/loop{number}", os.O_RDWR | os.O_CLOEXEC)
            try:
                fcntl.ioctl(device, _LOOP_CONFIGURE, config)
            except OSError as exc:
                os.close(device)
                if exc.errno == errno.EBUSY:
                    continue
                raise BackendError(f"Could not attach a loop device for the disk: {exc}") from None
            return number, device
        raise BackendError("Could not attach a loop device for the disk: every one was busy.")
    finally:
        os.close(control)
        os.close(backing)
