"""What an episode is about: a repository, an instruction, and the tests that decide the reward."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from simulator.wire import json_lines


class RewardMode(StrEnum):
    PASS_RATIO = "pass_ratio"  # the share of the task's tests that pass, in [0, 1]
    PASS_FAIL = "pass_fail"  # 1.0 when every one of the task's tests passes, else 0.0


class TaskError(ValueError):
    """A task that cannot be run; the message is one clear sentence."""


@dataclass(frozen=True)
class GymTask:
    """One episode's task.

    `tests` are pytest selectors (ids or paths) that decide the reward; empty means the whole
    suite. `test_command` replaces pytest for repositories that test another way (the reward is
    then pass/fail by exit code). `image` starts the Docker backend from a ready environment
    (`reposim setup` makes them); without it the backend's default image is used.
    """

    repo: str
    instruction: str
    tests: tuple[str, ...] = ()
    test_command: str | None = None
    reward: RewardMode = RewardMode.PASS_RATIO
    backend: str = "local"
    image: str | None = None
    max_steps: int = 50
    id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.instruction.strip():
            raise TaskError("a task needs an instruction.")
        if self.max_steps < 1:
            raise TaskError("max_steps must be at least 1.")
        if not Path(self.repo).expanduser().is_dir():
            raise TaskError(f"the task's repository {self.repo} is not a directory.")

    @property
    def name(self) -> str:
        return self.id or Path(self.repo).name

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tests"] = list(self.tests)
        data["reward"] = str(self.reward)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GymTask:
        try:
            return cls(
                repo=str(data["repo"]),
                instruction=str(data["instruction"]),
                tests=tuple(str(t) for t in data.get("tests") or ()),
                test_command=data.get("test_command"),
                reward=RewardMode(data.get("reward", RewardMode.PASS_RATIO)),
                backend=str(data.get("backend", "local")),
                image=data.get("image"),
                max_steps=int(data.get("max_steps", 50)),
                id=str(data.get("id", "")),
                extra=dict(data.get("extra") or {}),
            )
        except KeyError as exc:
            raise TaskError(f"a task record has no {exc.args[0]!r} field.") from None
        except ValueError as exc:
            raise TaskError(f"a task record is not valid: {exc}") from None

    @classmethod
    def failing_tests(
        cls, repo: str | Path, tests: list[str] | tuple[str, ...], **options: Any
    ) -> GymTask:
        """A repository and its failing tests: make them pass without breaking the others."""
        listed = ", ".join(tests) if tests else "the test suite"
        return cls(
            repo=str(repo),
            instruction=(
                f"These tests fail: {listed}. Change the code (not the tests) so that they "
                "pass, then call finish."
            ),
            tests=tuple(tests),
            **options,
        )


def load_tasks(path: Path) -> list[GymTask]:
    """Tasks from a JSONL file, one GymTask record a line."""
    tasks = []

    def not_json(number: int, message: str) -> TaskError:
        return TaskError(f"{path}:{number} is not JSON ({message}).")

    for number, data in json_lines(path.read_text(encoding="utf-8").splitlines(), not_json):
        if not isinstance(data, dict):
            raise TaskError(f"{path}:{number} is not a task object.")
        tasks.append(GymTask.from_dict(data))
    return tasks
