"""Fork and resume: a live session whose workspace is a recorded trajectory's state at a step.

The workspace is rebuilt by re-executing the recorded actions up to the step (commands included,
so the shell's working directory and exported variables come back too) in a new session whose
header names its parent: `{"file": ..., "step": N}`. The rebuilding actions are recorded in the
new trajectory, which therefore re-executes on its own from the same start; a `fork` checkpoint
and a note mark where the new work begins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from simulator.events import Actor
from simulator.replay.normalise import Normaliser
from simulator.replay.reexec import ReplayReport, StepResult, reexecute
from simulator.session import Session
from simulator.trajectory import TrajectoryError, open_trajectory


@dataclass
class Fork:
    session: Session
    report: ReplayReport
    """How the rebuild went: a difference means the state may not be exactly the recorded one."""
    step: int


def last_step(file: Path | str) -> int:
    source = open_trajectory(file)
    try:
        for index in range(len(source) - 1, -1, -1):
            try:
                return source.event(index).seq
            except TrajectoryError:
                continue
        return 0
    finally:
        source.close()


async def fork(
    file: Path | str,
    step: int,
    *,
    backend_kind: str = "local",
    trajectory_path: Path | None = None,
    repo: Path | None = None,
    current: bool = False,
    image: str | None = None,
    on_step: Callable[[StepResult], None] | None = None,
    on_notes: Callable[[list[str]], None] | None = None,
    resumed: bool = False,
    host_consent: bool = False,
) -> Fork:
    """A live session continuing `file` from the state after step `step`."""
    path = Path(file)
    if step < 0:
        raise TrajectoryError(f"Step {step} is not a step number (they start at 1).")
    last = last_step(path)
    if step > last:
        raise TrajectoryError(f"{path} has {last} steps; there is no step {step} to fork at.")
    parent = {"file": str(path.resolve()), "step": step}
    if resumed:
        parent["resumed"] = True
    if trajectory_path is None:
        from simulator.replay.reexec import _new_path

        trajectory_path = _new_path(path, "resume" if resumed else f"fork{step}")
    report, session = await reexecute(
        path,
        backend_kind=backend_kind,
        normaliser=Normaliser(),
        repo=repo,
        current=current,
        image=image,
        trajectory_path=trajectory_path,
        until=step,
        on_step=on_step,
        on_notes=on_notes,
        keep_open=True,
        parent=parent,
        host_consent=host_consent,
    )
    assert session is not None
    verb = "Resumed" if resumed else "Forked"
    session.note(
        f"{verb} from {path.name} at step {step}.",
        actor=Actor.SYSTEM,
        mark="resume" if resumed else "fork",
    )
    await session.checkpoint("resume" if resumed else "fork", actor=Actor.SYSTEM)
    return Fork(session=session, report=report, step=step)


async def resume(
    file: Path | str,
    *,
    backend_kind: str = "local",
    trajectory_path: Path | None = None,
    repo: Path | None = None,
    image: str | None = None,
    host_consent: bool = False,
) -> Session:
    """Continue a trajectory that crashed or was closed: a live session in a new trajectory whose
    parent is the old one, its workspace rebuilt from the old one's actions.

    The `reposim open --resume FILE` flag of the UI calls this."""
    result = await fork(
        file,
        last_step(file),
        backend_kind=backend_kind,
        trajectory_path=trajectory_path,
        repo=repo,
        image=image,
        resumed=True,
        host_consent=host_consent,
    )
    return result.session
