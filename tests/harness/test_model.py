"""The model generator through litellm's real request path, against the local fake server."""

from __future__ import annotations

from pathlib import Path

from simulator.events import Kind
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, make_problems
from simulator.session import Session
from simulator.trajectory import read_trajectory
from tests.agent.fake_llm import FakeLLM, Reply, fake_client
from tests.harness.conftest import CANDIDATE_REFUSES_BAD_BOUNDS, SAME_AS_REFERENCE, fenced

WRONG = """```python
def test_inside():
    assert candidate(5, 0, 10) == 6
```"""

FIXED = fenced(
    SAME_AS_REFERENCE
    + "    with pytest.raises(ValueError):\n        reference(1, 5, 0)\n"
    + CANDIDATE_REFUSES_BAD_BOUNDS,
    "Fixed: the reference returns 5 there.\n",
)


async def test_a_harness_that_fails_the_first_round_is_fixed_in_the_second(
    session: Session, calc_repo: Path
) -> None:
    server = FakeLLM([Reply(WRONG), Reply(FIXED)]).start()
    try:
        [target] = find_targets(calc_repo, selectors=["clamp"])
        options = HarnessOptions(
            generator="model",
            client=fake_client(server),
            rounds=3,
            thresholds=Thresholds(repeats=2),
        )
        [problem] = await make_problems(session, [target], options)
    finally:
        server.close()

    assert problem.harness is not None and problem.harness.generator == "model"
    assert problem.harness.rounds == 2
    assert problem.validation is not None and problem.validation.verdict == "valid"
    assert problem.validation.coverage is not None
    assert problem.validation.coverage["rate"] == 1.0
    assert problem.curation.state == "valid"
    text = problem.harness.text
    assert "reference = load_reference(TARGET)" in text and "def test_bad_bounds" in text

    # the second request carried the first round's failure back to the model
    assert len(server.requests) == 2
    feedback = server.requests[1]["messages"][-1]["content"]
    assert "does not pass on the reference" in feedback and "test_inside" in feedback
    assert "assert 5 == 6" in feedback

    events = read_trajectory(session.trajectory_path).events
    assert sum(e.kind == Kind.LLM_RESPONSE for e in events) == 2
    rounds = [
        e.payload for e in events if e.kind == Kind.WORKFLOW_STEP and e.payload["step"] == "round"
    ]
    assert [(r["detail"]["round"], r["status"]) for r in rounds] == [(1, "failed"), (2, "ok")]
