"""The agent through litellm's real request path, against the fake OpenAI-compatible server."""

from __future__ import annotations

import pytest

from simulator.agent import Agent, LiteLLMClient, ModelConfigError
from simulator.agent.models import RetryPolicy
from simulator.events import Actor, Kind
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.agent.conftest import FIX, FIX_CALL
from tests.agent.fake_llm import Fail, FakeLLM, Malformed, Reply, Slow, call

FAST_RETRY = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05)


def client(
    server: FakeLLM, model: str = "openai/fake-model", timeout: float = 30.0
) -> LiteLLMClient:
    return LiteLLMClient(
        model, api_base=server.api_base, api_key="sk-test", retry=FAST_RETRY, timeout=timeout
    )


async def test_agent_fixes_a_bug_through_litellm_with_retries(
    session: Session, fake_llm: FakeLLM
) -> None:
    fake_llm.script = [
        Fail(429, "slow down"),
        Reply("The tests first.", [call("run_tests")]),
        Fail(500, "upstream hiccup"),
        Reply("Look at mean.", [call("view", path="stats/core.py")]),
        Reply("", [("edit", '{"command": "str_replace", "path": ')]),  # cut-off arguments
        Malformed(),
        Reply(
            "It divides by len - 1.",
            [FIX_CALL],
        ),
        Reply("Again.", [call("run_tests")]),
        Reply("", [call("finish", summary="mean now divides by len(values).")]),
    ]
    result = await Agent(session, client(fake_llm)).run("Make the tests pass.")
    assert result.reason == "finished", result.summary
    assert result.usage.format_errors == 1
    assert result.usage.tokens == 6 * 120
    assert FIX in (await session.read_bytes("stats/core.py")).decode()

    # the server saw every attempt; the conversation grew with tool answers
    assert len(fake_llm.requests) == 9
    assert fake_llm.headers[0]["authorization"] == "Bearer sk-test"
    last = fake_llm.requests[-1]["messages"]
    assert last[0]["role"] == "system" and last[1]["content"] == "Make the tests pass."
    assert any("Format error" in str(m.get("content")) for m in last if m["role"] == "tool")
    assert {t["function"]["name"] for t in fake_llm.requests[0]["tools"]} >= {"view", "finish"}

    events = read_trajectory(session.trajectory_path).events
    responses = [e for e in events if e.kind == Kind.LLM_RESPONSE]
    assert len(responses) == 6 == sum(e.kind == Kind.LLM_CALL for e in events)
    assert [r.payload["attempts"] for r in responses] == [2, 2, 1, 2, 1, 1]
    for response in responses:
        assert response.payload["usage"]["total_tokens"] == 120
        assert response.payload["cost"] is None  # fake-model has no price: unknown, not 0
        assert response.payload["latency"] >= 0
    retries = [e for e in events if e.kind == Kind.ERROR and "retrying" in e.payload["message"]]
    assert len(retries) == 3
    assert [e.payload["name"] for e in events if e.kind == Kind.TOOL_CALL] == [
        "run_tests",
        "view",
        "edit",
        "edit",
        "run_tests",
        "finish",
    ]
    edits = [e for e in events if e.kind == Kind.FILE_EDIT]
    assert len(edits) == 1 and edits[0].actor is Actor.AGENT
    runs = [e for e in events if e.kind == Kind.TEST_RESULT]
    assert [(r.payload["counts"]["passed"], r.payload["counts"]["failed"]) for r in runs] == [
        (1, 1),
        (2, 0),
    ]
    assert events[-1].kind == Kind.AGENT_FINISH
    assert events[-1].payload["cost"] is None


async def test_no_retry_on_authentication_failure(session: Session, fake_llm: FakeLLM) -> None:
    fake_llm.script = [Fail(401, "invalid api key"), Reply("never reached")]
    result = await Agent(session, client(fake_llm)).run("anything")
    assert result.reason == "model_error"
    assert "refused the API key" in result.summary
    assert len(fake_llm.requests) == 1
    errors = [e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.ERROR]
    assert "refused the API key" in errors[-1].payload["message"]


async def test_a_timeout_is_retried(session: Session, fake_llm: FakeLLM) -> None:
    # The client's timeout must stop the slow answer and let the quick one through: 10 s, not
    # 1 s, so that the quick answer cannot miss it on a loaded machine (CI runs at load 8-15);
    # the slow one takes 600 s, so a timeout that fails cannot pass late.
    fake_llm.script = [
        Slow(600.0, Reply("too late")),
        Reply("", [call("finish", summary="on time")]),
    ]
    result = await Agent(session, client(fake_llm, timeout=10.0)).run("be quick")
    assert result.summary == "on time"
    assert len(fake_llm.requests) == 2


async def test_gives_up_after_the_retry_budget(session: Session, fake_llm: FakeLLM) -> None:
    fake_llm.script = [Fail(503, "down")] * 4
    result = await Agent(session, client(fake_llm)).run("anything")
    assert result.reason == "model_error"
    assert len(fake_llm.requests) == FAST_RETRY.attempts


async def test_cost_is_recorded_for_a_model_litellm_prices(
    session: Session, fake_llm: FakeLLM
) -> None:
    fake_llm.script = [Reply("", [call("finish", summary="cheap")], 1000, 1000)]
    result = await Agent(session, client(fake_llm, model="openai/gpt-4o-mini")).run("price it")
    response = next(
        e for e in read_trajectory(session.trajectory_path).events if e.kind == Kind.LLM_RESPONSE
    )
    assert response.payload["cost"] is not None and response.payload["cost"] > 0
    assert result.usage.as_dict()["cost"] == pytest.approx(response.payload["cost"])


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="Set OPENAI_API_KEY in the environment"):
        LiteLLMClient("openai/gpt-4o-mini").check()
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        LiteLLMClient("anthropic/claude-3-5-sonnet-20240620").check()


def test_an_unknown_model_is_one_sentence() -> None:
    with pytest.raises(ModelConfigError, match="name it as provider/model"):
        LiteLLMClient("no-such-model-anywhere").check()


async def test_interrupting_a_model_call_cancels_the_request(
    session: Session, fake_llm: FakeLLM
) -> None:
    import asyncio

    # The answer would take 600 s and the client waits 900: only the interrupt can end the call
    # within the waits below (the suite's 180 s, for a loaded machine).
    fake_llm.script = [Slow(600.0, Reply("too late"))]
    agent = Agent(session, client(fake_llm, timeout=900.0))
    run = asyncio.create_task(agent.run("think hard"))
    while not fake_llm.requests:  # noqa: ASYNC110 - the request arrives in another thread
        await asyncio.sleep(0.05)
    paused = asyncio.Event()
    agent.listeners.append(lambda a: paused.set() if a.state == "paused" else None)
    await agent.interrupt()
    await asyncio.wait_for(paused.wait(), 180)
    agent.stop()
    result = await asyncio.wait_for(run, 180)
    assert result.reason == "stopped"
    events = read_trajectory(session.trajectory_path).events
    interrupt = next(e for e in events if e.kind == Kind.INTERRUPT)
    assert interrupt.payload == {"during": "model call", "reason": "interrupted"}
    assert not any(e.kind == Kind.LLM_RESPONSE for e in events)


async def test_the_cost_budget_stops_a_priced_model(session: Session, fake_llm: FakeLLM) -> None:
    from simulator.agent import Budgets

    fake_llm.script = [Reply("", [call("bash", command="true")], 100_000, 10_000)] * 3
    agent = Agent(
        session, client(fake_llm, model="openai/gpt-4o-mini"), budgets=Budgets(max_cost=0.01)
    )
    result = await agent.run("spend")
    assert result.reason == "budget:cost"
    assert result.usage.steps == 1
    assert result.usage.cost > 0.01
