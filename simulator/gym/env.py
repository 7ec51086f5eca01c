"""A gymnasium.Env over a RepoSim session: reset opens a fresh workspace, step runs one tool.

    env = RepoSimEnv(GymTask.failing_tests("path/to/repo", ["tests/test_cart.py"]))
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(
        {"tool": "bash", "arguments": {"command": "pytest -x -q"}}
    )

Actions are the agent's tool calls (view, edit, create, search, bash, run_tests, finish), run by
the same ToolBox the agent uses, so an episode is recorded exactly like an agent run: every
episode is a trajectory (`info["trajectory"]` at reset and at the end) that replays with
`reposim replay --verify`.
The reward is sparse: 0 until the episode ends (finish, or max_steps), then the pass ratio (or
pass/fail) of the task's tests run in the episode's workspace.

The env is synchronous, as gymnasium expects; it drives the session on an event loop of its
own. For many environments at once use gymnasium's AsyncVectorEnv (one process per env) with the
Docker backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces

from simulator.agent.tools import OBSERVATION_LIMIT, TOOL_NAMES, ToolBox, ToolFormatError
from simulator.backend_factory import BackendOptions, warm_pool
from simulator.events import Actor
from simulator.gym.task import GymTask, RewardMode, TaskError
from simulator.session import Session, open_session, repo_info
from simulator.workspace import WorkspaceWalk, skipped_dir

if TYPE_CHECKING:  # the docker backend is imported only by envs that use it
    from backends.docker.pool import WarmPool

TREE_LIMIT = 200  # paths in the tree summary a reset returns
TEXT_LIMIT = OBSERVATION_LIMIT + 4_096


class AnyText(spaces.Space[str]):
    """Any Python string up to `max_length` characters (gymnasium's Text limits the alphabet,
    and a tool's output can hold any character)."""

    def __init__(self, max_length: int, seed: int | np.random.Generator | None = None) -> None:
        self.max_length = max_length
        super().__init__(dtype=str, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(0, min(self.max_length, 32) + 1))
        letters = self.np_random.integers(ord("a"), ord("z") + 1, size=length)
        return "".join(chr(c) for c in letters)

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length


class ToolCallSpace(spaces.Space[dict[str, Any]]):
    """{"tool": one of the agent's tools, "arguments": {...}}: one tool call.

    `sample()` draws read-only calls (view, search, a listing) so that random exploration and
    gymnasium's checker never change a workspace.
    """

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, dict)
            and x.get("tool") in TOOL_NAMES
            and isinstance(x.get("arguments", {}), dict)
        )

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        choice = int(self.np_random.integers(0, 3))
        if choice == 0:
            return {"tool": "view", "arguments": {"path": "."}}
        if choice == 1:
            word = "".join(chr(c) for c in self.np_random.integers(ord("a"), ord("z") + 1, 3))
            return {"tool": "search", "arguments": {"pattern": word}}
        return {"tool": "bash", "arguments": {"command": "ls -a"}}

    def __repr__(self) -> str:
        return "ToolCallSpace()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace)


class RepoSimEnv(gymnasium.Env[dict[str, str], dict[str, Any]]):
    """One repository task as a gymnasium environment; see the module's docstring."""

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 - gymnasium's Env declares it so

    def __init__(
        self,
        task: GymTask,
        *,
        trajectory_dir: Path | None = None,
        render_mode: str | None = None,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        self.task = task
        self.trajectory_dir = trajectory_dir
        self.render_mode = render_mode
        self.backend_options = dict(backend_options or {})
        self.observation_space: spaces.Space[dict[str, str]] = spaces.Dict(  # type: ignore[assignment]
            {
                "task": AnyText(TEXT_LIMIT),
                "tree": AnyText(TEXT_LIMIT),
                "tool": AnyText(64),
                "output": AnyText(TEXT_LIMIT),
            }
        )
        self.action_space = ToolCallSpace()
        self._loop = asyncio.new_event_loop()
        self._pool: WarmPool | None = None
        self._pool_key: tuple[str, str] | None = None
        self._pool_repo: dict[str, Any] | None = None
        self._session: Session | None = None
        self._tools: ToolBox | None = None
        self._tree = ""
        self._steps = 0
        self._done = False
        self._last: dict[str, str] = {}
        self.episodes = 0

    # -- gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """Close the previous episode's session and open a fresh one on the task (a new one
        when `options["task"]` gives a GymTask or its dict)."""
        super().reset(seed=seed)
        new_task = (options or {}).get("task")
        if new_task is not None:
            self.task = new_task if isinstance(new_task, GymTask) else GymTask.from_dict(new_task)
        self._close_session("reset")
        self._session = self._run(self._open())
        self._tools = ToolBox(self._session)
        self._tree = self._run(self._tree_summary(self._session))
        self._steps = 0
        self._done = False
        self.episodes += 1
        observation = self._observation("", "")
        return observation, self._info(events=[], trajectory=str(self._session.trajectory_path))

    def step(
        self, action: dict[str, Any]
    ) -> tuple[dict[str, str], SupportsFloat, bool, bool, dict[str, Any]]:
        if self._session is None or self._tools is None:
            raise gymnasium.error.ResetNeeded("call reset() before step().")
        if self._done:
            raise gymnasium.error.ResetNeeded("the episode has ended; call reset().")
        if not self.action_space.contains(action):
            raise gymnasium.error.InvalidAction(
                f"an action is {{'tool': one of {sorted(TOOL_NAMES)}, 'arguments': {{...}}}}; "
                f"got {action!r}."
            )
        tool, arguments = str(action["tool"]), dict(action.get("arguments") or {})
        events: list[int] = []
        unsubscribe = self._session.subscribe(lambda e: events.append(e.seq) if e.seq else None)
        try:
            observation = self._run(self._tools.run(tool, arguments))
            output, ok, finished = observation.output, observation.ok, observation.finished
        except ToolFormatError as exc:
            output, ok, finished = f"Error: {exc}", False, False
        finally:
            unsubscribe()
        self._steps += 1
        truncated = not finished and self._steps >= self.task.max_steps
        reward = 0.0
        info = self._info(events=events, tool_ok=ok)
        if finished or truncated:
            reward, info["tests"] = self._run(self._score(self._session))
            info["trajectory"] = str(self._session.trajectory_path)
            self._done = True
        return self._observation(tool, output), reward, finished, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return f"[{self._steps}] {self._last.get('tool', '')}\n{self._last.get('output', '')}"

    def close(self) -> None:
        self._close_session("closed")
        if self._pool is not None and not self._loop.is_closed():
            self._run(self._pool.close())
        self._pool = None
        if not self._loop.is_closed():
            self._loop.close()
        super().close()

    # -- the session -------------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        """The running episode's session (for wrappers that record notes or read files)."""
        return self._session

    async def _open(self) -> Session:
        task = self.task
        source = Path(task.repo).expanduser().resolve()
        options = dict(self.backend_options)
        if task.image:
            options.setdefault("image", task.image)
        trajectory = None
        if self.trajectory_dir is not None:
            self.trajectory_dir.mkdir(parents=True, exist_ok=True)
            trajectory = self.trajectory_dir / f"{task.name}-episode{self.episodes + 1}.jsonl"
        pool = await self._warm_pool(source, options)
        if pool is not None and self._pool_repo is None:
            # What the pool's containers hold: the repository as it was when the pool began.
            self._pool_repo = await asyncio.to_thread(repo_info, source)
        return await open_session(
            source,
            backend=pool.lease() if pool is not None else task.backend,
            backend_options=None if pool is not None else options,
            trajectory_path=trajectory,
            agent={"mode": "gym", "task": task.to_dict()},
            test_command=task.test_command,
            repo=self._pool_repo if pool is not None else None,
        )

    async def _warm_pool(self, source: Path, options: dict[str, Any]) -> WarmPool | None:
        """The env's pool of warm containers for a Docker task (`pool_size`, `pool_idle` in
        backend_options, else `[pool]` in the config file); a new task gets a new pool."""
        size, idle = options.pop("pool_size", None), options.pop("pool_idle", None)
        if self.task.backend != "docker":
            return None
        key = (str(source), json.dumps(options, sort_keys=True, default=str))
        if self._pool is not None and self._pool_key != key:
            await self._pool.close()
            self._pool = None
        if self._pool is None:
            self._pool = warm_pool(
                source, pool_size=size, pool_idle=idle, options=BackendOptions.of(options)
            )
            self._pool_key = key
            self._pool_repo = None
        return self._pool

    async def _tree_summary(self, session: Session) -> str:
        """Paths of the workspace as the file tree shows them (the shared walk: .gitignore
        applies), breadth first, up to TREE_LIMIT (not recorded: a listing)."""
        lines: list[str] = []
        walk = WorkspaceWalk(session, skip_dir=skipped_dir).paths(by_name=True)
        async with contextlib.aclosing(walk) as paths:
            async for path, entry in paths:
                lines.append(path + ("/" if entry.kind == "dir" else ""))
                if len(lines) >= TREE_LIMIT:
                    lines.append("[...]")
                    break
        return "\n".join(lines)

    async def _score(self, session: Session) -> tuple[float, dict[str, Any]]:
        selector = " ".join(self.task.tests) or None
        run = await session.run_tests(selector, actor=Actor.SYSTEM)
        counts = run.counts()
        total = sum(counts.values()) - counts.get("skipped", 0)
        if run.structured and total:
            ratio = counts.get("passed", 0) / total
        else:
            ratio = 1.0 if run.passed else 0.0
        if self.task.reward is RewardMode.PASS_FAIL:
            ratio = 1.0 if ratio == 1.0 and run.passed else 0.0
        return float(ratio), {"summary": run.summary(), "counts": counts, "passed": run.passed}

    def _close_session(self, reason: str) -> None:
        if self._session is not None and not self._loop.is_closed():
            self._run(self._session.close(reason))
        self._session = None
        self._tools = None

    def _run(self, coroutine: Any) -> Any:
        return self._loop.run_until_complete(coroutine)

    def _observation(self, tool: str, output: str) -> dict[str, str]:
        self._last = {
            "task": self.task.instruction[:TEXT_LIMIT],
            "tree": self._tree[:TEXT_LIMIT],
            "tool": tool[:64],
            "output": output[:TEXT_LIMIT],
        }
        return dict(self._last)

    def _info(self, **extra: Any) -> dict[str, Any]:
        """What a step tells besides the observation. The trajectory's path comes with reset
        and with the episode's end only: steps of two episodes alike have equal infos."""
        return {"task": self.task.name, "step": self._steps, **extra}


def make_env(task: GymTask | dict[str, Any] | str, **options: Any) -> RepoSimEnv:
    """An env from a GymTask, its dict, or a JSON string of it (gymnasium.make's entry point)."""
    if isinstance(task, str):
        try:
            task = json.loads(task)
        except json.JSONDecodeError as exc:
            raise TaskError(f"the task is not JSON ({exc.msg}).") from None
    if isinstance(task, dict):
        task = GymTask.from_dict(task)
    if not isinstance(task, GymTask):
        raise TaskError("a task is a GymTask, its dict, or that dict as JSON text.")
    return RepoSimEnv(task, **options)
