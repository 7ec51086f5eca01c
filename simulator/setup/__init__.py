"""`reposim setup`: make a repository's tests run, and say exactly why when they do not.

detect (what the project is) -> imports (what it imports) -> ladder (the rungs, in a Session)
-> oracle (the tiered verdict and the failure taxonomy) -> repair (error-driven fixes) -> llm
(an optional model that proposes commands) -> envimage (a ready container as an image).
"""

from simulator.setup.ladder import SetupOptions, SetupResult, run_setup
from simulator.setup.oracle import Category, Tier, Verdict

__all__ = ["Category", "SetupOptions", "SetupResult", "Tier", "Verdict", "run_setup"]
