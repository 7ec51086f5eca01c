"""A workspace the kernel holds to the disk limit: an ext4 filesystem of the limit's size in a
sparse image file, on a loop device, mounted at the workspace as a Docker volume.

Why this way: overlay2 on ext4 (the usual engine) refuses `--storage-opt size`, and a watch on the
container's layer sees a fast writer only after it has written a second's worth (gigabytes on
an SSD). A filesystem of fixed size refuses the write itself (ENOSPC), background writers
included, and the host never holds more than the image file's size for it.

Docker's local volume driver mounts a block device but, unlike mount(8), cannot set up a loop
device itself (engine 20.10 answers `data: loop: invalid argument` to `o=loop`), so the loop
device is attached here, which needs the right to use /dev/loop-control (root, or a user given
access to it). Without it the backend falls back to watching the container's layer.

The loop device is attached with autoclear: the kernel detaches it when the volume is unmounted
(the container removed, by this session or by `reposim gc`), and its image file is already
unlinked, so the host gets the space back then, crash or not. The volume's name is in the
session's ownership record, so `reposim gc` removes it with a killed session's container.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from backends.base import BackendError

LOOP_CONTROL = "/dev/loop-control"
_LOOP_CTL_GET_FREE = 0x4C82
_LOOP_CONFIGURE = 0x4C0A
_LO_FLAGS_AUTOCLEAR = 4
_LO_INFO64_SIZE = 232
_LO_FLAGS_OFFSET = 52
_LO_FILE_NAME_OFFSET = 56
VOLUME_PREFIX = "reposim-disk-"


def images_dir() -> Path:
    """Where the image files live: RepoSim's cache directory (XDG rules, as simulator/paths)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reposim" / "disks"


def loop_devices_usable() -> bool:
    """Whether this process may attach loop devices and has the tools to make the filesystem."""
    return (
        os.access(LOOP_CONTROL, os.R_OK | os.W_OK)
        and shutil.which("mkfs.ext4") is not None
        and shutil.which("debugfs") is not None
    )


def volume_name(session_id: str) -> str:
    return f"{VOLUME_PREFIX}{session_id}"


@dataclass
class LoopDisk:
    """One session's loop device. Its image file is unlinked as soon as the device is attached:
    the kernel keeps the data while the device is attached and frees it when autoclear detaches
    the device (the volume unmounted), so no image file can outlive its session, even one
    killed with SIGKILL. `hold` keeps the device attached until Docker has mounted it; `image`
    (a descriptor of the unlinked file) measures what it holds on the host."""

    device: str
    image: int
    hold: int | None

    @classmethod
    def make(cls, session_id: str, size: int, uid: int) -> LoopDisk:
        directory = images_dir()
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = directory / f"{session_id}.img"
        try:
            with open(path, "xb") as handle:
                handle.truncate(size)  # sparse: the host holds only what is written
            _run(
                # no reserved blocks (the session gets the whole limit), no lost+found in the
                # workspace, inode tables initialised lazily by the kernel (a fast mkfs).
                ["mkfs.ext4", "-F", "-q", "-m", "0", "-b", "4096",
                 "-E", f"root_owner={uid}:{uid},lazy_itable_init=1,lazy_journal_init=1",
                 str(path)],
            )  # fmt: skip
            _run(["debugfs", "-w", "-R", "rmdir lost+found", str(path)])
            image = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                number, hold = _attach(path)
            except BaseException:
                os.close(image)
                raise
        finally:
            with contextlib.suppress(OSError):
                path.unlink()
        return cls(f"/dev/loop{number}", image, hold)

    def mounted(self) -> None:
        """Docker has mounted the device: drop our hold, so autoclear detaches it at unmount."""
        if self.hold is not None:
            os.close(self.hold)
            self.hold = None

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


def volume_options(disk: LoopDisk) -> dict[str, str]:
    """The local driver's options: ext4 on the device; `discard` returns freed blocks to the
    host (the loop driver punches holes in the image), so deleting files lowers host usage;
    `noinit_itable`: the kernel does not zero the fresh inode tables in the background (they
    would count as written)."""
    return {"type": "ext4", "device": disk.device, "o": "discard,noinit_itable"}


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
    descriptor that keeps it attached until Docker has mounted it."""
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
