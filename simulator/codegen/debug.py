"""`reposim debug`: the agent fixes failing tests; the result says fixed or not, with the diff.

The tests (the repository's, a selection of them, or a harness) run first; if they already
pass there is nothing to do. Otherwise the agent gets the failure and works through the session
until it finishes or a budget runs out; the tests run again, and the result carries the diff of
what the agent changed: the diff against a checkpoint taken just before it ran (RepoSim's own
`.reposim/` files left out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.agent.loop import Agent, Budgets
from simulator.agent.models import ModelClient
from simulator.events import Actor
from simulator.session import Session
from simulator.workflow import WorkflowRun


@dataclass
class DebugResult:
    status: str  # fixed | not fixed | already passing
    selector: str | None
    before: str  # the test summary before
    after: str  # and after
    agent: str  # how the agent's run ended (finished, budget:steps, ...)
    summary: str  # the agent's own summary
    diff: str

    @property
    def fixed(self) -> bool:
        return self.status == "fixed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "selector": self.selector,
            "before": self.before,
            "after": self.after,
            "agent": self.agent,
            "summary": self.summary,
            "diff": self.diff,
        }


def task_text(selector: str | None, output: str) -> str:
    which = f"The tests selected by `{selector}`" if selector else "The repository's tests"
    return (
        f"{which} fail. Find the cause in the code under test and fix it; do not change the "
        "tests. Run the tests to check, then finish with a summary of the fix.\n\n"
        f"The failing run:\n```\n{output[-4000:]}\n```"
    )


async def debug(
    session: Session,
    client: ModelClient,
    selector: str | None = None,
    *,
    command: str | None = None,
    budgets: Budgets | None = None,
    timeout: float = 600.0,
) -> DebugResult:
    with WorkflowRun(session, "debug", {"selector": selector, "model": client.model}) as run:
        with run.stage("tests-before") as detail:
            before = await session.run_tests(
                selector, command=command, actor=Actor.SYSTEM, timeout=timeout
            )
            detail.update(summary=before.summary(), passed=before.passed)
        if before.passed:
            result = DebugResult(
                "already passing", selector, before.summary(), before.summary(), "", "", ""
            )
            run.result(**result.as_dict())
            return result
        # what the agent changed is measured from here, not from the session's start: a fix
        # that puts a file back as it was at the start would otherwise read as "no change"
        before_agent = await session.checkpoint(
            f"before-debug-{len(session.checkpoints) + 1}", actor=Actor.SYSTEM
        )
        agent = Agent(session, client, budgets=budgets or Budgets(max_steps=30))
        with run.stage("agent") as detail:
            outcome = await agent.run(task_text(selector, before.output))
            detail.update(reason=outcome.reason, steps=outcome.usage.steps)
        with run.stage("tests-after") as detail:
            after = await session.run_tests(
                selector, command=command, actor=Actor.SYSTEM, timeout=timeout
            )
            detail.update(summary=after.summary(), passed=after.passed)
        since = before_agent.name
        changes = [c for c in await session.changes(since) if not c.path.startswith(".reposim/")]
        diff = "".join([await session.diff(since, path=c.path) for c in changes])
        result = DebugResult(
            "fixed" if after.passed else "not fixed",
            selector,
            before.summary(),
            after.summary(),
            outcome.reason,
            outcome.summary,
            diff,
        )
        run.result(**result.as_dict())
    return result
