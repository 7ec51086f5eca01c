"""A session's private checkpoint repository: where it lives and the script that creates it.

Apart from the session so that a warm container pool (simulator/backend_factory.py) can create it
ahead of the session without importing the gateway.
"""

from __future__ import annotations

import functools
import re

from backends.shell import quote

HELPER_DIR = ".reposim"
"""The workspace folder for RepoSim's own helper files (Session.write_helper)."""

RUNTIME_DIRS = (f"/{HELPER_DIR}/", "/.reposim-perf/")
"""RepoSim's own folders in a workspace (harness runtime, tracer, coverage copy, mutants, the
perf tools): never the person's or the agent's work, so never a change, in a checkpoint or in
the exit patch (the checkpoint repository ignores them)."""


def checkpoint_init_script(workspace: str, private_dir: str) -> str:
    """The shell script that creates a session's private checkpoint repository (see
    Session._git_init_script); it does nothing when the repository is there already, so a warm
    container pool can run it ahead of the session (simulator/backend_factory.py)."""
    gitdir = quote(f"{private_dir}/checkpoints.git")
    exclude = quote("\n".join(RUNTIME_DIRS) + "\n")
    user_git = f"{workspace}/.git"
    objects, index = quote(f"{user_git}/objects"), quote(f"{user_git}/index")
    return (
        f"[ -f {gitdir}/HEAD ] || {{ "
        f"git init -q --bare {gitdir} && git --git-dir={gitdir} config core.bare false && "
        f"git --git-dir={gitdir} config core.checkStat minimal && "
        f"git --git-dir={gitdir} config core.trustctime false && "
        f"mkdir -p {gitdir}/info && printf {exclude} >> {gitdir}/info/exclude && "
        f"if [ -d {objects} ] && [ -f {index} ]; then "
        f"echo {objects} > {gitdir}/objects/info/alternates && cp {index} {gitdir}/index; fi; }}"
    )


# The line before the start's tree in a warm pool's preparation (checkpoint_prepare_script).
_START_TREE = "reposim-start-tree"


def checkpoint_git(workspace: str, private_dir: str, args: str) -> str:
    """A git command on a session's private checkpoint repository, its work tree the workspace."""
    gitdir = f"{private_dir}/checkpoints.git"
    return (
        f"git -C {quote(workspace)} --git-dir={quote(gitdir)} --work-tree={quote(workspace)} "
        f"-c core.autocrlf=false -c gc.auto=0 -c core.quotepath=false {args}"
    )


def checkpoint_prepare_script(workspace: str, private_dir: str) -> str:
    """What a warm container pool runs ahead of a session, once its container is reset and
    proven clean: the checkpoint repository, and the start's checkpoint of the workspace as the
    next session will find it (nothing runs in the container between the two). The session
    takes the tree from the output (`prepared_start_tree`) instead of a round trip of three git
    processes at its start."""
    git = functools.partial(checkpoint_git, workspace, private_dir)
    ref = quote("refs/reposim/start")
    return (
        f"{checkpoint_init_script(workspace, private_dir)} && {git('add -A .')} && "
        f'(__rst=$({git("write-tree")}) && {git("update-ref")} {ref} "$__rst" && '
        f'echo "{_START_TREE} $__rst")'
    )


def prepared_start_tree(prepared: str) -> str | None:
    """The start's tree a pool's preparation printed (checkpoint_prepare_script), if it did."""
    for line in reversed(prepared.splitlines()):
        marker, _, tree = line.partition(" ")
        if marker == _START_TREE and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", tree):
            return tree
    return None
