"""The `reposim.extract/1` JSON records (documented in docs/extract-schema.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from simulator import __version__
from simulator.analysis.code_text import definition_text
from simulator.analysis.filters import FilterSpec
from simulator.analysis.index import CodeIndex
from simulator.analysis.model import FileRecord, FunctionRecord
from simulator.analysis.slicing import Slicer

SCHEMA = "reposim.extract/1"


class ContextMode(StrEnum):
    SLICED = "sliced"  # the dependency slice, cut to the budget
    FULL = "full"  # the whole file the function is in
    NONE = "none"


@dataclass
class ExtractOptions:
    filters: FilterSpec = field(default_factory=FilterSpec)
    context: ContextMode = ContextMode.SLICED
    budget: int | None = 4000


def file_record(record: FileRecord) -> dict[str, Any]:
    return {
        "path": record.path,
        "lang": str(record.lang),
        "module": record.module or None,
        "lines": record.lines,
        "has_errors": record.has_errors,
        "errors": [{"line": line, "col": col} for line, col in record.errors],
        "functions": len(record.functions),
    }


def function_record(index: CodeIndex, fn: FunctionRecord) -> dict[str, Any]:
    graph = index.graph
    record = index.files[fn.path]
    return {
        "id": fn.id,
        "lang": str(fn.lang),
        "path": fn.path,
        "name": fn.name,
        "qualname": fn.qualname,
        "kind": fn.kind,
        "class": fn.class_qualname,
        "parent": fn.parent_qualname,
        "span": {
            "start_line": fn.start_line,
            "def_line": fn.def_line,
            "end_line": fn.end_line,
            "start_byte": fn.start_byte,
            "end_byte": fn.end_byte,
        },
        "signature": fn.signature,
        "params": fn.params,
        "return_type": fn.return_type,
        "docstring": fn.docstring,
        "decorators": fn.decorators,
        "is_async": fn.is_async,
        "is_static": fn.is_static,
        "in_error": fn.in_error,
        "metrics": {
            "lines": fn.lines,
            "statements": fn.statements,
            "code_lines": fn.code_lines,
            "branches": fn.branches,
            "returns": fn.returns,
            "value_returns": fn.value_returns,
            "literal_returns": fn.literal_returns,
            "yields": fn.yields,
        },
        "body": definition_text(record, fn.start_byte, fn.end_byte),
        "calls": [edge.as_dict() for edge in graph.callees(fn.id)],
        "called_by": [
            {"caller": edge.caller, "line": edge.line, "col": edge.col}
            for edge in graph.callers(fn.id)
        ],
    }


@dataclass
class Extraction:
    """Selected functions of an index, rendered as `reposim.extract/1` records."""

    index: CodeIndex
    root: str
    languages: list[str]
    options: ExtractOptions
    slicer: Slicer | None = None

    def header(self) -> dict[str, Any]:
        from simulator.analysis.tokens import token_counter

        return {
            "schema": SCHEMA,
            "root": self.root,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "reposim_version": __version__,
            "languages": self.languages,
            "filters": self.options.filters.as_dict(),
            "context": str(self.options.context),
            "budget": self.options.budget,
            "token_counter": token_counter()[0],
        }

    def selected(self) -> list[FunctionRecord]:
        files = self.index.files
        graph = self.index.graph
        spec = self.options.filters
        return [fn for fn in self.index.functions() if spec.accepts(fn, files[fn.path], graph)]

    def record(self, fn: FunctionRecord) -> dict[str, Any]:
        out = function_record(self.index, fn)
        mode = self.options.context
        if mode is ContextMode.FULL:
            record = self.index.files[fn.path]
            out["context"] = {
                "mode": "full",
                "path": fn.path,
                "text": record.text(0, len(record.source)),
            }
        elif mode is ContextMode.SLICED:
            if self.slicer is None:
                self.slicer = Slicer(self.index.graph)
            out["context"] = {
                "mode": "sliced",
                **self.slicer.slice(fn.id, self.options.budget).as_dict(),
            }
        else:
            out["context"] = None
        return out

    def summary(self, selected: int, seconds: float) -> dict[str, Any]:
        files = self.index.files.values()
        edges = [e for es in self.index.graph.edges.values() for e in es]
        return {
            "files": len(self.index.files),
            "files_with_errors": sorted(f.path for f in files if f.has_errors),
            "functions": sum(len(f.functions) for f in files),
            "selected": selected,
            "calls": len(edges),
            "resolved_calls": sum(e.target is not None for e in edges),
            "seconds": round(seconds, 3),
        }

    def records(self, functions: list[FunctionRecord]) -> Iterator[dict[str, Any]]:
        for fn in functions:
            yield self.record(fn)
