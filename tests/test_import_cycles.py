"""No import cycles among the project's modules (issue 30).

import-linter's contracts check the layers (reposim -> widgets -> simulator -> backends); this
checks inside them: no module may reach itself through its imports, counting imports made
inside functions and under TYPE_CHECKING (a cycle deferred to run time, or to the type checker,
is still two modules that each need the other). grimp (import-linter's own graph) reads the
imports; each strongly connected component of more than one module is a cycle.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reposim", "simulator", "backends", "widgets", "themes")
# A sample repository shipped as data (ruff and mypy leave it out too), not project code.
NOT_CODE = (ROOT / "simulator" / "demo_repo",)


def import_cycles(*packages: str) -> list[list[str]]:
    """Each set of modules that import each other (directly or through others), sorted; with
    one import line of each edge inside the set, as `a -> b (line N)`."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    imports = {
        module: sorted(set(graph.find_modules_directly_imported_by(module)) & graph.modules)
        for module in graph.modules
    }
    cycles = []
    for component in _strongly_connected(imports):
        if len(component) < 2:
            continue
        members = set(component)
        edges = []
        for importer in sorted(members):
            for imported in imports[importer]:
                if imported in members:
                    details = graph.get_import_details(importer=importer, imported=imported)
                    lines = ", ".join(str(d["line_number"]) for d in details)
                    edges.append(f"{importer} -> {imported} (line {lines})")
        cycles.append(edges)
    return sorted(cycles)


def _strongly_connected(imports: dict[str, list[str]]) -> Iterable[list[str]]:
    """Tarjan's algorithm, iterative (a deep import chain must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(imports):
        if root in index:
            continue
        work = [(root, iter(imports[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(imports[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                yield sorted(component)


def test_every_source_folder_is_a_regular_package() -> None:
    """grimp skips namespace packages: a folder of modules without __init__.py would be
    invisible to this test and to import-linter's contracts alike."""
    missing = [
        str(folder.relative_to(ROOT))
        for package in PACKAGES
        for folder in sorted((ROOT / package).rglob("*"))
        if folder.is_dir()
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
        and not any(folder.is_relative_to(skip) for skip in NOT_CODE)
    ]
    assert missing == []


def test_no_import_cycles() -> None:
    cycles = import_cycles(*PACKAGES)
    assert cycles == [], "import cycles:\n" + "\n\n".join("\n".join(c) for c in cycles)


def test_a_cycle_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check sees cycles through function-level and TYPE_CHECKING imports, and none where
    imports only point one way."""
    package = tmp_path / "cyclic_sample"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f() -> None:\n    from cyclic_sample import high\n")
    (package / "high.py").write_text("from cyclic_sample import low\n")
    (package / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic_sample import leaf\n"
    )
    (package / "leaf.py").write_text("from cyclic_sample import typed\n")
    (package / "alone.py").write_text("from cyclic_sample import leaf\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        cycles = import_cycles("cyclic_sample")
    finally:
        sys.modules.pop("cyclic_sample", None)
    assert cycles == [
        [
            "cyclic_sample.high -> cyclic_sample.low (line 1)",
            "cyclic_sample.low -> cyclic_sample.high (line 2)",
        ],
        [
            "cyclic_sample.leaf -> cyclic_sample.typed (line 1)",
            "cyclic_sample.typed -> cyclic_sample.leaf (line 3)",
        ],
    ]
