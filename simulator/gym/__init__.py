"""A Gym-style API over RepoSim sessions: gymnasium.Env with reset(task) / step(tool call)."""

from gymnasium.envs.registration import register

from simulator.gym.env import AnyText, RepoSimEnv, ToolCallSpace, make_env
from simulator.gym.episode import EpisodeResult, run_episode
from simulator.gym.task import GymTask, RewardMode, TaskError, load_tasks

# gymnasium.make("reposim/Repo-v0", task=GymTask(...) or its dict) builds a RepoSimEnv.
register(id="reposim/Repo-v0", entry_point="simulator.gym.env:make_env", nondeterministic=False)

__all__ = [
    "AnyText",
    "EpisodeResult",
    "GymTask",
    "RepoSimEnv",
    "RewardMode",
    "TaskError",
    "ToolCallSpace",
    "load_tasks",
    "make_env",
    "run_episode",
]
