"""RepoSim's engine: the session gateway, trajectories, the agent, workflows and analysis.

Nothing here imports Textual; the UI in `widgets` is optional.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("reposim")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
