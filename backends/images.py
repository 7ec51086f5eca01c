"""Building a base image without a registry: debootstrap a minimal Debian, then import it.

For machines that cannot pull images (air-gapped, or behind a proxy the engine does not use),
`reposim image bootstrap` builds a small Debian with Python, venv, pip, pytest, git, a C and
C++ toolchain (gcc, g++, make, cmake) and less, vim-tiny and nano, from the Debian mirror this
machine's apt already uses (about three minutes on 2 cores), and imports it into the local
engine. The image carries no owner labels (a container started from it by hand must not look
like a session's). It needs root (debootstrap chroots) and the `debootstrap` tool.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from backends.base import BackendError
from backends.docker_engine import connect

DEFAULT_TAG = "reposim/base:bookworm-2"
DEFAULT_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PACKAGES = (
    "python3",
    "python3-venv",
    "python3-pip",
    "python3-pytest",
    "python-is-python3",
    "git",
    "procps",
    "ca-certificates",
    # What a developer expects for C and C++ projects (issue 18: F5 on a C repository).
    "gcc",
    "g++",
    "libc6-dev",
    "make",
    "cmake",
    # For reading and small edits in the terminal pane.
    "less",
    "vim-tiny",
    "nano",
)
# The unprivileged user sessions run as (uid 1000, like most desktop users).
USER_SETUP = (
    "groupadd -g 1000 reposim && useradd -m -u 1000 -g 1000 -s /bin/bash reposim && "
    "mkdir -p /workspace && chown 1000:1000 /workspace && "
    "rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*"
)

# The image's config: no LABEL, so nothing RepoSim's gc or a reader could take for an owner.
IMPORT_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "WORKDIR /",
    'CMD ["/bin/bash"]',
)

Log = Callable[[str], None]


def image_exists(tag: str) -> bool:
    import docker.errors

    client = connect()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    finally:
        client.close()
    return True


def configured_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The first plain Debian mirror in this machine's apt sources (deb822 or one-line form)."""
    candidates: list[str] = []
    for sources in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        for match in re.finditer(r"^URIs:\s*(.+)$", sources.read_text(), re.MULTILINE):
            candidates.extend(match.group(1).split())
    one_line = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if path.is_file():
            for line in path.read_text().splitlines():
                parts = line.split("#", 1)[0].split()
                if parts and parts[0] == "deb":
                    candidates.extend(p for p in parts[1:] if "://" in p)
    for uri in candidates:
        if "security" not in uri and "debian" in uri:
            return uri
    return DEFAULT_MIRROR


def bootstrap_image(
    tag: str = DEFAULT_TAG,
    *,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    packages: tuple[str, ...] = PACKAGES,
    log: Log = print,
) -> str:
    """Build and import the image; returns its id. Raises BackendError with the fix on failure."""
    if os.geteuid() != 0:
        raise BackendError(
            "Building an image needs root (debootstrap chroots): run "
            "`sudo reposim image bootstrap` or `sudo uv run reposim image bootstrap`."
        )
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise BackendError(
            "debootstrap is not installed: install it with `sudo apt-get install debootstrap`."
        )
    client = connect()
    mirror = mirror or configured_mirror()
    work = Path(tempfile.mkdtemp(prefix="reposim-rootfs-"))
    rootfs = work / "rootfs"
    try:
        log(f"debootstrap {suite} from {mirror} (about three minutes)...")
        proc = subprocess.run(
            [
                debootstrap,
                "--variant=minbase",
                f"--include={','.join(packages)}",
                suite,
                str(rootfs),
                mirror,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise BackendError(f"debootstrap failed ({tail}); check the mirror {mirror}.")
        setup = subprocess.run(
            ["chroot", str(rootfs), "/bin/sh", "-c", USER_SETUP],
            capture_output=True,
            text=True,
            check=False,
        )
        if setup.returncode != 0:
            raise BackendError(f"Preparing the image failed: {setup.stderr.strip()}")
        log(f"importing as {tag}...")
        changes = list(IMPORT_CHANGES)
        repository, _, version = tag.rpartition(":")
        if not repository or "/" in version:
            repository, version = tag, "latest"
        tar = subprocess.Popen(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."],
            stdout=subprocess.PIPE,
        )
        assert tar.stdout is not None
        try:
            client.api.import_image(
                src=tar.stdout,
                repository=repository,
                tag=version,
                changes=changes,
                stream_src=True,
            )
        finally:
            tar.stdout.close()
            tar.wait()
        image = client.images.get(tag)
        log(f"built {tag} ({image.id[:19]})")
        return str(image.id)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        client.close()
