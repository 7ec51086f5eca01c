"""Trajectories that grow on disk the way a batch's sessions write them (the real writer)."""

from __future__ import annotations

from pathlib import Path

from simulator.events import Actor, Event
from simulator.trajectory import RepoInfo, TrajectoryHeader, TrajectoryWriter


class GrowingRun:
    """One session's trajectory, written step by step."""

    def __init__(self, folder: Path, key: str, repo: str = "/src/calc") -> None:
        self.path = folder / f"{key}.jsonl"
        header = TrajectoryHeader.new(key, repo=RepoInfo(source=repo))
        self.writer = TrajectoryWriter(self.path, header)
        self.seq = 0

    def event(self, kind: str, payload: dict[str, object], cause: int | None = None) -> int:
        self.seq += 1
        self.writer.write(Event(self.seq, self.seq * 0.5, Actor.AGENT, kind, payload, cause))  # type: ignore[arg-type]
        return self.seq

    def command(self, command: str, code: int = 0) -> None:
        action = self.event("exec", {"command": command})
        self.event(
            "exec.result",
            {"exit_code": code, "output": f"{command}\n", "duration": 0.01},
            cause=action,
        )

    def model_turn(self, cost: float | None) -> None:
        self.event("llm.response", {"content": "thinking", "cost": cost})

    def tests(self, passed: int, failed: int) -> None:
        action = self.event("test.run", {"command": "python -m pytest"})
        self.event(
            "test.result",
            {
                "command": "python -m pytest",
                "exit_code": 1 if failed else 0,
                "duration": 0.2,
                "structured": True,
                "timed_out": False,
                "counts": {"passed": passed, "failed": failed, "error": 0, "skipped": 0},
                "tests": [],
                "output": "",
            },
            cause=action,
        )

    def finish(self, summary: str) -> None:
        self.event("agent.finish", {"summary": summary, "reason": "finished"})
        self.event("session.end", {"reason": "closed"})
        self.writer.close()
