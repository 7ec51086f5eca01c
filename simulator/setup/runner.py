"""One repository, start to end: open a session, run the ladder, the model, save the image.

`setup_repository(path, request)` is what `reposim setup PATH` and each batch task run; the UI
runs `run_setup` (and `llm.install`) inside the session it already has instead.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator import venvcache
from simulator.backend_factory import BackendOptions, make_backend
from simulator.session import Session, Subscriber
from simulator.setup.ladder import SetupOptions, SetupResult, import_roots, run_setup

# Compilers, make and cmake on top of the Python base: what C projects and sdists that build
# extensions need.
DEFAULT_IMAGE = os.environ.get("REPOSIM_SETUP_IMAGE", "reposim/base:bookworm-2")


@dataclass(frozen=True)
class SetupRequest:
    backend: str = "docker"
    image: str | None = None
    model: str | None = None
    model_rounds: int = 6
    api_base: str | None = None
    min_tests: int = 10
    repair_rounds: int = 5
    budget: float | None = 1200.0  # seconds for the ladder (SetupOptions.budget)
    trajectory_dir: str | None = None
    save_env: bool = False  # commit a ready container to reposim/env/<name>:<commit>
    env_name: str | None = None
    use_uv: bool = True
    keep_venv: bool = True  # local backend: leave a ready venv for later sessions (venvcache)
    cpus: float | None = None  # docker backend: the container's CPU limit (None: the default)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> SetupRequest:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in payload.items() if k in known})

    def to_payload(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class SetupOutcome:
    result: SetupResult
    trajectory: Path
    image: str | None = None  # the ready environment's image, when one was saved
    dockerfile: Path | None = None
    model_rounds: list[dict[str, Any]] = field(default_factory=list)
    venv: Path | None = None  # the ready venv kept for later local sessions (venvcache)

    def summary(self) -> dict[str, Any]:
        data = self.result.to_dict()
        data["trajectory"] = str(self.trajectory)
        data["image"] = self.image
        data["dockerfile"] = str(self.dockerfile) if self.dockerfile else None
        data["model_rounds"] = self.model_rounds
        data["kept_venv"] = str(self.venv) if self.venv else None
        return data


async def setup_repository(
    path: Path, request: SetupRequest, *, subscriber: Subscriber | None = None
) -> SetupOutcome:
    """`subscriber` receives every event of the session (workflow steps for progress)."""
    path = Path(path).expanduser().resolve()
    options = BackendOptions()
    if request.backend == "docker":
        options = BackendOptions(
            image=request.image or DEFAULT_IMAGE, network=True, cpus=request.cpus
        )
    backend = make_backend(request.backend, path, options=options)
    trajectory = None
    if request.trajectory_dir:
        directory = Path(request.trajectory_dir)
        directory.mkdir(parents=True, exist_ok=True)
        trajectory = directory / f"setup-{path.name}-{os.getpid()}.jsonl"
    # On this machine the venv goes where later sessions of the repository find it, not in
    # the session's private folder (which goes with the session); kept only if it gets ready.
    venv_dir = (
        venvcache.new_venv_dir(path) if request.backend == "local" and request.keep_venv else None
    )
    kept: Path | None = None
    session = await Session.open(path, backend=backend, trajectory_path=trajectory)
    if subscriber is not None:
        session.subscribe(subscriber)
    try:
        result = await run_setup(
            session,
            SetupOptions(
                repair_rounds=request.repair_rounds,
                budget=request.budget,
                min_tests=request.min_tests,
                use_uv=request.use_uv,
                venv_dir=str(venv_dir) if venv_dir is not None else None,
            ),
            params={"repo": str(path), "backend": request.backend, "image": options.image},
        )
        outcome = SetupOutcome(result, session.trajectory_path)
        if request.model and not result.verdict.ready:
            from simulator.setup.llm import install_with_model

            report = await install_with_model(
                session,
                result,
                model=request.model,
                api_base=request.api_base,
                rounds=request.model_rounds,
            )
            outcome.model_rounds = report.rounds
        if request.save_env and result.verdict.ready and request.backend == "docker":
            from simulator.setup.envimage import (
                environment_budget,
                prune_environments,
                save_environment,
            )

            saved = await save_environment(session, result, name=request.env_name)
            outcome.image, outcome.dockerfile = saved.tag, saved.dockerfile
            # Disk use stays bounded: past the budget the oldest env images go (never the
            # newest of a name).
            await asyncio.to_thread(prune_environments, budget=environment_budget())
        if venv_dir is not None and result.verdict.ready and result.venv == str(venv_dir):
            venvcache.record(
                path,
                venv_dir,
                test_command=result.verdict.test_command,
                import_roots=import_roots(result.project),
            )
            kept = outcome.venv = venv_dir
        return outcome
    finally:
        await session.close()
        if venv_dir is not None and kept is None:
            await asyncio.to_thread(venvcache.discard, venv_dir)
