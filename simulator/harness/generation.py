"""What the harness workflow (workflow.py) and its model generator (model.py) share: the
workflow's options, keeping the reference file where a harness loads it, and settling a
problem's curation state from its validation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.agent.models import ModelClient
from simulator.dataset.schema import CurationState, Problem, Validation
from simulator.events import Actor
from simulator.harness.env import PythonEnv
from simulator.harness.format import reference_path
from simulator.harness.target import Target
from simulator.harness.validate import Thresholds
from simulator.session import Session


@dataclass
class HarnessOptions:
    generator: str = "traced"
    env: PythonEnv = field(default_factory=PythonEnv)
    thresholds: Thresholds = field(default_factory=Thresholds)
    rounds: int = 3  # generate-execute rounds of the model generator
    max_calls: int = 40  # recorded calls kept per target (traced)
    test_args: str = ""  # extra arguments for the repository's test run (traced)
    client: ModelClient | None = None  # the model generator's client
    # candidate calls derive.py tries per traced harness below the coverage threshold (0: none)
    derive_runs: int = 300

    def params(self) -> dict[str, Any]:
        return {
            "generator": self.generator,
            **self.thresholds.settings(),
            "rounds": self.rounds,
            "model": self.client.model if self.client else None,
        }


async def snapshot_reference(session: Session, target: Target) -> None:
    """Keep the reference file where load_reference() finds it."""
    text = (await session.read_bytes(target.path)).decode("utf-8")
    await session.write(reference_path(target), text, actor=Actor.SYSTEM)


def settle(problem: Problem, validation: Validation) -> None:
    problem.validation = validation
    if validation.verdict == "valid":
        problem.curation.mark(CurationState.VALID)
    else:
        problem.curation.mark(CurationState.GENERATED, reason="; ".join(validation.reasons))
