"""`reposim setup`: make a repository's tests run, and say exactly why when they do not.

detect (what the project is) -> imports (what it imports) -> ladder (the rungs, in a Session)
-> oracle (the tiered verdict and the failure taxonomy) -> repair (error-driven fixes) -> llm
(an optional model that proposes commands) -> envimage (a ready container as an image).

The names below load on first use: `reposim open` imports `simulator.setup.detect` to pick F5's
test command, and loading the whole ladder with it cost ~40 ms of its cold start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.setup.ladder import SetupOptions, SetupResult, run_setup
    from simulator.setup.oracle import Category, Tier, Verdict

_HOMES = {
    "SetupOptions": "simulator.setup.ladder",
    "SetupResult": "simulator.setup.ladder",
    "run_setup": "simulator.setup.ladder",
    "Category": "simulator.setup.oracle",
    "Tier": "simulator.setup.oracle",
    "Verdict": "simulator.setup.oracle",
}

__all__ = ["Category", "SetupOptions", "SetupResult", "Tier", "Verdict", "run_setup"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'simulator.setup' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
