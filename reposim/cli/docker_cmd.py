"""`reposim gc` and `reposim image bootstrap`: housekeeping for the docker backend."""

from __future__ import annotations

import click

from backends.base import BackendError
from reposim.cli.common import CliError


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
def gc_command(dry_run: bool) -> None:
    """Remove containers and volumes a crashed RepoSim session left behind.

    Only objects labelled by RepoSim whose creating process is gone are removed; live sessions,
    sessions of other hosts and anything RepoSim did not create are left alone.
    """
    from backends.docker_engine import collect_garbage, connect

    try:
        client = connect()
    except BackendError as exc:
        raise CliError(str(exc)) from None
    try:
        found = collect_garbage(client, dry_run=dry_run)
    finally:
        client.close()
    removed = 0
    for item in found:
        if item.removed:
            removed += 1
            click.echo(f"removed {item.kind} {item.name} (owner pid {item.owner_pid} is gone)")
        elif item.orphaned:
            verb = "would remove" if dry_run else "could not remove"
            click.echo(f"{verb} {item.kind} {item.name} (owner pid {item.owner_pid} is gone)")
    kept = sum(1 for item in found if not item.orphaned)
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
