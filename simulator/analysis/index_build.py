"""Building a `CodeIndex` from texts without freezing the event loop that awaits it.

Two things used to stall the loop (the UI) while the editor indexed a stdlib-sized workspace,
though the parsing already ran in a worker thread: the parser holds the GIL for a whole file,
and, far worse, Python's full garbage collections. The index is hundreds of thousands of
container objects; each time the heap grows by a quarter, a full collection walks all of them
with the GIL held, whichever thread allocated last, and the last ones took 0.5–1 s.

So:
- files are parsed in worker processes (`fork`: they start at once and import nothing), which
  send back each file's records pickled without the source the parent already holds;
- the event loop unpickles them a file at a time and yields between files;
- full collections are deferred while a build runs, then the surviving objects (the index
  above all) are moved to the permanent generation (`gc.freeze`), so no later collection walks
  them again. The records hold no reference cycles: when an index is dropped (a rebuild),
  reference counting frees them all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor

from simulator.analysis.c_macros import MacroTable
from simulator.analysis.languages import lang_of
from simulator.analysis.model import FileRecord
from simulator.analysis.project import default_workers, extract_source, header_macros, module_names

# Below this much source, a worker thread is quicker than starting processes, and the records
# are too few for a full collection to be felt.
PARALLEL_MIN_BYTES = 2_000_000
# Source sent to a worker per task: large enough that the round trip is noise, small enough
# that both workers stay busy to the end.
TASK_BYTES = 256_000
# Thread-path chunks (the parser holds the GIL for a whole file: hand the loop back between).
THREAD_CHUNK_BYTES = 64_000
# Longest the event loop works on received records before it yields to other tasks.
SLICE_SECONDS = 0.005
# ... and then rests that long: a thread that keeps a core busy waits its turn in the run queue
# at each wake-up on a loaded machine (tens of ms), one that works half the time does not.
PAUSE_SECONDS = 0.005
WORKER_NICENESS = 10
PARENT_POLL_SECONDS = 0.5
IN_FLIGHT_PER_WORKER = 3

PROTOCOL = pickle.HIGHEST_PROTOCOL
Job = tuple[str, bytes, str, bool]  # (path, source, module, is_package)

_macros: MacroTable | None = None  # set in each worker by the pool's initializer


def _init_worker(macros: MacroTable | None, parent: int, piece_items: int) -> None:
    global _macros, _piece_items
    _macros = macros
    _piece_items = piece_items
    # Background work: the UI process that waits for it comes first on a busy machine. Linux
    # schedules by session ("autogroup") before it looks at nice values: in the UI's session,
    # two busy workers made the whole group CPU-bound, and the UI's event loop waited 40-70 ms
    # in the run queue at each wake-up. A session of their own keeps the UI's group idle.
    with contextlib.suppress(OSError):
        os.setsid()
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    # Out of the UI's session, Ctrl+C no longer reaches the workers: leave with the parent.
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


PIECE_ITEMS = 64  # functions (or classes, ...) per pickled piece of a file's record
_piece_items = PIECE_ITEMS  # in a worker, the parent's PIECE_ITEMS
PIECED = ("functions", "classes", "globals", "imports")

Compact = tuple[str, list[bytes]]  # (path, [pickled record shell, pickled pieces...])


def _extract_compact(jobs: list[Job]) -> list[Compact]:
    """In a worker: each file's record, pickled without its source (the parent has it) and in
    pieces of `PIECE_ITEMS` items, so that no single unpickling holds the parent's GIL long."""
    out = []
    for path, source, module, is_package in jobs:
        record = extract_source(path, source, module, is_package, _macros)
        record.source = b""
        pieces = []
        lists = {name: getattr(record, name) for name in PIECED}
        for name in PIECED:
            setattr(record, name, [])
        for name, items in lists.items():
            for start in range(0, len(items), _piece_items):
                pieces.append(pickle.dumps((name, items[start : start + _piece_items]), PROTOCOL))
        out.append((path, [pickle.dumps(record, PROTOCOL), *pieces]))
    return out


def _tasks(jobs: list[Job], size: int) -> Iterator[list[Job]]:
    task: list[Job] = []
    total = 0
    for job in jobs:
        task.append(job)
        total += len(job[1])
        if total >= size:
            yield task
            task, total = [], 0
    if task:
        yield task


_deferring = 0
_saved_threshold: tuple[int, int, int] | None = None


@contextlib.contextmanager
def full_collections_deferred() -> Iterator[None]:
    """No full garbage collection inside; on leaving (the outermost one), collect the young
    generations and freeze what survives, so later full collections never walk it."""
    global _deferring, _saved_threshold
    if _deferring == 0:
        _saved_threshold = gc.get_threshold()
        young, middle, _ = _saved_threshold
        gc.set_threshold(young, middle, 1 << 30)
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if _deferring == 0 and _saved_threshold is not None:
            gc.set_threshold(*_saved_threshold)
            _saved_threshold = None
            gc.collect(1)
            gc.freeze()


def thaw() -> None:
    """Hand the frozen objects back to the collector: objects in reference cycles (a closed
    app's widgets, and the index they held) are only freed once thawed. Called when the pane
    that owns an index goes away; the next full collection walks them once more."""
    if _deferring == 0:
        gc.unfreeze()


async def extract_records(
    texts: Mapping[str, bytes], *, parallel: bool | None = None, workers: int | None = None
) -> dict[str, FileRecord]:
    """{path: record} for every Python/C path of `texts`, in the order of `texts`; the same
    records `CodeIndex.from_texts(texts)` holds. `parallel` None: processes when the texts
    are big enough to gain from them."""

    def prepare() -> tuple[list[Job], MacroTable]:
        paths = [p for p in texts if lang_of(p) is not None]
        names = module_names(paths)
        jobs: list[Job] = [(p, texts[p], *names.get(p, ("", False))) for p in paths]
        return jobs, header_macros(texts)

    jobs, macros = await asyncio.to_thread(prepare)
    workers = default_workers() if workers is None else workers
    if parallel is None:
        parallel = workers > 1 and sum(len(t) for t in texts.values()) >= PARALLEL_MIN_BYTES
    with full_collections_deferred():
        if parallel:
            records = await _in_processes(jobs, texts, macros, max(1, workers))
        else:
            records = await _in_threads(jobs, macros)
    return {path: records[path] for path in texts if path in records}


async def _in_threads(jobs: list[Job], macros: MacroTable) -> dict[str, FileRecord]:
    def extract(batch: list[Job]) -> list[FileRecord]:
        return [extract_source(p, s, m, pkg, macros) for p, s, m, pkg in batch]

    records: dict[str, FileRecord] = {}
    for batch in _tasks(jobs, THREAD_CHUNK_BYTES):
        records.update((r.path, r) for r in await asyncio.to_thread(extract, batch))
    return records


async def _in_processes(
    jobs: list[Job], texts: Mapping[str, bytes], macros: MacroTable, workers: int
) -> dict[str, FileRecord]:
    # fork: workers start at once and never re-import the caller's __main__ (spawn would, and
    # run a script without a main guard again); they only run tree-sitter on the bytes they
    # are sent, so no lock held by a thread of the parent (the UI's) matters to them. The
    # fork itself stops the event loop while the page tables are copied (tens of ms).
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    loop = asyncio.get_running_loop()
    records: dict[str, FileRecord] = {}
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(macros, os.getpid(), PIECE_ITEMS),
    )
    try:
        # A few tasks per worker in flight, not all of them: submitting ~100 tasks at once
        # (with the forks) was one of the longest stops of the loop.
        tasks = _tasks(jobs, TASK_BYTES)
        futures: deque[asyncio.Future[list[Compact]]] = deque()

        def submit() -> None:
            task = next(tasks, None)
            if task is not None:
                futures.append(loop.run_in_executor(pool, _extract_compact, task))

        for _ in range(IN_FLIGHT_PER_WORKER * workers):
            submit()
        started = time.perf_counter()
        while futures:
            done = await futures.popleft()
            submit()
            for path, (shell, *pieces) in done:
                record: FileRecord = pickle.loads(shell)
                record.source = texts[path]
                records[path] = record
                for piece in pieces:
                    if time.perf_counter() - started >= SLICE_SECONDS:
                        await asyncio.sleep(PAUSE_SECONDS)
                        started = time.perf_counter()
                    name, items = pickle.loads(piece)
                    getattr(record, name).extend(items)
                if time.perf_counter() - started >= SLICE_SECONDS:
                    await asyncio.sleep(PAUSE_SECONDS)
                    started = time.perf_counter()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return records
