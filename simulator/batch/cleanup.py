"""After a task's worker is killed, remove what its sessions left on this node.

A task killed for its time limit, or whose worker died, had no chance to close its sessions:
its local scratch workspace and private dir, or its containers, stay behind. They are marked
with their owner process, which is now gone, so the same collection `reposim gc` does removes
exactly them (and anything else whose owner is gone), never a live session's.
"""

from __future__ import annotations

import contextlib

from backends.base import BackendError
from backends.local import collect_local_garbage
from simulator.paths import workspaces_dir


def collect_leftovers() -> int:
    """Remove orphaned local workspaces and Docker containers on this machine; how many."""
    removed = sum(item.removed for item in collect_local_garbage(workspaces_dir()))
    with contextlib.suppress(BackendError, ImportError):
        from backends.docker_engine import collect_garbage, connect

        client = connect(timeout=10)
        try:
            removed += sum(item.removed for item in collect_garbage(client))
        finally:
            client.close()
    return removed
