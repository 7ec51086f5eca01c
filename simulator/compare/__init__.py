"""Trajectories side by side: runs of one task aligned step by step (`compare_files`), and
full-text search across a folder of them (`search_folder`). No Textual here."""

from simulator.compare.compare import Comparison, Row, RowState, compare_files, compare_runs
from simulator.compare.runs import Run, Step, read_run
from simulator.compare.search import Hit, Unreadable, search_file, search_folder

__all__ = [
    "Comparison",
    "Hit",
    "Row",
    "RowState",
    "Run",
    "Step",
    "Unreadable",
    "compare_files",
    "compare_runs",
    "read_run",
    "search_file",
    "search_folder",
]
