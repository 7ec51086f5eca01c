"""Synthetic trajectories for the benchmarks, written event by event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulator.events import Actor, Event
from simulator.trajectory import TrajectoryHeader, TrajectoryWriter


class SyntheticTrajectory:
    """A trajectory whose events are numbered from 1 and 10 ms apart."""

    def __init__(self, path: Path, session: str) -> None:
        self.writer = TrajectoryWriter(path, TrajectoryHeader.new(session))
        self.seq = 0

    def add(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        actor: Actor = Actor.AGENT,
        cause: int | None = None,
    ) -> int:
        """Write the next event; its number."""
        self.seq += 1
        self.writer.write(Event(self.seq, self.seq * 0.01, actor, kind, payload, cause=cause))
        return self.seq

    def close(self) -> None:
        self.writer.close()
