"""Imported first by the batch layer's forkserver (simulator/batch/workers.py `_context`): gives it
the driver's sys.path and main script, which Python 3.11's forkserver means to pass but does not
(it asks the preparation data for `main_path`, which that data calls `init_main_from_path`, and
it never applies `sys_path`). Without them a task module only the main script makes importable
(a script beside its tasks) is silently not preloaded, and every task's process runs the main
script again.

The driver puts both in `ENV_VAR` just for the forkserver's start; this module takes the
variable out again, so no task or session inherits it.
"""

from __future__ import annotations

import json
import os
import sys

ENV_VAR = "REPOSIM_BATCH_FORKSERVER"


def _setup() -> None:
    raw = os.environ.pop(ENV_VAR, None)
    if not raw:
        return
    data = json.loads(raw)
    sys.path[:] = [str(p) for p in data.get("sys_path") or sys.path]
    main = data.get("main")
    if main:
        from multiprocessing import process, spawn

        # As multiprocessing imports the main script for spawn: as __mp_main__, with the guard
        # `if __name__ == "__main__"` keeping its program from running. Task processes then
        # find it in place and do not run it again.
        process.current_process()._inheriting = True  # type: ignore[attr-defined]
        try:
            spawn.import_main_path(main)
        finally:
            del process.current_process()._inheriting  # type: ignore[attr-defined]


_setup()
