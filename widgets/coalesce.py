"""Refreshes that coalesce instead of cancelling.

Textual's `exclusive` workers cancel the running one when a new one starts. A session call
cancelled half-way (a git command in the backend's shell, a search) can leave that shell between
commands, so refreshes here never cancel: a request while one runs makes it run once more when
it is done, with the latest inputs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.dom import DOMNode


class Coalesced:
    def __init__(self, owner: DOMNode, job: Callable[[], Awaitable[None]], group: str) -> None:
        self._owner = owner
        self._job = job
        self._group = group
        self._running = False
        self._again = False

    @property
    def running(self) -> bool:
        return self._running

    def __call__(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        self._owner.run_worker(self._loop(), group=self._group)

    async def _loop(self) -> None:
        try:
            while True:
                self._again = False
                await self._job()
                if not self._again:
                    return
        finally:
            self._running = False
