"""Debian package lists for setup containers: fetched once per image, kept on the host.

A setup that installs a Debian package as root (Python.h for a C extension, a shared library a
module loads) needs the image's package lists, and images carry none (Debian's own delete
them), so every container fetched them again: `apt-get update` took ~8 s and wrote 80 MB at
load 6, 97 s in a one-CPU container at load 24. The first container of an image that fetches
them leaves a copy on the host:

    $XDG_CACHE_HOME/reposim/apt-lists/<image id>.tar
        /var/lib/apt/lists and apt's binary package cache (~120 MB for Debian bookworm)

and the next container of that image gets the copy put into it (Docker's archive API, < 1 s)
instead of fetching. The image itself is never changed, and nothing is created in Docker. A copy
older than `MAX_AGE` is fetched again; a copy whose lists name files the mirror no longer has
(a point release between) makes the install fail to download, and the ladder then fetches the
lists again and retries (`FETCH_FAILED`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from enum import Enum
from pathlib import Path

from simulator.paths import cache_dir

MAX_AGE = 24 * 3600.0
"""Seconds a host copy of the lists is used for (Debian's mirrors keep the files a day's lists
name; a point release can move them sooner, which `FETCH_FAILED` catches)."""

# The container drops setuid/setgid: apt must not switch to its _apt sandbox user.
APT = "apt-get -o APT::Sandbox::User=root"
HAS_LISTS = "ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1"
UPDATE = f"{APT} update -qq >/dev/null 2>&1; {HAS_LISTS}"
FETCH_FAILED = re.compile(r"Failed to fetch|Unable to fetch|404\s+Not Found")
# What is copied out after an update (paths relative to /): the lists, and the package cache
# apt builds from them (without it each install rebuilds it: about a third of the CPU time).
SAVED = ("var/lib/apt/lists", "var/cache/apt/pkgcache.bin")


class Lists(Enum):
    """Where a container's package lists came from."""

    PRESENT = "present"  # the image or an earlier step of this container had them
    CACHED = "cached"  # copied from the host, fetched earlier for the same image
    FETCHED = "fetched"  # apt-get update in this container (and copied to the host)
    MISSING = "missing"  # the update failed (no network, a mirror down)


def lists_file(image_id: str) -> Path:
    """The host copy for one image, by its id (an id names the image's content)."""
    digest = image_id.split(":", 1)[-1]
    return cache_dir() / "apt-lists" / f"{digest}.tar"


async def run_as_root(
    container: str, script: str, args: list[str], *, timeout: float
) -> tuple[int, str]:
    """`sh -c SCRIPT -- ARGS` as root in the container; arguments never reach the script as
    code, only as "$@"."""
    from backends.docker_engine import connect

    argv = ["timeout", str(int(timeout)), "sh", "-c", script, "setup", *args]

    def run() -> tuple[int, str]:
        client = connect()
        try:
            exec_id = client.api.exec_create(container, argv, user="0:0")
            output = bytes(client.api.exec_start(exec_id["Id"])).decode("utf-8", "replace")
            code = client.api.exec_inspect(exec_id["Id"]).get("ExitCode")
            return int(code if code is not None else 1), output
        finally:
            client.close()

    return await asyncio.to_thread(run)


async def ensure_lists(container: str, image_id: str | None, *, refresh: bool = False) -> Lists:
    """Package lists in the container: there already, from the host's copy for its image, or
    fetched (then copied to the host for the next container). `refresh` fetches even when a
    copy was put in (its lists named files the mirror no longer has)."""
    if not refresh:
        code, _ = await run_as_root(container, HAS_LISTS, [], timeout=60)
        if code == 0:
            return Lists.PRESENT
        restored = False
        if image_id:
            restored = await asyncio.to_thread(_restore, container, image_id)
        if restored:
            code, _ = await run_as_root(container, HAS_LISTS, [], timeout=60)
            if code == 0:
                return Lists.CACHED
    code, _ = await run_as_root(container, UPDATE, [], timeout=600)
    if code != 0:
        return Lists.MISSING
    if image_id:
        with contextlib.suppress(OSError):
            await asyncio.to_thread(_save, container, image_id)
    return Lists.FETCHED


def _restore(container: str, image_id: str) -> bool:
    from backends.docker_engine import connect

    path = lists_file(image_id)
    try:
        if time.time() - path.stat().st_mtime > MAX_AGE:
            return False
        handle = path.open("rb")
    except OSError:
        return False
    client = connect()
    try:
        with handle:
            return bool(client.api.put_archive(container, "/", handle))
    finally:
        client.close()


def _save(container: str, image_id: str) -> None:
    """The container's lists and package cache, as one tar, to the host (written aside and
    renamed, so a concurrent setup of the same image never reads half a file)."""
    from backends.docker_engine import connect

    path = lists_file(image_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    spool = path.with_name(f".{path.name}.{os.getpid()}.{id(container)}")
    script = "cd / && exec tar -cf - " + " ".join(f"$(ls -d {p} 2>/dev/null)" for p in SAVED)
    client = connect()
    try:
        exec_id = client.api.exec_create(container, ["sh", "-c", script], user="0:0")
        with spool.open("wb") as out:
            for stdout, _stderr in client.api.exec_start(exec_id["Id"], stream=True, demux=True):
                if stdout:
                    out.write(stdout)
        if client.api.exec_inspect(exec_id["Id"]).get("ExitCode") != 0:
            raise OSError("tar of the package lists failed")
        spool.replace(path)
    finally:
        client.close()
        spool.unlink(missing_ok=True)
