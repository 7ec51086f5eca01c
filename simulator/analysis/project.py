"""Finding source files under a root, naming Python modules, extracting files (in parallel)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path, PurePosixPath

import pathspec

from simulator.analysis.c_lang import extract_c
from simulator.analysis.c_macros import MacroTable, collect
from simulator.analysis.languages import lang_of
from simulator.analysis.model import FileRecord, Lang
from simulator.analysis.python_lang import extract_python
from simulator.workspace import skipped_dir

# Below this much source, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 4_000_000
CHUNK_BYTES = 1_000_000


def discover(root: Path, langs: Collection[Lang] = (Lang.PYTHON, Lang.C)) -> list[str]:
    """Source files under root (relative posix paths, sorted), honouring the root .gitignore."""
    ignore = None
    gitignore = root / ".gitignore"
    if gitignore.is_file():
        ignore = pathspec.PathSpec.from_lines(
            "gitwildmatch", gitignore.read_text(errors="replace").splitlines()
        )
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not skipped_dir(d)
            and not (ignore is not None and ignore.match_file(f"{rel_dir}/{d}/".lstrip("/")))
        )
        for name in filenames:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            lang = lang_of(name)
            if lang is None or lang not in langs:
                continue
            if ignore is not None and ignore.match_file(rel):
                continue
            found.append(rel)
    found.sort()
    return found


def module_names(paths: Iterable[str]) -> dict[str, tuple[str, bool]]:
    """Python file -> (dotted module name, is a package), walking up through `__init__.py`s."""
    py = [p for p in paths if lang_of(p) is Lang.PYTHON]
    present = set(py)
    out: dict[str, tuple[str, bool]] = {}
    for rel in py:
        pure = PurePosixPath(rel)
        is_package = pure.stem == "__init__"
        parts = [] if is_package else [pure.stem]
        parent = pure.parent
        while str(parent) != "." and f"{parent}/__init__.py" in present:
            parts.insert(0, parent.name)
            parent = parent.parent
        if not parts:  # an __init__.py outside any package: name it after its directory
            parts = [pure.parent.name or "__init__"]
        out[rel] = (".".join(parts), is_package)
    return out


def extract_source(
    rel: str,
    source: bytes,
    module: str = "",
    is_package: bool = False,
    macros: MacroTable | None = None,
) -> FileRecord:
    """Extract one file; `macros` are the repository's C macros (`header_macros`)."""
    lang = lang_of(rel)
    if lang is Lang.PYTHON:
        return extract_python(rel, source, module or PurePosixPath(rel).stem, is_package)
    if lang is Lang.C:
        return extract_c(rel, source, macros)
    raise ValueError(f"{rel} is neither a Python nor a C file.")


def header_macros(texts: Mapping[str, bytes]) -> MacroTable:
    """The macro table of the repository's C headers (a .c file adds its own when extracted)."""
    return collect(text for path, text in texts.items() if path.endswith(".h"))


Job = tuple[str, str, str, bool]  # (absolute path, relative path, module, is_package)


def _extract_jobs(jobs: list[Job], macros: MacroTable | None = None) -> list[FileRecord]:
    out: list[FileRecord] = []
    for absolute, rel, module, is_package in jobs:
        try:
            source = Path(absolute).read_bytes()
        except OSError:
            continue  # vanished or unreadable since discovery: nothing to extract
        out.append(extract_source(rel, source, module, is_package, macros))
    return out


def _chunks(jobs: list[Job], sizes: list[int]) -> Iterator[list[Job]]:
    chunk: list[Job] = []
    total = 0
    for job, size in zip(jobs, sizes, strict=True):
        chunk.append(job)
        total += size
        if total >= CHUNK_BYTES:
            yield chunk
            chunk, total = [], 0
    if chunk:
        yield chunk


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def extract_tree(
    root: Path,
    paths: list[str],
    *,
    workers: int | None = None,
    on_file: Callable[[FileRecord], None] | None = None,
) -> list[FileRecord]:
    """Extract every path under root; on_file is called as each file is done (for progress)."""
    names = module_names(paths)
    jobs: list[Job] = [(str(root / rel), rel, *names.get(rel, ("", False))) for rel in paths]
    sizes = []
    for rel in paths:
        try:
            sizes.append((root / rel).stat().st_size)
        except OSError:
            sizes.append(0)
    workers = default_workers() if workers is None else workers
    records: list[FileRecord] = []
    headers: dict[str, bytes] = {}
    for rel in paths:
        if rel.endswith(".h"):
            try:
                headers[rel] = (root / rel).read_bytes()
            except OSError:
                continue
    macros = header_macros(headers)

    def gather(batch: list[FileRecord]) -> None:
        for rec in batch:
            records.append(rec)
            if on_file is not None:
                on_file(rec)

    if workers <= 1 or sum(sizes) < PARALLEL_MIN_BYTES:
        for chunk in _chunks(jobs, sizes):
            gather(_extract_jobs(chunk, macros))
    else:
        # fork: workers start in milliseconds and never re-import the caller's __main__
        # (forkserver/spawn would, which breaks scripts without a main guard). The workers
        # only read files and run tree-sitter, so no lock held by a parent thread matters.
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            chunks = list(_chunks(jobs, sizes))
            for batch in pool.map(_extract_jobs, chunks, [macros] * len(chunks)):
                gather(batch)
    records.sort(key=lambda r: r.path)
    return records
