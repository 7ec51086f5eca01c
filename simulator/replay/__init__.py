"""Replay: open any trajectory lazily, re-execute it with observation checks, fork and resume it.

- `open_trajectory(path)` (from simulator.trajectory): a RepoSim trajectory indexed without
  parsing it, or another tool's trajectory converted in memory (see `simulator.interop`);
- `reexecute(path)`: run the recorded actions again from the recorded start and compare;
- `fork(path, step)` / `resume(path)`: a live `Session` continuing from a step / the end;
- `workspace_at(source, index)`: the files as the trajectory shows them at a step.
"""

from simulator.replay.fork import Fork, fork, last_step, resume
from simulator.replay.normalise import DEFAULT_RULES, Normaliser, Rule
from simulator.replay.reexec import ReplayReport, StartError, StepResult, reexecute
from simulator.replay.workspace import workspace_at
from simulator.trajectory import (
    EventSource,
    MemoryTrajectory,
    TrajectoryIndex,
    open_trajectory,
)

__all__ = [
    "DEFAULT_RULES",
    "EventSource",
    "Fork",
    "MemoryTrajectory",
    "Normaliser",
    "ReplayReport",
    "Rule",
    "StartError",
    "StepResult",
    "TrajectoryIndex",
    "fork",
    "last_step",
    "open_trajectory",
    "reexecute",
    "resume",
    "workspace_at",
]
