"""Launching the UI on a session: the one place that runs `RepoSimApp` and closes its session.

The app never closes the session it shows; whoever launched it does, here, once, with the
reason the UI ended for ("closed", "interrupted", or an error), so the trajectory's
`session.end` does not depend on which of two closers got there first.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import inspect
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded with the UI, in its thread (see run_ui)
    from textual.worker import Worker

    from simulator.agent import Agent, AgentConfig, ModelClient
    from simulator.session import Session  # loaded as the session opens (issue 29)
    from widgets.app import RepoSimApp


def wire_agent(
    session: Session, config: AgentConfig | None
) -> tuple[Agent | None, Callable[[], Awaitable[Agent]]]:
    """The UI's agent: built now when `config` has a model client, and a way to connect one
    from the environment ($REPOSIM_MODEL, through litellm, loaded in a thread: it takes seconds)
    when the person gives a task without one. ModelConfigError, one sentence, if none is set."""

    def build(client: ModelClient) -> Agent:
        # simulator.agent loads here, not before the UI's first frame (issue 29)
        from simulator.agent import Agent, AgentConfig

        chosen = config or AgentConfig()
        return Agent(session, client, mode=chosen.mode, budgets=chosen.budgets)

    async def connect() -> Agent:
        from simulator.agent import litellm_client

        return build(await asyncio.to_thread(litellm_client, None))

    return (
        build(config.client) if config is not None and config.client is not None else None
    ), connect


def freeze_loaded() -> None:
    """Take what is loaded so far (the modules, their classes and tables: nearly all of the
    heap at this point, and kept for the life of the process) out of the garbage collector's
    reach (`gc.freeze`). Otherwise the full collection that drawing the first frame sets off
    walks all of it: measured 25 ms of CPU, of ~50 ms the collector took before the first
    frame (a bare Textual app: 20 ms, no full collection; issue 29). Cyclic garbage already
    made by the imports is kept too: a one-time few kB."""
    gc.freeze()


@contextlib.contextmanager
def loading_ui() -> Iterator[None]:
    """The block imports the UI (Textual and our widgets) with the garbage collector paused,
    then freezes what is loaded (see freeze_loaded). Module imports make objects that live as
    long as the process, so the collections they set off find next to nothing: the pause took
    the import of widgets.app after the CLI's from 156 to 139 ms of CPU (medians of 6, load
    ~8), and a full collection afterwards finds 16 unreachable objects (5 without the pause)
    (issue 29)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        freeze_loaded()
        if enabled:
            gc.enable()


class UiEnding:
    """Why the session a UI ran on closes: "closed", unless the UI failed or was interrupted."""

    def __init__(self) -> None:
        self.reason = "closed"

    def ui_ended(self, return_code: int | None) -> None:
        """The app has returned with `return_code` (non-zero: it stopped on an exception)."""
        if return_code:
            self.reason = "error: the UI stopped on an unexpected exception"


@contextlib.asynccontextmanager
async def closing_after_ui(session: Session) -> AsyncIterator[UiEnding]:
    """Closes `session` when the block ends, with the reason the UI ended for: an exception
    out of the block (re-raised) is "interrupted"."""
    ending = UiEnding()
    try:
        yield ending
    except BaseException:
        ending.reason = "interrupted"
        raise
    finally:
        await session.close(ending.reason)


async def run_ui(
    session: Session | Awaitable[Session],
    *,
    theme: str | None = None,
    agent_config: AgentConfig | None = None,
    source: Path | None = None,
) -> Session:
    """Run the UI on `session` until the person quits, then close the session; return it.

    `session` may still be opening (an awaitable): the UI's modules load in a thread meanwhile,
    which takes a good part off the cold start (starting a backend is mostly waiting on
    processes). If opening fails there is no session to close, and the error propagates.

    With `source` (the directory the session's workspace starts as: not for a resumed one),
    a `session` still opening (a coroutine) is started only after the UI's first frame, which
    shows the tree of `source` read from the disk (see widgets.app.Opening; issue 29).
    """
    if source is not None and inspect.iscoroutine(session):
        return await _run_while_opening(session, source, theme=theme, agent_config=agent_config)
    ui_loading = asyncio.create_task(asyncio.to_thread(importlib.import_module, "widgets.app"))
    try:
        opened = await session if inspect.isawaitable(session) else session
    finally:
        await ui_loading
    from widgets.app import RepoSimApp  # loaded above, in the thread: this is a lookup

    freeze_loaded()

    async with closing_after_ui(opened) as ending:
        agent, connect = wire_agent(opened, agent_config)
        app = RepoSimApp(
            opened,
            theme_name=theme,
            agent_config=agent_config,
            agent=agent,
            connect_agent=connect,
        )
        await app.run_async()
        await _after_ui(app, opened, ending)
    return opened


async def _run_while_opening(
    session: Coroutine[object, object, Session],
    source: Path,
    *,
    theme: str | None,
    agent_config: AgentConfig | None,
) -> Session:
    """run_ui with the app started before the session opens (the app starts it)."""
    with loading_ui():
        from widgets.app import Opening, RepoSimApp

    started: list[asyncio.Future[Session]] = []

    def start() -> asyncio.Future[Session]:
        if not started:
            started.append(asyncio.ensure_future(session))
        return started[0]

    app = RepoSimApp(
        Opening(source, start, agent=lambda opened: wire_agent(opened, agent_config)),
        theme_name=theme,
        agent_config=agent_config,
    )
    try:
        await app.run_async()
    except BaseException:
        if started:  # interrupted: the session, once open, closes with that reason
            with contextlib.suppress(Exception):
                await (await started[0]).close("interrupted")
        else:
            session.close()
        raise
    # Quit at the first frame, before the app started it: opened now, to end as a session
    # does (its trajectory closed, its path said), as when the UI waited for it.
    opened = await start()  # its error, if it failed: there is then no session to close
    async with closing_after_ui(opened) as ending:
        await _after_ui(app, opened, ending)
    return opened


async def _after_ui(app: RepoSimApp, opened: Session, ending: UiEnding) -> None:
    """Once the person quit: the app's workers wound down, the changes kept if asked (said on
    stderr, now that the UI no longer draws over it), the session told how the UI ended."""
    await _wind_down(app.workers)
    kept = await keep_changes(opened)
    ending.ui_ended(app.return_code)
    if kept:
        print(f"reposim: {kept}", file=sys.stderr)


async def _wind_down(workers: Iterable[Worker[object]], limit: float = 30.0) -> None:
    """Let the workers the app cancelled as it closed finish their cleanup (a workflow records
    its end and puts back what it changed, perf closes its two sessions) before the session
    they work in is closed."""
    tasks = [asyncio.ensure_future(worker.wait()) for worker in workers if worker.is_running]
    if tasks:
        done, pending = await asyncio.wait(tasks, timeout=limit)
        for task in pending:
            task.cancel()
        for task in done:
            task.exception()  # cancelled or failed as the app closed: nothing to report


async def keep_changes(session: Session) -> str | None:
    """Write the session's changes since its start to `kept_changes_path` before its scratch copy
    goes; the sentence to tell the person, or None (nothing changed, in place, or no git).
    Copying the files back instead would change the person's checkout unasked, maybe over edits
    they made there meanwhile; a patch changes nothing and `git apply` says if it conflicts."""
    from simulator.session import SessionError
    from widgets.app import kept_changes_path

    path = kept_changes_path(session)
    if path is None or session.closed:
        return None
    try:
        patch = await session.diff()
    except SessionError:  # no git in the backend: there is no baseline to diff against
        return None
    text, binary = text_changes(patch)
    if not text.strip():
        return None
    path.write_text(text)
    message = (
        f"the session's changes are kept in {path}; "
        f"`git apply {path}` in {session.source} applies them."
    )
    if binary:
        shown = ", ".join(binary[:3]) + (f" and {len(binary) - 3} more" if len(binary) > 3 else "")
        message += f" Binary files are left out: {shown}."
    return message


def text_changes(patch: str) -> tuple[str, list[str]]:
    """The patch without its binary files (their diff has no content, so `git apply` would
    refuse the whole patch: caches like __pycache__ are the usual ones), and their paths."""
    kept, binary = [], []
    for block in re.split(r"(?m)^(?=diff --git )", patch):
        if re.search(r"(?m)^(Binary files .* differ|GIT binary patch)$", block):
            header = re.match(r"diff --git a/(.*) b/", block)
            binary.append(header.group(1) if header else "?")
        else:
            kept.append(block)
    return "".join(kept), binary
