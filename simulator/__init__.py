"""RepoSim's engine: the session gateway, trajectories, the agent, workflows and analysis.

Nothing here imports Textual; the UI in `widgets` is optional.
"""

from __future__ import annotations

from functools import cache


@cache
def _version() -> str:
    # importlib.metadata costs ~40 ms of imports (email, zipfile, csv): `reposim open` pays it
    # only when a trajectory header or an export asks for the version, not at every start.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reposim")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0+source"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")
