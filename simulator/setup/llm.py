"""The optional LLM installer: when the ladder stops short of ready, a model proposes commands.

Each round the model gets the project summary, the last command, its output and the oracle's
verdict, and answers with one tool call: `run` (a shell command, executed through the session as
the agent, so it is recorded and subject to the session's policy) or `give_up` (with a reason).
After every command the oracle is asked again; only the oracle says done, never the model.
Rounds are bounded. Every model call and answer is recorded (llm.call / llm.response), and every
round is a `workflow.step` of a `setup.llm` workflow run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from simulator.agent.models import (
    LiteLLMClient,
    ModelClient,
    ModelError,
    parse_arguments,
    turn_payload,
)
from simulator.events import Actor, Kind, LlmCallPayload
from simulator.session import Session
from simulator.setup.ladder import SetupOptions, SetupResult, reassess
from simulator.setup.oracle import Verdict
from simulator.workflow import WorkflowRun

WORKFLOW = "setup.llm"
SYSTEM_PROMPT = (
    "You set up a software repository so that its test suite runs. You work in a shell inside "
    "the repository's workspace; a Python virtual environment is active (use its `python` and "
    "`python -m pip`, or `uv pip install` when uv is given). Each turn, call exactly one tool: "
    "`run` with the next shell command, or `give_up` when nothing more can help. After each "
    "command an oracle runs the tests and reports the verdict; you cannot declare success "
    "yourself. Prefer small, targeted commands: install a missing distribution, pin an older "
    "version, install the test extras, set an environment variable."
)
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "run",
            "description": "Run one shell command in the workspace (non-interactive).",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "the shell command"},
                    "reason": {"type": "string", "description": "why this command helps"},
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "give_up",
            "description": "Stop: nothing more can make the tests run.",
            "parameters": {
                "type": "object",
                "properties": {"reason": {"type": "string"}},
                "required": ["reason"],
            },
        },
    },
]
OUTPUT_LIMIT = 6000


@dataclass
class LLMReport:
    verdict: Verdict
    rounds: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "rounds"  # ready | gave-up | rounds | model-error | no-command


def _summary(result: SetupResult) -> str:
    project = result.project
    return json.dumps(
        {
            "language": project.language,
            "build_backend": project.build_backend,
            "python_requires": project.python_requires,
            "extras": project.extras,
            "requirement_files": project.requirement_files,
            "venv": result.venv,
            "python": result.python,
            "uv": result.uv,
            "installed_by_the_ladder": result.installed,
            "test_command": result.verdict.test_command,
        },
        indent=1,
    )


def _observation(command: str, output: str, exit_code: int | None, verdict: Verdict) -> str:
    tail = output[-OUTPUT_LIMIT:]
    return (
        f"$ {command}\n(exit code {exit_code})\n{tail}\n\n"
        f"Oracle verdict: {verdict.line()}\n"
        f"Last test output:\n{verdict.output_tail[-OUTPUT_LIMIT:]}"
    )


async def install_with_model(
    session: Session,
    result: SetupResult,
    *,
    model: str | None = None,
    api_base: str | None = None,
    client: ModelClient | None = None,
    rounds: int = 6,
    command_timeout: float = 600.0,
    options: SetupOptions | None = None,
) -> LLMReport:
    """Let a model try to bring `result` to ready; the result's verdict is updated in place."""
    if client is None:
        if not model:
            raise ModelError("The LLM installer needs a model (--model provider/name).")
        litellm_client = LiteLLMClient(model, api_base=api_base)
        litellm_client.check()
        client = litellm_client
    report = LLMReport(result.verdict)
    last = result.verdict
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": (
                f"The automatic ladder stopped short of ready.\nProject:\n{_summary(result)}\n\n"
                f"Oracle verdict: {last.line()}\nLast test output:\n"
                f"{last.output_tail[-OUTPUT_LIMIT:]}\n\nPropose the next command."
            ),
        },
    ]
    with WorkflowRun(session, WORKFLOW, params={"model": client.model, "rounds": rounds}) as run:
        for round_no in range(1, rounds + 1):
            call = session.emit(
                Actor.AGENT,
                Kind.LLM_CALL,
                LlmCallPayload(model=client.model, messages=len(messages), tools=len(TOOLS)),
            )
            started = time.monotonic()
            try:
                turn = await client.complete(messages, TOOLS)
            except ModelError as exc:
                run.step("model", detail={"round": round_no, "error": str(exc)})
                report.stopped = "model-error"
                break
            session.emit(
                Actor.AGENT,
                Kind.LLM_RESPONSE,
                turn_payload(
                    turn, turn.model or client.model, round(time.monotonic() - started, 3)
                ),
                cause=call.seq,
            )
            messages.append(turn.as_message())
            if not turn.tool_calls:
                report.stopped = "no-command"
                break
            tool = turn.tool_calls[0]
            arguments = parse_arguments(tool.arguments)
            if tool.name == "give_up":
                report.rounds.append({"round": round_no, "gave_up": arguments.get("reason")})
                run.step("give-up", detail={"round": round_no, "reason": arguments.get("reason")})
                report.stopped = "gave-up"
                break
            command = str(arguments.get("command") or "").strip()
            if tool.name != "run" or not command:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": tool.id,
                        "content": "Call `run` with a command, or `give_up`.",
                    }
                )
                continue
            with run.stage("command", round=round_no, command=command) as detail:
                executed = await session.exec(command, actor=Actor.AGENT, timeout=command_timeout)
                output = executed.output.decode("utf-8", "replace")
                last = await reassess(session, result, options)
                detail.update(exit_code=executed.exit_code, verdict=last.to_dict())
            report.rounds.append(
                {
                    "round": round_no,
                    "command": command,
                    "exit_code": executed.exit_code,
                    "tier": str(last.tier),
                }
            )
            result.verdict = report.verdict = last
            if executed.exit_code == 0:
                result.commands.append(command)  # the Dockerfile replays what worked
            if last.ready:
                report.stopped = "ready"
                break
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": tool.id,
                    "content": _observation(command, output, executed.exit_code, last),
                }
            )
        run.result(verdict=report.verdict.to_dict(), stopped=report.stopped, rounds=report.rounds)
    if report.verdict.test_command:
        session.test_command = report.verdict.test_command
    return report
