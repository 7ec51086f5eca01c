"""Timing loops the benchmarks share."""

from __future__ import annotations

import time
from typing import Any


async def exec_round_trips(backend: Any, n: int, warm_up: int = 20) -> list[float]:
    """Seconds of each of `n` round trips of `true` through `backend.exec` (a started
    backend), after `warm_up` untimed ones; each must exit 0."""
    for _ in range(warm_up):
        await backend.exec("true")
    times = []
    for _ in range(n):
        started = time.perf_counter()
        result = await backend.exec("true")
        times.append(time.perf_counter() - started)
        assert result.exit_code == 0
    return times
