"""A recorded harness and curation run reads as steps and figures in the event pane's cards and
in the replay viewer's detail, never as raw JSON."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from simulator.events import Actor, Event, Kind
from simulator.harness.target import find_targets
from simulator.harness.validate import Thresholds
from simulator.harness.workflow import HarnessOptions, accept, make_problems, record_decision
from simulator.session import Session
from simulator.trajectory import open_trajectory
from widgets.agent_cards import card_style, render_card
from widgets.replay.detail import render_step


def text(renderable: object) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


async def test_a_recorded_harness_run_reads_as_workflow_steps(
    session: Session, tools_repo: Path
) -> None:
    # recorded cases only: the card's single-target figures are checked against sign's one
    # recorded call (derived cases would take it to 100%)
    options = HarnessOptions(thresholds=Thresholds(repeats=1, max_mutants=3), derive_runs=0)
    targets = find_targets(tools_repo, selectors=["sign"])
    [problem] = await make_problems(session, targets, options)
    accept(problem, by="ada", note="fine by hand")
    record_decision(session, problem, "accept", by="ada", reason="fine by hand")
    await session.close()

    with open_trajectory(session.trajectory_path) as source:
        indices = [i for i in range(len(source)) if source.event(i).kind.startswith("workflow.")]
        events = [source.event(i) for i in indices]
        kinds = [e.kind for e in events]
        assert kinds[0] == Kind.WORKFLOW_START and Kind.WORKFLOW_RESULT in kinds
        result = next(e for e in events if e.kind == Kind.WORKFLOW_RESULT)
        card = text(render_card(result))
        assert "harness result" in card
        # one target: its figures, not quartiles (sign's one recorded call covers a quarter)
        figures = {line.split()[0]: line.split()[-1] for line in card.splitlines()[2:]}
        assert figures["coverage"] == "25%" and figures["valid"] == "no", card
        assert card_style(result) == "-finish"
        decision = [e for e in events if e.payload.get("workflow") == "curation"]
        assert "accept ok" in text(render_card(decision[1]))
        assert "reason  fine by hand" in " ".join(text(render_card(decision[2])).split("  "))
        for index in indices:
            detail = text(render_step(source, index))
            assert "Workflow" in detail and "Payload" not in detail
            assert '"workflow":' not in detail


def perf_step() -> Event:
    """A perf quickcheck step with two durations and a rate among its figures."""
    return Event(
        seq=1,
        t=0.0,
        actor=Actor.SYSTEM,
        kind=Kind.WORKFLOW_STEP,
        payload={
            "workflow": "perf.compare",
            "run": "r1",
            "step": "A quickcheck",
            "status": "ok",
            "seconds": 0.2,
            "detail": {"call_seconds": 0.000213, "min_time": 0.1, "coverage": 0.5},
        },
    )


def test_times_in_a_step_read_as_seconds_and_rates_as_percents() -> None:
    from widgets.workflow_cards import render_workflow

    figures = {
        line.split()[0]: line.split()[1:]
        for line in text(render_workflow(perf_step())).splitlines()
    }
    assert figures["call_seconds"] == ["213.000", "us"]  # it read "0%"
    assert figures["min_time"] == ["100.000", "ms"]  # it read "10%"
    assert figures["coverage"] == ["50%"]


def test_the_one_line_summary_gives_durations_units_not_percents() -> None:
    """`trajectory show` and the replay timeline read workflow steps through describe_event."""
    from simulator.describe import describe_event

    line = describe_event(perf_step())
    assert "call_seconds=213.000 us" in line and "min_time=100.000 ms" in line, line
    assert "coverage=50%" in line, line
