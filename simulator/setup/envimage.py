"""Ready environments: a container that reached "ready", kept as a labelled image.

`save_environment` commits the session's container to `reposim/env/<name>:<commit>` with labels
(the test command, the verdict, the base image, the venv, when) and writes a Dockerfile beside
the cache that rebuilds the same environment from the base image with the commands that worked.
`list_environments` and `prune_environments` keep disk use under a bound: the oldest images go
first. `resolve_environment(NAME)` gives the image and test command `--env NAME` starts from.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import posixpath
import re
import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.base import BackendError
from backends.docker_engine import commit_clean, connect
from simulator.session import Session
from simulator.setup.ladder import (
    EXEC_TMP_PLUGIN,
    EXEC_TMP_SOURCE,
    LEAVE_OUT_RUNNER,
    LEAVE_OUT_SOURCE,
    NO_DEADLINE_PLUGIN,
    NO_DEADLINE_SOURCE,
    TEST_FOLDER_PLUGIN,
    TEST_FOLDER_SOURCE,
    SetupResult,
    write_ignored_options,
    write_plugin,
)

REPOSITORY = "reposim/env"
LABEL_ENV = "reposim.env"
LABEL_NAME = "reposim.env.name"
LABEL_COMMIT = "reposim.env.commit"
LABEL_TEST = "reposim.env.test_command"
LABEL_VERDICT = "reposim.env.verdict"
LABEL_BASE = "reposim.env.base"
LABEL_VENV = "reposim.env.venv"
LABEL_CREATED = "reposim.env.created"
DEFAULT_BUDGET = 20 * 1024**3  # bytes of env images kept by `reposim env prune`


def environment_budget() -> int:
    """Bytes of env images to keep: $REPOSIM_ENV_BUDGET (like 20g), else 20 GiB."""
    text = os.environ.get("REPOSIM_ENV_BUDGET", "").strip().lower()
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    try:
        if text[-1:] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(text) if text else DEFAULT_BUDGET
    except ValueError:
        return DEFAULT_BUDGET


def env_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reposim" / "envs"


@dataclass(frozen=True)
class SavedEnvironment:
    tag: str
    dockerfile: Path
    image_id: str


@dataclass(frozen=True)
class Environment:
    name: str
    tag: str
    commit: str
    test_command: str | None
    verdict: str | None
    base: str | None
    created: float
    size: int

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def env_name(session: Session, name: str | None = None) -> str:
    raw = name or Path(session.source).name
    return re.sub(r"[^a-z0-9._-]+", "-", raw.lower()).strip("-._") or "repo"


def _commit_of(session: Session) -> str:
    commit = str((session.repo or {}).get("commit") or "")
    return commit[:12] if commit else "latest"


CA_ARG = "REPOSIM_EXTRA_CA"
CA_FILE = "/etc/ssl/certs/reposim-ca-bundle.crt"
_CERT = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)


def extra_ca_certificates(base: str) -> str:
    """The certificates of this machine's CA bundle (the one sessions get) that the base
    image's own bundle lacks, as PEM: what a `docker build` here needs as its CA build
    argument. A whole bundle is too long for one command-line argument (128 KiB); the extra
    certificates (a TLS-inspecting proxy's) are a few KiB."""
    from backends.docker.options import host_ca_bundle

    host = host_ca_bundle()
    if host is None:
        return ""
    client = connect()
    try:
        raw = client.containers.run(
            base, ["cat", "/etc/ssl/certs/ca-certificates.crt"], remove=True, network_disabled=True
        )
    finally:
        client.close()
    image_text = bytes(raw).decode("utf-8", "replace")

    def body(cert: str) -> str:
        return "".join(cert.split())

    known = {body(c) for c in _CERT.findall(image_text)}
    extra = [c for c in _CERT.findall(host.read_text(errors="replace")) if body(c) not in known]
    return "\n".join(extra)


BUILD_CONSTRAINTS = "/tmp/reposim-build-constraints.txt"


def dockerfile_text(result: SetupResult, base: str, commit: str) -> str:
    """A Dockerfile that rebuilds the environment: the base, the Debian packages setup
    installed, the workspace, the venv with the exact versions the ready environment had (its
    lock), the project itself, the test command as the default command.

    The CA passthrough sessions get is a build argument: the certificates this machine trusts
    that the image lacks (`extra_ca_certificates`, saved beside the Dockerfile as
    extra-ca.pem), appended to the image's bundle for the build and the environment."""
    resolution = result.resolution or {}
    when = (
        f"as of the commit's date ({resolution.get('date')})"
        if resolution.get("mode") == "as-of-commit"
        else "from today's index"
        + (f" ({resolution['reason']})" if resolution.get("reason") else "")
    )
    lines = [
        f"# Generated by reposim setup: {result.verdict.line()}",
        f"# Workspace at commit {commit}. Dependencies resolved {when}.",
        "# Build from the repository root:",
        f'#   docker build --build-arg {CA_ARG}="$(cat extra-ca.pem)" -f THIS_FILE -t NAME .',
        "# (extra-ca.pem, beside this file: the CA certificates this machine trusts that the",
        "# base image lacks; leave the argument out where the image's bundle is enough)",
        f"FROM {base}",
        f'ARG {CA_ARG}=""',
        "USER root",
        f"RUN cp /etc/ssl/certs/ca-certificates.crt {CA_FILE} && "
        f'if [ -n "${CA_ARG}" ]; then printf \'%s\\n\' "${CA_ARG}" >> {CA_FILE}; fi',
        f"ENV SSL_CERT_FILE={CA_FILE} PIP_CERT={CA_FILE} REQUESTS_CA_BUNDLE={CA_FILE}",
    ]
    if result.system_packages:
        lines.append(
            "RUN apt-get update && apt-get install -y --no-install-recommends "
            + " ".join(result.system_packages)
            + " && rm -rf /var/lib/apt/lists/*"
        )
    home = result.venv.rsplit("/.reposim/", 1)[0] if result.venv else ""
    if home.startswith("/") and home != "/":
        # The session's user (uid 1000) had this home; the image may have no such user.
        lines += [f"RUN mkdir -p {home} && chown 1000:1000 {home}", f"ENV HOME={home}"]
    lines += [
        "USER 1000:1000",
        "COPY --chown=1000:1000 . /workspace",
        "WORKDIR /workspace",
    ]
    python = f"{result.venv}/bin/python" if result.venv else "python3"
    if result.installer == "uv":
        lines.append("RUN python3 -m pip install --user --break-system-packages -q uv")
    if result.venv:
        # The interpreter the ladder made its venv from (Debian's pypy3, installed above, for a
        # project that needs a Python older than the image's).
        made_from = result.interpreter
        lines.append(
            f"RUN ~/.local/bin/uv venv --seed -q {result.venv} --python {made_from} "
            f"|| {made_from} -m venv {result.venv}"
            if result.installer == "uv"
            else f"RUN {made_from} -m venv {result.venv}"
        )
        lines.append(f"ENV VIRTUAL_ENV={result.venv} PATH={result.venv}/bin:$PATH")
    install = (
        f"~/.local/bin/uv pip install --python {python}"
        if result.installer == "uv"
        else f"{python} -m pip install -q"
    )
    if result.build_constraints:
        # Today's build tools could not build the project: the era's that did (era.py).
        pins = " ".join(shlex.quote(p) for p in result.build_constraints)
        lines.append(f"RUN printf '%s\\n' {pins} > {BUILD_CONSTRAINTS}")
        flag = "--build-constraints" if result.installer == "uv" else "--build-constraint"
        install += f" {flag} {BUILD_CONSTRAINTS}"
    if result.lock:
        # The exact versions of the ready environment, then the project itself without
        # resolving again: a rebuild is the same environment.
        pins = " ".join(shlex.quote(p) for p in result.lock)
        lines.append(f"RUN {install} -- {pins}")
        project = _project_install(result)
        if project:
            lines.append(f"RUN {install} --no-deps {project}")
    else:
        lines += [f"RUN {command}" for command in result.commands]
    if result.ignored_options:
        # The options of the project's pytest config no plugin here provides (`--pep8`): the
        # module setup wrote to accept and ignore them, which the test command loads (-p).
        lines.append(f"RUN {write_ignored_options(python, result.ignored_options)}")
    if result.no_deadline:
        # hypothesis's deadline off (setup saw DeadlineExceeded at load): the same module.
        lines.append(f"RUN {write_plugin(python, NO_DEADLINE_PLUGIN, NO_DEADLINE_SOURCE)}")
    if result.exec_tmp:
        # Tests that load shared objects they build in a temporary folder: the same module.
        lines.append(f"RUN {write_plugin(python, EXEC_TMP_PLUGIN, EXEC_TMP_SOURCE)}")
    if result.test_command and f" -p {TEST_FOLDER_PLUGIN} " in f"{result.test_command} ":
        # Tests that open files relative to their own folder: the same module.
        lines.append(f"RUN {write_plugin(python, TEST_FOLDER_PLUGIN, TEST_FOLDER_SOURCE)}")
    if result.test_command and f" -m {LEAVE_OUT_RUNNER} " in result.test_command:
        # The project's test script with test modules that stop it left out: the same runner.
        lines.append(f"RUN {write_plugin(python, LEAVE_OUT_RUNNER, LEAVE_OUT_SOURCE)}")
    if result.test_command:
        lines.append(f"CMD {json.dumps(['bash', '-lc', result.test_command])}")
    return "\n".join(lines) + "\n"


def _project_install(result: SetupResult) -> str | None:
    """The project's own install arguments as setup ran them (`-e .[test]`)."""
    for item in result.installed:
        if item.startswith(("-e .", ".")) and not item.startswith("-e .reposim"):
            return " ".join(shlex.quote(w) for w in shlex.split(item))
    return None


async def save_environment(
    session: Session, result: SetupResult, *, name: str | None = None
) -> SavedEnvironment:
    description = session.description
    container = description.container if description.kind == "docker" else None
    if not container:
        raise BackendError("Only a container session can be saved as an environment image.")
    base = description.image or ""
    commit = _commit_of(session)
    envname = env_name(session, name)
    tag = f"{REPOSITORY}/{envname}:{commit}"
    labels = {
        LABEL_ENV: "1",
        LABEL_NAME: envname,
        LABEL_COMMIT: commit,
        LABEL_TEST: result.test_command or "",
        LABEL_VERDICT: str(result.verdict.tier),
        LABEL_BASE: base,
        LABEL_VENV: result.venv or "",
        LABEL_CREATED: str(int(time.time())),
    }
    env_lines = []
    if result.venv:
        env_lines = [
            f"VIRTUAL_ENV={result.venv}",
            f"PATH={result.venv}/bin:/usr/local/bin:/usr/bin:/bin",
        ]

    def commit_image() -> str:
        client = connect()
        try:
            # Without the session container's owner labels (issue 25): a container started
            # from the saved image by hand must not look like a RepoSim session's.
            mounted = _session_volumes(client, container)
            helper = _volumes_in_a_layer(client, container, mounted) if mounted else None
            try:
                return commit_clean(
                    client,
                    helper[0] if helper is not None else container,
                    repository=f"{REPOSITORY}/{envname}",
                    tag=commit,
                    labels=labels,
                    env=env_lines,
                    changes={"WorkingDir": "/workspace"},
                )
            finally:
                if helper is not None:
                    _remove_helper(client, *helper)
        finally:
            client.close()

    image_id = await asyncio.to_thread(commit_image)
    directory = env_dir() / envname
    directory.mkdir(parents=True, exist_ok=True)
    dockerfile = directory / f"Dockerfile.{commit}"
    dockerfile.write_text(dockerfile_text(result, base, commit))
    extra = await asyncio.to_thread(extra_ca_certificates, base)
    if extra:
        (directory / "extra-ca.pem").write_text(extra + "\n")
    (directory / f"setup.{commit}.json").write_text(json.dumps(result.to_dict(), indent=2))
    return SavedEnvironment(tag, dockerfile, image_id)


WORKSPACE = "/workspace"


def _session_volumes(client: Any, container: str) -> list[str]:
    """Where the session's volumes are mounted (the size-limited loop disk's folders: the
    workspace, the home directory, /var/tmp), which `docker commit` leaves out: the image
    would have them empty."""
    mounts = client.api.inspect_container(container).get("Mounts") or []
    return [str(m["Destination"]) for m in mounts if m.get("Type") == "volume"]


def _volumes_in_a_layer(client: Any, container: str, mounted: list[str]) -> tuple[str, str]:
    """(a stopped container of the session's committed image with the session's volumes
    (/workspace, the home directory, /var/tmp) copied into its layer, that image): what setup
    made there (a version file setup.py wrote, extensions an editable install built in place,
    a C project's build tree, a tool installed in the home directory) goes into the saved
    image. A session started from it finds them in its new volumes (Docker fills an empty
    volume from the image's folder), the workspace under the checkout's files."""
    api = client.api
    # Never paused (see commit_clean): an exec starting during the pause stays frozen.
    committed = str(api.commit(container, pause=False)["Id"])
    helper = ""
    try:
        helper = str(api.create_container(committed, command=["true"], network_disabled=True)["Id"])
        for path in mounted:
            stream, _ = api.get_archive(container, path)
            with tempfile.TemporaryFile() as spool:
                for chunk in stream:
                    spool.write(chunk)
                spool.seek(0)
                # The archive's top folder is the folder's name: unpacked in its parent.
                api.put_archive(helper, posixpath.dirname(path), spool)
    except BaseException:
        _remove_helper(client, helper, committed)
        raise
    return helper, committed


def _remove_helper(client: Any, helper: str, image: str) -> None:
    """The helper container, then its image (the saved image shares the layers)."""
    with contextlib.suppress(Exception):
        if helper:
            client.api.remove_container(helper, force=True)
    with contextlib.suppress(Exception):
        client.api.remove_image(image, noprune=False)


def list_environments() -> list[Environment]:
    client = connect()
    try:
        images = client.api.images(filters={"label": f"{LABEL_ENV}=1"})
    finally:
        client.close()
    out = []
    for image in images:
        labels = image.get("Labels") or {}
        for tag in image.get("RepoTags") or []:
            out.append(
                Environment(
                    name=labels.get(LABEL_NAME, ""),
                    tag=tag,
                    commit=labels.get(LABEL_COMMIT, ""),
                    test_command=labels.get(LABEL_TEST) or None,
                    verdict=labels.get(LABEL_VERDICT),
                    base=labels.get(LABEL_BASE),
                    created=float(labels.get(LABEL_CREATED) or image.get("Created") or 0),
                    size=int(image.get("Size") or 0),
                )
            )
    return sorted(out, key=lambda e: e.created, reverse=True)


def resolve_environment(name: str) -> Environment:
    """`--env NAME` or `--env NAME:COMMIT`: the newest matching ready image."""
    wanted, _, commit = name.partition(":")
    for environment in list_environments():
        if environment.name == wanted and (not commit or environment.commit.startswith(commit)):
            return environment
    known = sorted({e.name for e in list_environments()})
    hint = f" (known: {', '.join(known)})" if known else " (run `reposim setup PATH --save-env`)"
    raise BackendError(f"No ready environment named {name!r}{hint}.")


def prune_environments(
    *, budget: int = DEFAULT_BUDGET, keep_last: int = 1, name: str | None = None
) -> list[Environment]:
    """Remove the oldest env images until their total size is within `budget` bytes; the newest
    image of every name is kept (`keep_last`) unless the budget is 0. `name` limits it to one
    environment's images. Returns what was removed."""
    environments = [e for e in list_environments() if name is None or e.name == name]
    total = sum(e.size for e in environments)
    newest: dict[str, int] = {}
    removed: list[Environment] = []
    protected: set[str] = set()
    for environment in environments:  # newest first
        newest[environment.name] = newest.get(environment.name, 0) + 1
        if budget > 0 and newest[environment.name] <= keep_last:
            protected.add(environment.tag)
    client = connect()
    try:
        for environment in reversed(environments):  # oldest first
            if total <= budget:
                break
            if environment.tag in protected:
                continue
            client.images.remove(environment.tag)
            total -= environment.size
            removed.append(environment)
    finally:
        client.close()
    return removed
