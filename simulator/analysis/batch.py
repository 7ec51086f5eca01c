"""Extraction over many repositories through the batch layer: one task a repository, each
written as JSON lines (header, files, functions, summary) to its own file in an output folder."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from simulator.analysis.export import ContextMode, Extraction, ExtractOptions, file_record
from simulator.analysis.filters import FilterSpec
from simulator.analysis.index import CodeIndex
from simulator.analysis.model import Lang
from simulator.analysis.project import discover, extract_tree
from simulator.batch import Task, TaskFailure


def extraction_task(repo: Path, out_dir: Path, options: dict[str, Any]) -> Task:
    """A task for `extract_repository`; its key is the repository's path."""
    name = f"{repo.name}.jsonl"
    return Task(
        str(repo),
        {"repo": str(repo), "output": str(out_dir / name), **options},
    )


def extract_repository(task: Task) -> dict[str, Any]:
    """Extract one repository to its JSON lines file; the summary is the task's result."""
    payload = task.payload
    root = Path(payload["repo"])
    if not root.is_dir():
        raise TaskFailure(f"{root} is not a directory.", category="missing")
    langs = [Lang(x) for x in payload.get("langs", ["python", "c"])]
    filters = payload.get("filters") or []
    spec = FilterSpec.parse(tuple(filters)) if filters else FilterSpec.default()
    options = ExtractOptions(
        filters=spec,
        context=ContextMode(payload.get("context", ContextMode.SLICED)),
        budget=int(payload.get("budget", 2000)),
    )
    started = time.perf_counter()
    paths = discover(root, langs)
    if not paths:
        raise TaskFailure(
            f"no {' or '.join(str(x) for x in langs)} files under {root}.", category="no-sources"
        )
    records = extract_tree(root, paths, workers=1)
    extraction = Extraction(
        CodeIndex({r.path: r for r in records}), str(root), [str(x) for x in langs], options
    )
    selected = extraction.selected()
    output = Path(payload["output"])
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_suffix(".jsonl.part")
    with partial.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "header", **extraction.header()}) + "\n")
        for record in records:
            out.write(json.dumps({"type": "file", **file_record(record)}) + "\n")
        for item in extraction.records(selected):
            out.write(json.dumps({"type": "function", **item}, ensure_ascii=False) + "\n")
        summary = extraction.summary(len(selected), time.perf_counter() - started)
        out.write(json.dumps({"type": "summary", **summary}) + "\n")
    partial.replace(output)  # a killed task leaves no half-written output under the real name
    return {
        "output": str(output),
        "files": summary["files"],
        "functions": summary["functions"],
        "selected": summary["selected"],
        "files_with_errors": len(summary["files_with_errors"]),
    }
