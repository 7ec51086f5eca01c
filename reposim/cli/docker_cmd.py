"""`reposim gc` and `reposim image bootstrap`: housekeeping for the docker backend."""

from __future__ import annotations

import click

from backends.base import BackendError
from reposim.cli.common import CliError

GC_CALL_TIMEOUT = 15.0
"""Seconds gc waits for the engine's answer to one call (inspect, remove)."""


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
def gc_command(dry_run: bool) -> None:
    """Remove what crashed RepoSim sessions left behind: scratch workspaces and private dirs
    of local sessions, containers of Docker ones, the output spools (`*.partial` beside a
    trajectory) of commands that were printing when their process was killed, the unfinished
    blobs (`<digest>.<token>.part` / `.tmp` in `<trajectory>.blobs/`) of a recording killed
    while it wrote one (only files named with the token of a writer whose process is gone);
    and the tags that vouch for trajectories recorded here
    ($XDG_STATE_HOME/reposim/trajectory-chains) once their file is gone: deleted, or
    overwritten by another recording, and not in the default trajectory folder either (a moved
    or copied file then re-executes as a foreign one).

    A container is removed only when RepoSim's private state (a record written when the
    session created it, under $XDG_STATE_HOME/reposim/containers) names it and the process
    that created it is gone. Labels are never trusted: a container started by hand from an
    image that carries RepoSim labels is left alone, as are live sessions and other hosts'.
    --dry-run lists exactly what a real run would remove. Without a Docker engine only the
    local part runs.
    """
    from backends.docker_engine import collect_garbage, connect
    from backends.local import collect_local_garbage
    from backends.output import collect_spools
    from simulator.paths import trajectories_dir, workspaces_dir
    from simulator.provenance import collect_chains
    from simulator.trajectory import collect_unfinished_blobs

    found: list[tuple[str, str, object, bool, bool, str]] = [
        (item.kind, str(item.path), item.owner_pid, item.orphaned, item.removed, "")
        for item in collect_local_garbage(workspaces_dir(), dry_run=dry_run)
    ]
    found += [
        ("output spool", str(item.path), item.owner_pid, True, item.removed, "")
        for item in collect_spools(dry_run=dry_run)
    ]
    found += [
        ("unfinished blob", str(item.path), item.owner_pid, True, item.removed, "")
        for item in collect_unfinished_blobs(dry_run=dry_run)
    ]
    try:
        # Per engine call: a container the engine does not answer about costs this, not 60 s.
        client = connect(timeout=GC_CALL_TIMEOUT)
    except BackendError as exc:
        click.echo(f"reposim gc: containers not checked: {exc}", err=True)
    else:
        try:
            found += [
                (item.kind, item.name, item.owner_pid, item.orphaned, item.removed, item.problem)
                for item in collect_garbage(client, dry_run=dry_run)
            ]
        finally:
            client.close()
    removed = 0
    for chain in collect_chains(search=trajectories_dir(), dry_run=dry_run):
        verb = "removed" if chain.removed else "would remove" if dry_run else "could not remove"
        removed += chain.removed
        click.echo(
            f"{verb} trajectory chain {chain.path} (its trajectory {chain.trajectory} is gone)"
        )
    for kind, name, owner_pid, orphaned, was_removed, problem in found:
        if problem:
            owner = f"owner pid {owner_pid} is gone" if orphaned else f"owner pid {owner_pid}"
            click.echo(f"not done: {kind} {name} ({owner}): {problem}")
        elif was_removed:
            removed += 1
            click.echo(f"removed {kind} {name} (owner pid {owner_pid} is gone)")
        elif orphaned:
            verb = "would remove" if dry_run else "could not remove"
            click.echo(f"{verb} {kind} {name} (owner pid {owner_pid} is gone)")
    kept = sum(1 for item in found if not item[3])
    click.echo(f"reposim gc: removed {removed}, kept {kept} in use by live sessions.")


@click.group("image")
def image_group() -> None:
    """Container images for the docker backend."""


@image_group.command("bootstrap")
@click.option(
    "--tag", default="reposim/base:bookworm-2", show_default=True, help="The image tag to build."
)
@click.option("--suite", default="bookworm", show_default=True, help="The Debian release.")
@click.option("--mirror", help="A Debian mirror (default: the one this machine's apt uses).")
@click.option("--force", is_flag=True, help="Rebuild even if the tag already exists.")
def bootstrap_command(tag: str, suite: str, mirror: str | None, force: bool) -> None:
    """Build a minimal Debian image without any registry: Python, venv, pip, pytest, git, and
    for C and reading gcc, g++, make, cmake, less, vim-tiny and nano.

    Uses debootstrap and the machine's Debian mirror, then imports the result into the local
    Docker engine. Needs root and the debootstrap package; takes about three minutes.
    """
    from backends.images import bootstrap_image, image_exists

    try:
        if not force and image_exists(tag):
            click.echo(f"{tag} is already built (use --force to rebuild).")
            return
        bootstrap_image(tag, suite=suite, mirror=mirror, log=lambda line: click.echo(line))
    except BackendError as exc:
        raise CliError(str(exc)) from None


def register(group: click.Group) -> None:
    group.add_command(gc_command)
    group.add_command(image_group)
