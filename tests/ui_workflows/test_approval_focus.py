"""In confirm mode a workflow's question owns the keys from the moment it shows until it is
answered: nothing that started before it (the editor following a file the agent changed, the
previous question giving the keys back) takes them, and a person answers by keys alone.

The orderings that lost the keys are forced here, not left to the machine's load: the stop-36
fresh-clone run lost them 1 run in 3 when the editor's follow of the agent's edit ended after
the next question had shown."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from simulator.agent import Mode
from simulator.events import Actor, Kind
from simulator.session import Decision
from simulator.workflow import ActionRequest
from tests.conftest import SessionOn
from tests.ui.helpers import drained, wait_for, wait_quiet
from tests.ui_workflows.conftest import workflow_app
from widgets.agent_pane import AgentPane
from widgets.app import RepoSimApp
from widgets.editor_pane import EditorPane
from widgets.file_tree import FileTree
from widgets.workflow_entries import WorkflowApproval, ui_gate


def request(description: str) -> ActionRequest:
    return ActionRequest("debug", "run-1", Actor.AGENT, Kind.EXEC, {}, description)


def asked(app: RepoSimApp, description: str) -> bool:
    prompts = app.query(WorkflowApproval)
    return (
        bool(prompts)
        and bool(prompts.first().display)
        and (prompts.first().description == description)
    )


async def hold_open_file(
    monkeypatch: pytest.MonkeyPatch, app: RepoSimApp
) -> tuple[asyncio.Event, asyncio.Event]:
    """The editor's open_file waits, once entered, until released: (entered, release)."""
    editor = app.query_one(EditorPane)
    real: Callable[..., Awaitable[None]] = editor.open_file
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(path: str, line: int | None = None, **options: Any) -> None:
        entered.set()
        await release.wait()
        await real(path, line, **options)

    monkeypatch.setattr(editor, "open_file", held)
    return entered, release


async def test_the_editor_following_an_edit_never_takes_the_keys_from_the_next_question(
    session_on: SessionOn, buggy_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with workflow_app(session_on, buggy_repo, None, Mode.CONFIRM) as (app, pilot):
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: app.focused is tree, "the tree to have the keys")
        entered, release = await hold_open_file(monkeypatch, app)
        # The agent edited a file: the editor follows it, starting while the tree has the keys.
        app.query_one(AgentPane).post_message(AgentPane.FollowFile("stats/core.py", 1))
        await wait_for(pilot, entered.is_set, "the editor to start following the file")
        # The workflow's next question shows before the follow has ended.
        gate = ui_gate(app)
        assert gate is not None
        answer = asyncio.ensure_future(gate(request("run tests")))
        await wait_for(pilot, lambda: asked(app, "run tests"), "the question")
        prompt = app.query_one(WorkflowApproval)
        await wait_for(pilot, lambda: app.focused is prompt, "the question to have the keys")
        release.set()
        editor = app.query_one(EditorPane)
        await wait_for(pilot, lambda: editor.current_path == "stats/core.py", "the followed file")
        await wait_for(
            pilot, lambda: not [w for w in app.workers if w.group == "agent-follow"], "the follow"
        )
        await drained(pilot, app, prompt)  # the focus calls the follow queued have run
        assert app.focused is prompt, f"the keys went to {app.focused!r}"
        await pilot.press("a")  # a person answers by keys, as the question says
        await wait_for(pilot, answer.done, "the answer")
        assert answer.result() == Decision(True, "", by="human")
        await wait_quiet(pilot, app)


async def test_giving_the_keys_back_never_takes_them_from_the_next_question(
    session_on: SessionOn, buggy_repo: Path
) -> None:
    """Two questions back to back (the workflow asks again at once): the first one's answer
    gives the keys back to the tree only while no newer question wants them; the second owns
    them, then the tree has them again."""
    async with workflow_app(session_on, buggy_repo, None, Mode.CONFIRM) as (app, pilot):
        tree = app.query_one(FileTree)
        await wait_for(pilot, lambda: app.focused is tree, "the tree to have the keys")
        gate = ui_gate(app)
        assert gate is not None

        async def two_questions() -> list[Decision]:
            return [await gate(request("run tests")), await gate(request("edit stats/core.py"))]

        answers = asyncio.ensure_future(two_questions())
        await wait_for(pilot, lambda: asked(app, "run tests"), "the first question")
        prompt = app.query_one(WorkflowApproval)
        await wait_for(pilot, lambda: app.focused is prompt, "the first question's keys")
        await pilot.press("a")
        await wait_for(pilot, lambda: asked(app, "edit stats/core.py"), "the second question")
        await drained(pilot, app, prompt)
        assert app.focused is prompt, f"the keys went to {app.focused!r}"
        await pilot.press("r")
        reason = prompt.query_one("#approval-reason")
        await wait_for(pilot, lambda: app.focused is reason, "the reason's input")
        await pilot.press(*"no", "enter")
        await wait_for(pilot, answers.done, "the answers")
        assert [d.allowed for d in answers.result()] == [True, False]
        await drained(pilot, app, prompt)
        assert not prompt.display and app.focused is tree, f"the keys went to {app.focused!r}"
        await wait_quiet(pilot, app)
