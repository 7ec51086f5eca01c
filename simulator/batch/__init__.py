"""One batch layer for every workflow: tasks, isolated workers, an append-only results store."""

from simulator.batch.runner import (
    BatchProgress,
    BatchSummary,
    InfrastructureError,
    Task,
    TaskFailure,
    TaskFunction,
    default_jobs,
    run_batch,
)
from simulator.batch.store import ResultStore, StoreError, TaskRecord, TaskStatus

__all__ = [
    "BatchProgress",
    "BatchSummary",
    "InfrastructureError",
    "ResultStore",
    "StoreError",
    "Task",
    "TaskFailure",
    "TaskFunction",
    "TaskRecord",
    "TaskStatus",
    "default_jobs",
    "run_batch",
]
