"""Launching the UI on a session: the one place that runs `RepoSimApp` and closes its session.

The app never closes the session it shows; whoever launched it does, here, once, with the
reason the UI ended for ("closed", "interrupted", or an error), so the trajectory's
`session.end` does not depend on which of two closers got there first.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Awaitable

from simulator.session import Session


async def run_ui(
    session: Session | Awaitable[Session],
    *,
    theme: str | None = None,
    agent_config: object | None = None,
) -> Session:
    """Run the UI on `session` until the person quits, then close the session; return it.

    `session` may still be opening (an awaitable): the UI's modules load in a thread meanwhile,
    which takes a good part off the cold start (starting a backend is mostly waiting on
    processes). If opening fails there is no session to close, and the error propagates.
    """
    ui_loading = asyncio.create_task(asyncio.to_thread(importlib.import_module, "widgets.app"))
    try:
        opened = await session if inspect.isawaitable(session) else session
    finally:
        await ui_loading
    from widgets.app import RepoSimApp  # loaded above, in the thread: this is a lookup

    reason = "closed"
    try:
        app = RepoSimApp(opened, theme_name=theme, agent_config=agent_config)
        await app.run_async()
        if app.return_code:
            reason = "error: the UI stopped on an unexpected exception"
    except BaseException:
        reason = "interrupted"
        raise
    finally:
        await opened.close(reason)
    return opened
