"""M regenerates a weak harness with the model, through litellm's real request path against
the local fake server; without a model it says how to configure one."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from simulator.dataset.schema import CurationState, Harness, Problem
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions
from simulator.session import Session
from tests.agent.fake_llm import FakeLLM, Reply, fake_client
from tests.ui.helpers import notices, recorded, wait_for
from widgets.app import RepoSimApp
from widgets.curation.app import CurationApp, target_problems
from widgets.curation.screen import CurationScreen
from widgets.curation.table import TargetTable

SIGN_TESTS = """Every branch of sign, and the boundary at zero:
```python
@pytest.mark.parametrize("args", [(7,), (1,), (-4,), (0,), (3, 2), (-3, 2)])
def test_same_as_reference(args):
    assert same(candidate(*args), reference(*args))
```"""

WEAK = "CASES = [\n    dict(args=(7,), returns=1),\n]\n"


def _weak_sign(session: Session) -> tuple[list[Problem], int]:
    problems = target_problems(session)
    sign = next(i for i, p in enumerate(problems) if p.target["qualname"] == "sign")
    problems[sign].harness = Harness("traced", WEAK, cases=1)
    problems[sign].curation.mark(CurationState.GENERATED, reason="branch coverage 25%")
    problems[sign].curation.notes.append("only the positive case")
    return problems, sign


async def test_m_regenerates_a_weak_harness_with_the_model(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REPOSIM_MODEL", raising=False)
    server = FakeLLM([Reply(SIGN_TESTS)]).start()
    client = fake_client(server)
    problems, sign = _weak_sign(session)
    options = HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=8))
    app = CurationApp(
        session, problems, export_path=tmp_path / "x.jsonl", options=options, client=client
    )
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            assert isinstance(screen, CurationScreen)
            screen.query_one(TargetTable).move_cursor(screen.shown.index(sign))
            await pilot.pause()
            await pilot.press("M")
            await wait_for(
                pilot,
                lambda: screen.busy == 0 and screen.problems[sign].validation is not None,
                "the model's harness and its validation",
            )
            row = screen.rows[sign]
            assert (row.state, row.coverage) == ("valid", 1.0)
            problem = screen.problems[sign]
            assert problem.harness is not None and problem.harness.generator == "model"
            assert "def test_same_as_reference(args):" in problem.harness.text
            assert problem.curation.notes == ["only the positive case"]  # kept
            status = str(screen.query_one("#curation-status", Static).render())
            assert "model (openai/fake-model): 1 done" in status
            harness_view = screen.query_one("#curation-harness")
            assert "test_same_as_reference" in harness_view.text  # type: ignore[attr-defined]
    finally:
        server.close()
    assert len(server.requests) == 1
    assert "sign" in server.requests[0]["messages"][-1]["content"]
    kinds = [e["kind"] for e in recorded(session.trajectory_path)]
    assert "llm.call" in kinds and "llm.response" in kinds


async def test_m_without_a_model_says_how_to_configure_one(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REPOSIM_MODEL", raising=False)
    problems, sign = _weak_sign(session)
    app = CurationApp(session, problems, export_path=tmp_path / "x.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, CurationScreen)
        screen.query_one(TargetTable).move_cursor(screen.shown.index(sign))
        await pilot.press("M")
        await wait_for(pilot, lambda: notices(app), "a notice")
        [notice] = notices(app)
        assert "Regenerating with a model needs one" in notice
        assert "--model provider/name" in notice and "REPOSIM_MODEL" in notice
        assert screen.problems[sign].harness is not None
        assert screen.problems[sign].harness.text == WEAK  # untouched


async def test_from_reposim_open_the_screen_uses_the_agents_model_setting(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reposim open` has no model flag: like the agent pane, $REPOSIM_MODEL."""
    monkeypatch.delenv("REPOSIM_MODEL", raising=False)
    app = RepoSimApp(session)
    async with app.run_test(size=(80, 24)):
        from simulator.agent import ModelConfigError

        with pytest.raises(ModelConfigError, match="No model is configured"):
            await app.model_client()
        monkeypatch.setenv("REPOSIM_MODEL", "openai/fake-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        client = await app.model_client()
        assert client.model == "openai/fake-model"
