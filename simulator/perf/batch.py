"""Comparisons in batch: (repo, api, A, B) rows through the one batch layer (simulator.batch).

Each row is a `Task`; `compare_task` runs one comparison in a batch worker and returns its
result as a dict, so the batch's ResultStore holds every finished comparison and a rerun
resumes after the last one. Timing runs one at a time (`jobs=1`): two comparisons at once
would compete for the CPU and each would measure the other.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from simulator.batch import BatchProgress, BatchSummary, ResultStore, Task, TaskFailure, run_batch
from simulator.perf.compare import CompareRequest, MeasureSettings, compare
from simulator.workflow import WorkflowFailure

ROW_FIELDS = ("repo", "api", "a", "b")


class RowsError(Exception):
    """A rows file that cannot be used; the message is one clear sentence."""


def read_rows(path: Path) -> list[dict[str, str]]:
    """Rows from a CSV (header repo,api,a,b; `command` instead of api also works) or JSONL."""
    if not path.is_file():
        raise RowsError(f"{path} is not a file.")
    text = path.read_text()
    rows: list[dict[str, str]] = []
    if path.suffix in (".jsonl", ".json"):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                raise RowsError(f"Line {number} of {path} is not JSON.") from None
            if not isinstance(data, dict):
                raise RowsError(f"Line {number} of {path} is not a JSON object.")
            rows.append({str(k): str(v) for k, v in data.items() if v is not None})
    else:
        rows = [dict(row) for row in csv.DictReader(text.splitlines())]
    for number, row in enumerate(rows, start=1):
        missing = [f for f in ("repo", "a", "b") if not row.get(f)]
        if not row.get("api") and not row.get("command"):
            missing.append("api")
        if missing:
            raise RowsError(f"Row {number} of {path} has no {', '.join(missing)}.")
    return rows


def row_key(row: dict[str, str]) -> str:
    if row.get("key"):
        return row["key"]
    target = row.get("api") or row.get("command") or ""
    return f"{row['repo']}:{target}:{row['a']}..{row['b']}"


def tasks_for(
    rows: list[dict[str, str]], out: Path, settings: MeasureSettings, **request: Any
) -> list[Task]:
    tasks = []
    for number, row in enumerate(rows):
        payload = {
            **request,
            **row,
            "settings": settings.to_dict(),
            "out_dir": str(out / f"row-{number:04d}"),
        }
        tasks.append(Task(row_key(row), payload))
    return tasks


def request_of(payload: dict[str, Any]) -> CompareRequest:
    settings = MeasureSettings(**payload.get("settings") or {})
    return CompareRequest(
        repo=Path(payload["repo"]),
        a=payload["a"],
        b=payload["b"],
        api=payload.get("api") or None,
        command=payload.get("command") or None,
        cwd=payload.get("cwd") or None,
        harness=Path(payload["harness"]) if payload.get("harness") else None,
        model=payload.get("model") or None,
        api_base=payload.get("api_base") or None,
        api_key=payload.get("api_key") or None,
        out_dir=Path(payload["out_dir"]),
        settings=replace(settings),
        python=payload.get("python") or None,
        setup=str(payload.get("setup", "")).lower() in ("1", "true", "yes"),
        python_a=payload.get("python_a") or None,
        python_b=payload.get("python_b") or None,
    )


def compare_task(task: Task) -> dict[str, Any]:
    """One comparison in a batch worker: its result, or a TaskFailure saying what stopped it."""
    request = request_of(task.payload)
    try:
        result = asyncio.run(compare(request))
    except WorkflowFailure as exc:
        message = str(exc)
        category = "harness" if "harness" in message or "test" in message else "compare"
        if "check out" in message:
            category = "checkout"
        if "could not be collected" in message:
            category = "collection"
        raise TaskFailure(message, category=category, evidence=message) from None
    data = result.to_dict()
    data["trajectory"] = result.files["trajectory_b"]
    return data


def run_rows(
    rows: list[dict[str, str]],
    out: Path,
    *,
    settings: MeasureSettings,
    timeout: float | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    **request: Any,
) -> BatchSummary:
    """Every row not already in `out/results.jsonl`, one at a time."""
    return run_batch(
        tasks_for(rows, out, settings, **request),
        compare_task,
        store=ResultStore(out / "results.jsonl"),
        jobs=1,
        timeout=timeout,
        on_progress=on_progress,
    )
