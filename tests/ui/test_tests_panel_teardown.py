"""A test run that ends while the app closes does not fail the app: the panel's result has no
one to show it to (seen in a full-suite run: NoMatches('#tests-summary') at teardown)."""

from __future__ import annotations

import asyncio

import pytest

from simulator.session import Session
from simulator.testrun import TestRunResult
from tests.ui.helpers import running, wait_for
from widgets.tests_panel import TestsPanel


async def test_a_run_ending_after_the_panel_unmounts_is_dropped(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = asyncio.Event()
    real_run_tests = session.run_tests

    async def held_run_tests(*args: object, **kwargs: object) -> TestRunResult:
        result = await real_run_tests()
        await release.wait()  # the run ends only after the panel's children are gone
        return result

    monkeypatch.setattr(session, "run_tests", held_run_tests)
    async with running(session) as (app, pilot):
        panel = app.query_one(TestsPanel)
        await pilot.press("f5")
        await wait_for(pilot, lambda: panel.running, "the run to start")
        await panel.remove_children()  # what the app's shutdown does to the panel first
        release.set()
        await wait_for(pilot, lambda: not panel.running, "the run to end")
        await app.workers.wait_for_complete()
    # run_test re-raises a worker's exception here; none means the late result was dropped
