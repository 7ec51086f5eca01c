"""The LLM installer on a real container, its model a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.agent.models import LiteLLMClient, RetryPolicy
from simulator.setup import Tier
from simulator.setup.llm import install_with_model
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.setup import repos
from tests.setup.conftest import SetUp

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _client(server: FakeLLM) -> LiteLLMClient:
    return LiteLLMClient(
        "openai/fake-model",
        api_base=server.api_base,
        api_key="sk-test",
        retry=RetryPolicy(attempts=1, base_delay=0.01),
    )


async def test_model_command_makes_the_oracle_say_ready(
    tmp_path: Path, set_up: SetUp, fake_llm: FakeLLM
) -> None:
    repo = repos.env_var_repo(tmp_path / "repo")
    session, result = await set_up(repo)
    assert result.verdict.tier is Tier.RUNS  # the ladder cannot know the variable

    fake_llm.script = [
        Reply("The test wants the mode.", [call("run", command="export APP_MODE=test")]),
    ]
    report = await install_with_model(session, result, client=_client(fake_llm), rounds=3)

    assert report.stopped == "ready" and result.verdict.tier is Tier.READY
    assert len(fake_llm.requests) == 1
    first = fake_llm.requests[0]["messages"][1]["content"]
    assert "1 of 1 tests failed" in first and "assert 'production' == 'test'" in first
    assert "export APP_MODE=test" in result.commands
    await session.close()
    events = [json.loads(line) for line in session.trajectory_path.read_text().splitlines()[1:]]
    kinds = [(e["actor"], e["kind"]) for e in events]
    assert ("agent", "llm.call") in kinds and ("agent", "llm.response") in kinds
    agent_exec = [e for e in events if e["kind"] == "exec" and e["actor"] == "agent"]
    assert [e["payload"]["command"] for e in agent_exec] == ["export APP_MODE=test"]
    llm_run = [e for e in events if e["kind"] == "workflow.result"][-1]["payload"]
    assert llm_run["workflow"] == "setup.llm" and llm_run["result"]["stopped"] == "ready"


async def test_only_the_oracle_says_done_and_rounds_are_bounded(
    tmp_path: Path, set_up: SetUp, fake_llm: FakeLLM
) -> None:
    repo = repos.env_var_repo(tmp_path / "repo")
    session, result = await set_up(repo)
    fake_llm.script = [
        Reply("Done, it works now.", [call("run", command="echo all good")]),
        Reply("Really done.", [call("run", command="true")]),
        Reply("Once more.", [call("run", command="true")]),
    ]
    report = await install_with_model(session, result, client=_client(fake_llm), rounds=2)
    assert report.stopped == "rounds" and not result.verdict.ready
    assert len(fake_llm.requests) == 2 and len(report.rounds) == 2
    # The model saw the oracle's answer to its command, not its own claim.
    tool_message = fake_llm.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "Oracle verdict: runs" in tool_message["content"]

    fake_llm.script = [Reply("Cannot help.", [call("give_up", reason="needs a secret")])]
    gave_up = await install_with_model(session, result, client=_client(fake_llm), rounds=3)
    assert gave_up.stopped == "gave-up" and not result.verdict.ready
