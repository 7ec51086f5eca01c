"""RepoSim's version: read by the build (pyproject.toml, tool.hatch.version) and by the engine."""

__version__ = "0.1.0"
