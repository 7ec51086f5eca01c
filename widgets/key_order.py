"""Keys applied in the order they were typed, none lost, whatever the load.

Textual hands a key to the focused widget by posting it to that widget's queue and goes on with
the next key at once. What a widget does not handle in its own key handler (the bindings: End or
Backspace in a TextArea, Enter in an Input, Ctrl+G in the editor pane) bubbles up, one queue at a
time, and is resolved at the app when it comes back through the app's queue: behind every key
of the burst read after it. So at load 100 a burst `Ctrl+G 277 Enter End Backspace x7 None
Ctrl+S` saved `return defa`: the typed text landed before End, the Backspaces in the closing
go-to-line box (Textual issue #6605 is the same race inside one Input). Focus moves are
deferred the same way (`Widget.focus` queues the change on the app).

`KeyGate` makes the app take a key only once the one before it has gone all the way through.
While a key settles, the app's loop stays in that key's handler: the widgets that got it, and
their ancestors, drain their queues (bottom up, so what one bubbles is queued at the next before
that one is drained); the key's return to the app and the callbacks that the key's handlers queue
on the app (a deferred focus) are taken out of the app's queue and handled there and then, before
the keys waiting behind them; rounds repeat until nothing moved. The next key stays in the app's
queue meanwhile, so anything waiting for the app to be idle (a test's Pilot) waits for it too.
The wait is bounded: a handler that blocks for long lets the keys go on as before.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.app import App, ReturnType
from textual.dom import DOMNode
from textual.message import Message
from textual.message_pump import MessagePump

SETTLE_LIMIT = 3.0  # seconds a key may take to settle before the next one goes anyway
ROUNDS = 8  # drain rounds at most: a round that moves nothing ends the wait sooner


async def _drain(pump: MessagePump) -> bool:
    """Wait until `pump` has handled everything queued before now; whether it was idle (had
    nothing queued before or after the marker)."""
    was_empty: bool = pump._message_queue.empty()
    done = asyncio.Event()
    after: list[bool] = []

    def marker() -> None:
        after.append(pump._message_queue.empty())
        done.set()

    if not pump.call_later(marker):  # closed: nothing more will be handled there
        return True
    await done.wait()
    return was_empty and after[0]


class KeyGate:
    """Holds the app's next key until the previous one has been applied."""

    def __init__(self, app: App[Any], post: Callable[[Message], bool]) -> None:
        self.app = app
        self._post = post  # the app's own post_message, around the capture
        self._key: events.Event | None = None
        self._task: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._captured: deque[Message] = deque()

    @staticmethod
    def takes(event: events.Event) -> bool:
        """A key or paste read from the terminal (not one bubbling back from a widget)."""
        return isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded

    def capture(self, message: Message) -> bool:
        """Called for every message posted to the app: keep the settling key's return and the
        app callbacks that its handlers queue, to handle them before the next key."""
        if self._key is None or threading.get_ident() != self.app._thread_id:
            return False
        if message is self._key:
            self._captured.append(message)
            return True
        if isinstance(message, events.Callback) and asyncio.current_task() in self._tasks:
            self._captured.append(message)
            return True
        return False

    async def handle(
        self, event: events.Event, hand_out: Callable[[events.Event], Awaitable[None]]
    ) -> None:
        """Hand `event` out (`hand_out`: Textual's own App.on_event) and wait until it and what
        it set off have been handled."""
        self._key = event
        self._task = asyncio.current_task()
        self._tasks = {self._task} if self._task is not None else set()
        deadline = time.monotonic() + SETTLE_LIMIT
        try:
            await hand_out(event)
            await self._settle(deadline)
        finally:
            self._key = None
            self._task = None
            self._tasks = set()
            leftovers = list(self._captured)  # only after a timeout: back to the queue
            self._captured.clear()
            for message in leftovers:
                self._post(message)

    def _pumps(self) -> list[DOMNode]:
        """The focused widget (or the screen) and its ancestors, children before parents."""
        try:
            target: DOMNode = self.app.focused or self.app.screen
        except Exception:  # no screen (starting or closing): nothing to wait for
            return []
        pumps = [node for node in target.ancestors_with_self if node is not self.app]
        return pumps

    async def _settle(self, deadline: float) -> None:
        seen: list[DOMNode] = self._pumps()
        for _ in range(ROUNDS):
            # the keyboard may have moved (a box closed, a screen opened): wait for both
            pumps = seen + [p for p in self._pumps() if p not in seen]
            pumps.sort(key=lambda p: len(p.ancestors_with_self), reverse=True)
            seen = pumps
            self._tasks = {self._task} if self._task is not None else set()
            self._tasks |= {p._task for p in pumps if p._task is not None}
            moved = False
            for pump in pumps:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                try:
                    idle = await asyncio.wait_for(_drain(pump), remaining)
                except TimeoutError:
                    return
                moved = moved or not idle
            while self._captured:
                moved = True
                await self.app._dispatch_message(self._captured.popleft())
            if not moved:
                return


class KeyOrderedApp(App[ReturnType]):
    """An app whose keys go through a `KeyGate`: each is applied before the next is taken.
    The stand-alone apps (curation, replay, fleet) inherit it; `RepoSimApp` holds its own."""

    _key_gate: KeyGate

    def post_message(self, message: Message) -> bool:
        gate = self.__dict__.get("_key_gate")  # posted to during App.__init__, before on_event
        return (gate is not None and gate.capture(message)) or super().post_message(message)

    async def on_event(self, event: events.Event) -> None:
        if KeyGate.takes(event):
            if "_key_gate" not in self.__dict__:
                self._key_gate = KeyGate(self, super().post_message)
            await self._key_gate.handle(event, super().on_event)
        else:
            await super().on_event(event)
