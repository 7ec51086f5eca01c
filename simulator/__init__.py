"""RepoSim's engine: the session gateway, trajectories, the agent, workflows and analysis.

Nothing here imports Textual; the UI in `widgets` is optional.
"""

from __future__ import annotations

# A plain string, also the package's version (pyproject.toml reads it): importlib.metadata
# would cost every `reposim open` ~40 ms of imports (email, zipfile, csv) for the trajectory
# header.
from simulator._version import __version__

__all__ = ["__version__"]
