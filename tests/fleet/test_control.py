"""Take-over of a running agent session through its control socket: a real session on a real
git repository, the agent on the fake OpenAI-compatible server, the person in another thread."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest

from simulator.agent.config import litellm_client
from simulator.agent.control import ControlClient, ControlError, ControlServer, control_file
from simulator.agent.loop import Agent, Budgets, Mode
from simulator.session import open_session
from simulator.trajectory import read_trajectory
from tests.agent.fake_llm import FakeLLM, Reply, call
from tests.conftest import RepoFactory


def blocker(gate: Path) -> str:
    """A command that runs until the test opens the gate: the agent is mid-step meanwhile."""
    return f"while [ ! -e {gate} ]; do sleep 0.05; done; echo gate open"


async def _until(predicate: object, what: str, timeout: float = 60.0) -> None:
    assert callable(predicate)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_a_person_pauses_the_agent_runs_a_command_edits_a_file_and_lets_it_go_on(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo({"notes.txt": "first\n"}, name="taken")
    gate = tmp_path / "gate"
    server = FakeLLM(
        [
            Reply("Wait for it.", [call("bash", command=blocker(gate))]),
            Reply("", [call("finish", summary="done after the person")]),
        ]
    ).start()
    trajectory = tmp_path / "run.jsonl"
    try:
        async with await open_session(repo, trajectory_path=trajectory) as session:
            client = litellm_client("openai/fake-model", api_base=server.api_base)
            agent = Agent(session, client, mode=Mode.AUTO, budgets=Budgets(max_steps=5))
            async with ControlServer(session, agent, trajectory) as control:
                assert control.socket_path is not None
                assert control.socket_path.stat().st_mode & 0o777 == 0o600
                person = ControlClient.for_trajectory(trajectory)
                assert person is not None
                run = asyncio.create_task(agent.run("Do the thing."))
                await _until(lambda: agent.state == "tool", "the agent's first command")

                # Nothing can be done by hand while the agent runs.
                with pytest.raises(ControlError, match="pause it first"):
                    await asyncio.to_thread(person.request, "exec", command="true")

                # Pause: the answer comes once the agent's step is over.
                paused = asyncio.create_task(asyncio.to_thread(person.request, "pause"))
                await _until(lambda: agent.mode is Mode.HUMAN, "the pause to reach the agent")
                assert not paused.done()  # still in its step
                gate.touch()
                status = await asyncio.wait_for(paused, 60)
                assert status["mode"] == "human" and status["state"] == "paused"

                done = await asyncio.to_thread(
                    person.request, "exec", command="echo by hand > hand.txt; cat hand.txt"
                )
                assert done["exit_code"] == 0 and done["output"].strip() == "by hand"
                text = await asyncio.to_thread(person.request, "read", path="notes.txt")
                assert text["text"] == "first\n"
                await asyncio.to_thread(
                    person.request, "write", path="notes.txt", text="first\nsecond\n"
                )
                await asyncio.to_thread(person.request, "resume")
                result = await asyncio.wait_for(run, 60)
            assert not control_file(trajectory).exists()
            assert not control.socket_path.exists()
    finally:
        server.close()

    assert result.reason == "finished"
    assert (repo / "notes.txt").read_text() == "first\n"  # the session works on its own copy
    # The model was told what the person did before its next turn.
    told = json.dumps(server.requests[1]["messages"])
    assert "While you were paused" in told and "hand.txt" in told and "notes.txt" in told
    # The person's actions are in the trajectory, as the person's.
    events = read_trajectory(trajectory).events
    human = [(e.kind, e.payload) for e in events if str(e.actor) == "human"]
    assert ("exec", {"command": "echo by hand > hand.txt; cat hand.txt", "timeout": None}) in [
        (str(k), {key: p.get(key) for key in ("command", "timeout")}) for k, p in human
    ]
    assert any(str(k) == "file.write" and p.get("path") == "notes.txt" for k, p in human)
    assert usage_paused(result) > 0


def usage_paused(result: object) -> float:
    return float(result.usage.paused)  # type: ignore[attr-defined]


async def test_the_control_socket_answers_only_its_own_user_and_says_what_it_cannot_do(
    make_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = make_repo({"a.txt": "a\n"}, name="guarded")
    server = FakeLLM([]).start()
    trajectory = tmp_path / "run.jsonl"
    try:
        async with await open_session(repo, trajectory_path=trajectory) as session:
            client = litellm_client("openai/fake-model", api_base=server.api_base)
            agent = Agent(session, client, mode=Mode.AUTO)
            async with ControlServer(session, agent, trajectory) as control:
                assert control.socket_path is not None
                directory = control.socket_path.parent
                assert directory.stat().st_mode & 0o777 == 0o700
                assert directory.stat().st_uid == os.getuid()
                person = ControlClient(control.socket_path)
                with pytest.raises(ControlError, match="Unknown request 'shutdown'"):
                    await asyncio.to_thread(person.request, "shutdown")
                with pytest.raises(ControlError, match="Give a command"):
                    await asyncio.to_thread(person.request, "exec", command=" ")

                # Not JSON: one sentence back, and the connection stays usable.
                def raw() -> list[bytes]:
                    with socket.socket(socket.AF_UNIX) as sock:
                        sock.connect(str(control.socket_path))
                        sock.sendall(b"not json\n" + json.dumps({"op": "status"}).encode() + b"\n")
                        reader = sock.makefile("rb")
                        return [reader.readline(), reader.readline()]

                bad, good = await asyncio.to_thread(raw)
                assert json.loads(bad) == {"ok": False, "error": "A request is one JSON object."}
                assert json.loads(good)["ok"] is True
    finally:
        server.close()
    # After the session: the trajectory names no socket, and a client says it has ended.
    assert ControlClient.for_trajectory(trajectory) is None
    with pytest.raises(ControlError, match="cannot be reached"):
        ControlClient(tmp_path / "gone.sock").request("status")
