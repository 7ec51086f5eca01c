"""Following a harness run from its workflow events, for the harness benchmarks."""

from __future__ import annotations

import sys

from simulator.events import Event, Kind


class HarnessProgress:
    """The seconds of the traced test run and of each target's own stage, read from the
    run's finished workflow steps, each said on stderr as it ends."""

    def __init__(self, trace_text: str, indent: str) -> None:
        self.trace_text = trace_text  # formatted with the trace run's {seconds}
        self.indent = indent
        self.trace = 0.0
        self.targets: dict[str, float] = {}

    def watch(self, event: Event) -> None:
        if event.kind != Kind.WORKFLOW_STEP or event.payload["status"] == "running":
            return
        step = event.payload
        seconds = float(step["seconds"] or 0.0)
        if step["step"] == "trace":
            self.trace = seconds
            print(self.trace_text.format(seconds=seconds), file=sys.stderr, flush=True)
        elif step["step"] == "target":
            detail = step["detail"]
            self.targets[detail["target"]] = seconds
            print(
                f"{self.indent}{detail['target']}: {detail.get('state')} cov "
                f"{detail.get('coverage')} mut {detail.get('mutation')} ({step['seconds']:.1f}s)",
                file=sys.stderr,
                flush=True,
            )
