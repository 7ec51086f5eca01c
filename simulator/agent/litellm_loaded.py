"""Importing this module imports litellm as RepoSim does (quietly, with the cost map the package
ships rather than a download): for a process that preloads it, such as a batch's forkserver."""

from simulator.agent.models import import_litellm

litellm = import_litellm()
