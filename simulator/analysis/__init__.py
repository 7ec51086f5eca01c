"""Code analysis with tree-sitter, for Python and C: functions, call graph, dependency slices.

Public API:
- `CodeIndex`: build from a directory or from texts, `update`/`remove` files, then `outline`,
  `definition_at`, `callers`, `callees`, `find`, `slice`.
- `CallGraph`, `Slicer`, `FilterSpec`/`FILTERS` for batch extraction (`reposim extract`).
"""

from simulator.analysis.filters import FILTERS, PRESETS, FilterSpec
from simulator.analysis.graph import CallGraph, Edge, Target
from simulator.analysis.index import CallRef, CodeIndex
from simulator.analysis.model import (
    CallSite,
    ClassRecord,
    FileRecord,
    FunctionRecord,
    GlobalRecord,
    ImportRecord,
    Lang,
    Location,
    Symbol,
)
from simulator.analysis.slicing import Piece, Slice, Slicer

__all__ = [
    "FILTERS",
    "PRESETS",
    "CallGraph",
    "CallRef",
    "CallSite",
    "ClassRecord",
    "CodeIndex",
    "Edge",
    "FileRecord",
    "FilterSpec",
    "FunctionRecord",
    "GlobalRecord",
    "ImportRecord",
    "Lang",
    "Location",
    "Piece",
    "Slice",
    "Slicer",
    "Symbol",
    "Target",
]
