"""`DockerBackend`: a workspace inside a fresh container; the host checkout is never changed.

Starting: create and start the container, then at once and side by side: copy the workspace
(the repository, `.git` included, owned by the user) with one `put_archive`, start the reaper,
start the command shell. A root exec adds a passwd entry only for images without our uid. The
file service starts in the background, so the editor's first read finds it ready.

Disk, from the strongest the engine and this process allow (`describe()` says which is in force):
- `storage-opt`: `--storage-opt size` (overlay2 on xfs with pquota), a quota on the whole layer;
- `loop`: the workspace is an ext4 filesystem of the limit's size on a loop device (disk.py), so
  the kernel refuses writes past it (ENOSPC), background writers included;
- `watch`: neither is possible; only the watch below holds the workspace.
Always: /tmp is a tmpfs of at most the disk limit (counted against memory: see container.py); no
single file may outgrow the limit (RLIMIT_FSIZE); and for the session's whole life a watch on the
container's writable layer (the engine's SizeRw; the loop disk's image is added) stops the running
command and clears every background process once the session has written more than its limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import posixpath
import secrets
from pathlib import Path
from typing import Any

from backends.base import (
    BackendDescription,
    BackendError,
    BackendUnavailableError,
    DirEntry,
    ExecOptions,
    ExecResult,
    FileMissingError,
    FileStat,
    PathEscapeError,
    Pty,
    kind_of_mode,
)
from backends.docker import container as ctr
from backends.docker import disk as loopdisk
from backends.docker.channel import (
    FALLBACK_HOME,
    FALLBACK_USER,
    WORKSPACE,
    DockerShellChannel,
)
from backends.docker.file_service import DENIED, ESCAPE, EXISTS, IS_DIR, MISSING, NOT_DIR
from backends.docker.files import FileService, PythonFiles, ShellFiles
from backends.docker.options import DockerLimits, DockerOptions, proxy_env
from backends.docker.programs import program_text
from backends.docker.pty import DockerPty
from backends.docker.reaper import ROOT, Reaper
from backends.docker.stream import blocking
from backends.docker_engine import ContainerOwnership, connect, image_missing_error
from backends.shell import PersistentShell, ShellBackend

# How often the writable layer is measured: every second, and five times a second once the
# session has used three quarters of its limit (a writer gets less time to overshoot it).
DISK_WATCH_INTERVAL = 1.0
DISK_WATCH_INTERVAL_NEAR = 0.2
# After a stop, what the layer may still grow by while the stopped writers' last writes land.
DISK_SETTLING = 16 * 2**20


# What the file service's status codes mean ({dst}: a rename's destination).
_FILE_ERRORS: dict[int, tuple[type[BackendError], str]] = {
    MISSING: (FileMissingError, "{path} does not exist in the workspace."),
    ESCAPE: (PathEscapeError, "{path} is outside the workspace; refusing to touch it."),
    IS_DIR: (BackendError, "{path} is a directory, not a file."),
    NOT_DIR: (BackendError, "{path} is not a directory."),
    EXISTS: (BackendError, "{dst} already exists; refusing to overwrite it."),
    DENIED: (BackendError, "{path} is not accessible (permission denied)."),
}


class DockerBackend(ctr.InContainer, ShellBackend):
    """A workspace inside a fresh container; the host checkout is never changed."""

    kind = "docker"

    def __init__(self, source: Path | str, options: DockerOptions | None = None) -> None:
        self.source = Path(source).resolve()
        self.options = options or DockerOptions()
        self.session_id = self.options.session_id or secrets.token_hex(6)
        self._client: Any = None
        self._api: Any = None
        self._container: str | None = None
        self._image_id: str | None = None
        self._user_name = ""
        self._files: FileService | None = None
        self._files_lock = asyncio.Lock()
        self._warmup: asyncio.Future[Any] | None = None
        self._reaper: Reaper | None = None
        self._ptys: list[DockerPty] = []
        self._storage_opt = False
        self._ownership: ContainerOwnership | None = None
        self._disk: loopdisk.LoopDisk | None = None
        self._volumes: dict[str, str] = {}
        """The disk's volumes: container path -> volume name."""
        self._baseline = 0
        """Bytes the writable layer holds before any command: the workspace as copied in."""
        self._disk_baseline = 0
        """Bytes the loop disk's image held after the workspace was copied in."""
        self._disk_watch: asyncio.Task[None] | None = None
        self._disk_tripped = False
        self._disk_cleared = False
        """The watch cleared background writers while no command ran (said by the next one)."""
        self._channel: DockerShellChannel | None = None
        self._clears_seen = 0
        self._reaper_lock = asyncio.Lock()
        self.reaper_restarts = 0
        """How many times the reaper had died and was started again."""

    # -- lifecycle --

    @property
    def image(self) -> str:
        return self.options.image

    @property
    def limits(self) -> DockerLimits:
        return self.options.limits

    @property
    def uid(self) -> int:
        return self.options.user

    @property
    def container_id(self) -> str | None:
        return self._container

    def _env(self) -> dict[str, str]:
        env = {"LANG": "C.UTF-8", "REPOSIM": "1"}
        if self.options.ca_bundle is not None:
            env.update(dict.fromkeys(ctr.CA_TARGET_VARS, ctr.CA_PATH))
        if self.options.network and self.options.proxy:
            env.update(proxy_env())
        env.update(self.options.env)
        return env

    async def start(self) -> None:
        if self._client is not None:
            raise BackendError("This docker backend is already started.")
        if not self.source.is_dir():
            raise BackendError(f"{self.source} is not a directory.")
        self._client = await blocking(connect)
        self._api = self._client.api
        try:
            await self._create()
            container = self._require_container()
            archive = await blocking(ctr.workspace_archive, self.source, self.options)
            shell = PersistentShell(self._open_shell_channel, WORKSPACE, term=self.options.term)
            # The workspace copy, the user fix-up, the reaper and the shell are independent: the
            # shell only needs the files before its first command, which start() awaits.
            with archive:
                # With a loop disk the workspace is in the volume, not in the layer.
                self._baseline = 0 if self._disk is not None else archive.seek(0, 2)
                archive.seek(0)
                results = await asyncio.gather(
                    self._put_archive(archive),
                    self._open_reaper(container),
                    shell.start(),
                    return_exceptions=True,
                )
            self._shell = shell
            if isinstance(results[1], Reaper):
                self._reaper = results[1]
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            assert self._reaper is not None
            self._user_name = self._reaper.user_name
            if self._disk is not None:
                self._disk_baseline = self._disk.allocated()
            if not self._user_name:
                await self._ensure_user()
            if not self._storage_opt:
                self._disk_watch = asyncio.ensure_future(self._watch_disk())
        except BaseException:
            await self.stop()
            raise

    async def _open_reaper(self, container: str) -> Reaper:
        """The reaper; then, at once, the file service's start in the background: it needs the
        reaper (python3's path, and its guard) and nothing else, so it runs beside the shell's
        start and the workspace's copy, and a session's first command, which waits for it
        (`_service_guarded`), seldom finds it still starting."""
        reaper = await Reaper.open(self._api, container, self.uid)
        self._reaper = reaper
        self._warmup = asyncio.ensure_future(self._files_service())
        self._warmup.add_done_callback(_ignore_result)
        return reaper

    def _user_spec(self) -> str:
        return f"{self.uid}:{self.uid}"

    def _require_container(self) -> str:
        if self._container is None:
            raise BackendError("The docker backend has not been started.")
        return self._container

    async def _create(self) -> None:
        import docker.errors

        api = self._api
        try:
            info = await blocking(api.inspect_image, self.image)
        except docker.errors.ImageNotFound:
            raise image_missing_error(self.image) from None
        except docker.errors.APIError as exc:
            if exc.status_code == 404:
                raise image_missing_error(self.image) from None
            raise BackendUnavailableError(
                f"Docker refused to inspect the image {self.image}: {exc.explanation or exc}"
            ) from None
        self._image_id = info["Id"]

        def create_and_start(storage_opt: bool) -> str:
            # Claimed in RepoSim's private state first: only that record lets gc remove it.
            self._ownership = ownership = ContainerOwnership.claim(self.session_id)
            if not storage_opt and loopdisk.loop_devices_usable():
                home = ctr.image_home(
                    api, self._image_id or self.image, self.uid, f"reposim-{self.session_id}",
                    ownership.labels,
                )  # fmt: skip
                make_volumes(home)
            created = api.create_container(
                self.image,
                command=["sleep", "infinity"],
                # init and the reaper run as root; every exec names the session's uid.
                user=ROOT,
                working_dir=WORKSPACE,
                labels=ownership.labels,
                host_config=ctr.host_config(
                    api, self.options, storage_opt=storage_opt, volumes=self._volumes
                ),
                ports=list(self.options.ports) or None,
                name=f"reposim-{self.session_id}",
                network_disabled=not self.options.network,
                environment=self._env(),
            )
            container = str(created["Id"])
            ownership.bind(container)
            ctr.track(container, api)
            self._container = container
            api.start(container)
            if self._disk is not None:
                self._disk.mounted()
            return container

        def make_volumes(home: str) -> None:
            # Every place of the image the session's uid may write, on the one disk.
            uid, workspace = self.uid, loopdisk.volume_name(self.session_id)
            places = {
                WORKSPACE: ("workspace", uid, 0o755),
                loopdisk.VAR_TMP: ("var-tmp", 0, 0o1777),
            }
            names = {WORKSPACE: workspace, loopdisk.VAR_TMP: f"{workspace}-var-tmp"}
            if loopdisk.mountable_home(home, WORKSPACE):
                places[home] = ("home", uid, 0o755)
                names[home] = f"{workspace}-home"
            assert self._ownership is not None
            self._ownership.own_volumes(list(names.values()))
            self._disk = disk = loopdisk.LoopDisk.make(
                self.session_id, self.options.disk_bytes, uid, places
            )
            for target, folder in disk.folders.items():
                api.create_volume(
                    names[target],
                    driver="local",
                    driver_opts=loopdisk.volume_options(folder),
                    labels=self._ownership.labels,
                )
                ctr.track(names[target], api, volume=True)
                self._volumes[target] = names[target]

        try:
            if ctr.storage_opt_supported is not False:
                try:
                    await blocking(create_and_start, True)
                    ctr.storage_opt_supported = self._storage_opt = True
                    return
                except docker.errors.APIError as exc:
                    if "storage-opt" not in str(exc.explanation or exc):
                        raise
                    ctr.storage_opt_supported = False
            await blocking(create_and_start, False)
        except docker.errors.APIError as exc:
            raise BackendError(
                f"Docker could not start the container: {exc.explanation or exc}"
            ) from None

    async def _put_archive(self, archive: Any) -> None:
        import docker.errors

        try:
            await blocking(self._api.put_archive, self._container, "/", archive)
        except docker.errors.APIError as exc:
            raise BackendError(
                f"Could not copy the workspace into the container: {exc.explanation or exc}"
            ) from None

    async def _ensure_user(self) -> None:
        command = [
            "sh", "-c", program_text("ensure_user.sh"), "ensure-user",
            str(self.uid), FALLBACK_USER, FALLBACK_HOME,
        ]  # fmt: skip

        def run() -> str:
            exec_id = self._api.exec_create(self._container, command, user=ROOT)
            return bytes(self._api.exec_start(exec_id["Id"])).decode(errors="replace")

        output = (await blocking(run)).strip()
        self._user_name = output.splitlines()[-1] if output else FALLBACK_USER

    async def _open_shell_channel(self) -> DockerShellChannel:
        channel = await DockerShellChannel.open(
            self._api,
            self._require_container(),
            self._user_spec(),
            self._env(),
            self._reaper_for_channel,
        )
        self._channel = channel
        return channel

    async def _live_reaper(self) -> Reaper:
        """The reaper, started again if it died (the OOM killer, or someone with root on the
        host): without it no timeout, interrupt or OOM report would work."""
        async with self._reaper_lock:  # two callers finding it dead start one new reaper
            return await self._live_reaper_locked()

    async def _live_reaper_locked(self) -> Reaper:
        reaper = self._reaper
        if reaper is None:
            raise BackendError("The docker backend has not been started.")
        if not reaper.alive:
            with contextlib.suppress(Exception):
                await reaper.close()
            self._reaper = reaper = await Reaper.open(
                self._api, self._require_container(), self.uid
            )
            self.reaper_restarts += 1
            if isinstance(self._files, PythonFiles):
                await reaper.guard(self._files.pid)
        return reaper

    async def _reaper_for_channel(self) -> Reaper | None:
        if self._reaper is None:
            return None
        try:
            return await self._live_reaper()
        except BackendError:
            return None

    async def _after_clearing(self) -> None:
        """If the reaper cleared a runaway session since the last command, drop what the
        killed processes wrote into the command shell's stream meanwhile."""
        if self._reaper is None:
            return
        reaper = await self._live_reaper()
        if not reaper.settled.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reaper.settled.wait(), 30)
        if reaper.clears == self._clears_seen:
            return
        self._clears_seen = reaper.clears
        if self._channel is not None and self._shell is not None and not self._shell.running:
            await self._channel.discard_pending()

    async def stop(self) -> None:
        if self._warmup is not None and not self._warmup.done():
            self._warmup.cancel()
            with contextlib.suppress(BaseException):
                await self._warmup
        self._warmup = None
        await self._close_session_services()
        if self._reaper is not None:
            await self._reaper.close()
            self._reaper = None
        if self._container is not None:
            container, self._container = self._container, None
            removed = False
            with contextlib.suppress(Exception):
                await blocking(self._api.remove_container, container, force=True, v=True)
                removed = True
            ctr.untrack(container)
        else:
            removed = True
        volumes, self._volumes = list(self._volumes.values()), {}
        for volume in volumes:
            try:
                await blocking(self._api.remove_volume, volume, force=True)
            except Exception:
                removed = False  # the record stays: gc removes it later
            ctr.untrack(volume, volume=True)
        if self._disk is not None:
            self._disk.close()
            self._disk = None
        if removed and self._ownership is not None:
            self._ownership.release()
            self._ownership = None
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    async def _close_session_services(self) -> None:
        """Close what a session uses in the container (its disk watch, terminals, command
        shell and file service); the container, its reaper and its disk stay (a warm pool
        resets the container for its next user after this)."""
        if self._disk_watch is not None:
            self._disk_watch.cancel()
            with contextlib.suppress(BaseException):
                await self._disk_watch
            self._disk_watch = None
        for pty in self._ptys:
            with contextlib.suppress(Exception):
                await pty.close()
        self._ptys.clear()
        for service in (self._shell, self._files):
            if service is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(service.close(), 5)
        self._shell = self._files = None
        self._channel = None

    # -- commands --

    async def _service_guarded(self) -> None:
        """Wait for the file service the start began, if it is still starting. It runs as the
        session's uid and the reaper guards it from the moment it says it is ready; a command
        before that (`kill -STOP -1` as a session's first command, the probe of issue 25) stopped
        it half started, so it never said so, nothing continued it, and every file operation
        waited for it. Commands wait for it instead (it starts beside the shell: ~0.1-0.2 s
        after the start returns, when it has not finished already)."""
        warmup = self._warmup
        if warmup is not None and not warmup.done():
            try:
                await asyncio.shield(warmup)
            except asyncio.CancelledError:
                if not warmup.cancelled():  # this command was cancelled, not the start (stop())
                    raise
            except Exception:  # a failed start: the next file operation starts one again
                pass

    async def run_command(self, command: str, options: ExecOptions) -> ExecResult:
        await self._service_guarded()
        await self._after_clearing()
        self._disk_tripped = False
        reaper, channel = self._reaper, self._channel
        clears = reaper.clears if reaper is not None else 0
        if reaper is not None and channel is not None:
            await reaper.running(channel.pid)
        try:
            result = await super().run_command(command, options)
        finally:
            if reaper is not None:
                await reaper.running(None)
        if reaper is not None and (reaper.clears != clears or not reaper.settled.is_set()):
            # The reaper cleared the session's runaway processes while this command ran: the
            # command was spared, but it may have waited for forks, or lost a detached child.
            result = dataclasses.replace(result, cleared=True)
        if not (self._disk_tripped or self._disk_cleared):
            return result
        what = "the command was" if self._disk_tripped else "its background processes were"
        self._disk_cleared = False
        notice = (
            f"\nreposim: the session wrote more than its disk limit ({self.options.disk}); "
            f"{what} stopped.\n"
        ).encode()
        if options.on_output is not None:
            options.on_output(notice)
        return dataclasses.replace(result, output=result.output + notice)

    async def disk_usage(self) -> int:
        """Bytes the session has written to its container (beyond the workspace copied in):
        the writable layer, and the loop disk's image file when the workspace is on one."""
        api, container = self._api, self._require_container()
        disk = self._disk

        def inspect() -> dict[str, Any]:
            # The SDK's inspect_container cannot ask for sizes; the engine's API can.
            url = api._url("/containers/{0}/json", container)
            return dict(api._result(api._get(url, params={"size": 1}), True))

        info = await blocking(inspect)
        layer = max(0, int(info.get("SizeRw") or 0) - self._baseline)
        return layer + (disk.allocated() - self._disk_baseline if disk is not None else 0)

    async def _watch_disk(self) -> None:
        """For the session's whole life: once it has written more than its limit and is still
        writing, stop the running command, the terminals' foreground jobs and every background
        process (an `rm` that runs over the limit is left alone: it does not grow)."""
        limit = self.options.disk_bytes
        # What the writers stopped last time had written: what they finish writing while they
        # are stopped is no new writer (nor is it a reason to stop the next command).
        stopped_at = limit
        last = None
        while True:
            near = last is not None and last > limit * 3 // 4
            await asyncio.sleep(DISK_WATCH_INTERVAL_NEAR if near else DISK_WATCH_INTERVAL)
            try:
                used = await self.disk_usage()
            except Exception:
                return  # the container is going away
            if used > stopped_at and (last is None or used > last):
                await self._stop_writers()
                stopped_at = used + DISK_SETTLING
            elif used <= limit:
                stopped_at = limit
            last = used

    async def _stop_writers(self) -> None:
        if self._shell is not None and self._shell.running:
            self._disk_tripped = True
            await self._shell.interrupt()
        else:
            self._disk_cleared = True
        for pty in self._ptys:
            if not pty.closed:
                await pty.stop_foreground()
        with contextlib.suppress(BackendError):
            await self.clear_processes()

    async def open_pty(self, cols: int = 80, rows: int = 24) -> Pty:
        await self._service_guarded()
        await self._live_reaper()
        pty = await DockerPty.spawn(
            self._api,
            self._require_container(),
            self._user_spec(),
            self._env(),
            lambda: self._reaper,
            cols,
            rows,
        )
        self._ptys = [p for p in self._ptys if not p.closed]
        self._ptys.append(pty)
        return pty

    async def clear_processes(self) -> None:
        """Kill every process the session's commands left running (background jobs included)."""
        await (await self._live_reaper()).clear()

    # -- files --

    def _absolute(self, path: str) -> str:
        joined = posixpath.normpath(posixpath.join(WORKSPACE, path))
        if joined != WORKSPACE and not joined.startswith(WORKSPACE + "/"):
            raise PathEscapeError(f"{path} is outside the workspace; refusing to touch it.")
        return joined

    async def _files_service(self) -> FileService:
        if self._reaper is None:
            raise BackendError("The docker backend has not been started.")
        async with self._files_lock:
            if self._files is None:
                if self._reaper.python:
                    files = await PythonFiles.open(
                        self._api,
                        self._require_container(),
                        self._user_spec(),
                        self._reaper.python,
                        WORKSPACE,
                    )
                    # It runs as the session's uid, within a command's `kill -STOP -1`.
                    await (await self._live_reaper()).guard(files.pid)
                    self._files = files
                else:
                    shell = PersistentShell(
                        self._open_shell_channel, WORKSPACE, term=self.options.term
                    )
                    await shell.start()
                    self._files = ShellFiles(shell, WORKSPACE)
            return self._files

    async def _call_files(self, op: str, path: str, data: bytes, args: dict[str, str]) -> Any:
        files = await self._files_service()
        try:
            return await files.call(op, data, path=self._absolute(path), **args)
        except BackendError:
            # The service died (a command's `kill -9 -1`, the OOM killer): a new one next time.
            if self._files is files:
                self._files = None
            with contextlib.suppress(Exception):
                await files.close()
            raise

    async def _file_op(self, op: str, path: str, data: bytes = b"", **args: str) -> bytes:
        try:
            code, body = await self._call_files(op, path, data, args)
        except BackendError:
            # Once more with a fresh service: the old one may have been killed between calls.
            code, body = await self._call_files(op, path, data, args)
        if code == 0:
            return bytes(body)
        if code in _FILE_ERRORS:
            error, text = _FILE_ERRORS[code]
            raise error(text.format(path=path, dst=args.get("dst", path)))
        detail = bytes(body).decode(errors="replace").strip().splitlines()
        reason = detail[-1] if detail else f"status {code}"
        raise BackendError(f"The file operation on {path} failed: {reason}")

    async def read_file(self, path: str) -> bytes:
        return await self._file_op("read", path)

    async def write_file(self, path: str, data: bytes) -> None:
        await self._file_op("write", path, data)

    async def delete(self, path: str) -> None:
        if self._absolute(path) == WORKSPACE:
            raise BackendError("Refusing to delete the workspace root.")
        await self._file_op("delete", path)

    async def rename(self, src: str, dst: str) -> None:
        await self._file_op("rename", src, dst=self._absolute(dst))

    async def stat(self, path: str) -> FileStat:
        try:
            mode, size, mtime = json.loads(await self._file_op("stat", path))
        except ValueError:
            raise BackendError(f"Could not read the status of {path}.") from None
        return FileStat(path, kind_of_mode(int(mode)), int(size), float(mtime), int(mode))

    async def list_dir(self, path: str) -> list[DirEntry]:
        entries = [
            DirEntry(str(name), str(kind), int(size))
            for name, kind, size in json.loads(await self._file_op("list", path))
        ]
        return sorted(entries, key=lambda e: (e.kind != "dir", e.name.lower()))

    # -- description --

    @property
    def disk_limit_kind(self) -> str:
        """Which disk limit is in force: `storage-opt`, `loop` or `watch` (see the module doc)."""
        if self._storage_opt:
            return "storage-opt"
        return "loop" if self._volumes else "watch"

    def describe(self) -> BackendDescription:
        options = self.options
        return BackendDescription(
            kind=self.kind,
            workspace=WORKSPACE,
            image=self.image,
            image_id=self._image_id,
            container=self._container,
            limits=options.limits.as_dict(),
            extra={
                "source": str(self.source),
                "network": options.network,
                "user": f"{self._user_name or '?'} (uid {self.uid})",
                "ca_bundle": str(options.ca_bundle) if options.ca_bundle else None,
                "ports": {str(k): v for k, v in options.ports.items()},
                "disk_limit": self.disk_limit_kind,
            },
        )


def _ignore_result(future: asyncio.Future[Any]) -> None:
    """A background warm-up's failure shows up again, clearly, on first real use."""
    if not future.cancelled():
        future.exception()
