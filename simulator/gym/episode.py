"""Drive one episode of a RepoSimEnv with a model client: the loop an RL rollout worker runs.

The model sees the task and the repository tree, answers with tool calls, and each call is one
`env.step`. Model turns are recorded in the episode's trajectory as llm.response events, so the
episode replays like an agent run. With a litellm client this is a real rollout; tests drive it
with the scripted client.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from simulator.agent.loop import SYSTEM_PROMPT
from simulator.agent.models import (
    Message,
    ModelClient,
    ModelError,
    parse_arguments,
    turn_payload,
)
from simulator.agent.tools import TOOL_SCHEMAS
from simulator.events import Actor, Kind
from simulator.gym.env import RepoSimEnv


@dataclass
class EpisodeResult:
    reward: float
    terminated: bool
    truncated: bool
    steps: int
    trajectory: str | None
    tests: dict[str, Any] | None = None
    rewards: list[float] = field(default_factory=list)
    stopped: str | None = None  # why the driver stopped before the env ended the episode


def run_episode(
    env: RepoSimEnv,
    client: ModelClient,
    *,
    max_turns: int = 50,
    seed: int | None = None,
) -> EpisodeResult:
    observation, info = env.reset(seed=seed)
    messages: list[Message] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": f"{observation['task']}\n\nThe repository:\n{observation['tree']}",
        },
    ]
    result = EpisodeResult(0.0, False, False, 0, info.get("trajectory"))
    for _ in range(max_turns):
        started = time.monotonic()
        try:
            turn = asyncio.run(client.complete(messages, TOOL_SCHEMAS))
        except ModelError as exc:
            result.stopped = f"model error: {exc}"
            return result
        if env.session is not None:
            env.session.emit(
                Actor.AGENT,
                Kind.LLM_RESPONSE,
                turn_payload(
                    turn, turn.model or client.model, round(time.monotonic() - started, 6)
                ),
            )
        messages.append(turn.as_message())
        if not turn.tool_calls:
            messages.append({"role": "user", "content": "Call a tool, or finish when done."})
            continue
        for call in turn.tool_calls:
            try:
                arguments = parse_arguments(call.arguments)
            except ValueError as exc:
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": f"Error: {exc}"}
                )
                continue
            observation, reward, terminated, truncated, info = env.step(
                {"tool": call.name, "arguments": arguments}
            )
            result.steps += 1
            result.rewards.append(float(reward))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": observation["output"]}
            )
            if terminated or truncated:
                result.reward = float(reward)
                result.terminated, result.truncated = terminated, truncated
                result.tests = info.get("tests")
                return result
    result.stopped = f"no end after {max_turns} model turns"
    return result
