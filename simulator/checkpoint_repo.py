"""A session's private checkpoint repository: where it lives and the script that creates it.

Apart from the session so that a warm container pool (simulator/backend_factory.py) can create it
ahead of the session without importing the gateway.
"""

from __future__ import annotations

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
