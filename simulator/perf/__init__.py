"""The perf workflow: time an API or a command at two revisions, and mine history for speed-ups.

Engine only (no Textual); the CLI (`reposim perf`), the UI's "Compare performance" entry and the
batch layer all call `compare` / `mine` and follow them through the sessions' workflow events.
"""

from simulator.perf.compare import CompareRequest, CompareResult, MeasureSettings, compare
from simulator.perf.stats import SideStats, Verdict

__all__ = [
    "CompareRequest",
    "CompareResult",
    "MeasureSettings",
    "SideStats",
    "Verdict",
    "compare",
]
