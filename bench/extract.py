"""Extraction + call graph over the whole Python standard library and two C code bases.

Reference, in the same run: an `ast`-based extraction of the same Python files (parse + walk,
one process, as R2E's pipeline did). Target (issue 7): the whole standard library, functions
and call graph, in <= 10 s wall on this 2-core machine.

C: mypyc's runtime library (real C with function bodies, installed with the dev tools) and a
generated code base whose call graph is known exactly (every generated call must resolve to
the function it was written to call). `--usr-include` adds /usr/include (headers only, large).

Pinned projects (`--pinned DIR ...`, issue 12): for each directory, files with errors,
functions, time, and for Python what `--filter r2e` / `--filter reposim` select and whether each
selected target's sliced context parses (`ast.parse` of every file text) and, for methods,
holds its class header. Pin a project with
`pip download --no-binary :all: --no-deps python-graphs==1.2.3` and unpack it; the C fixture in
tests/analysis/data/cjs (cJSON's macro style) is always measured. `--pinned-only` skips the
rest.

Run: uv run python bench/extract.py [--workers 2] [--generated-files 400] [--usr-include]
     [--pinned DIR ...] [--pinned-only]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path

from simulator.analysis.ast_reference import ast_functions
from simulator.analysis.graph import CallGraph
from simulator.analysis.model import FileRecord, Lang
from simulator.analysis.project import discover, extract_tree


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def count_lines(root: Path, paths: list[str]) -> int:
    return sum((root / p).read_bytes().count(b"\n") for p in paths)


def run_ours(
    root: Path, paths: list[str], workers: int
) -> tuple[list[FileRecord], CallGraph, dict[str, float]]:
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    records = extract_tree(root, paths, workers=workers)
    t1 = time.perf_counter()
    graph = CallGraph(records)
    t2 = time.perf_counter()
    return (
        records,
        graph,
        {"extract": t1 - t0, "graph": t2 - t1, "total": t2 - t0, "cpu": cpu_seconds() - cpu0},
    )


def graph_line(graph: CallGraph) -> str:
    edges = [e for es in graph.edges.values() for e in es]
    resolved = sum(e.target is not None for e in edges)
    external = sum(1 for e in edges if e.reason and e.reason.startswith("external"))
    return (
        f"{len(edges):,} calls: {resolved:,} resolved to repository code "
        f"({100 * resolved / max(1, len(edges)):.1f}%), {external:,} external "
        f"(builtins, other packages), {len(edges) - resolved - external:,} unresolved "
        "with a reason"
    )


def bench_stdlib(workers: int) -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    paths = [p for p in discover(root, [Lang.PYTHON]) if p.endswith(".py")]
    lines = count_lines(root, paths)
    print(
        f"Python standard library {root}: {len(paths):,} files, {lines:,} lines "
        "(site-packages excluded)"
    )

    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    reference: dict[str, Counter[tuple[str, int]]] = {}
    for rel in paths:
        try:
            reference[rel] = Counter(ast_functions((root / rel).read_bytes()))
        except (SyntaxError, ValueError):
            continue  # test data with deliberate errors: ast has no answer for it
    ast_wall = time.perf_counter() - t0
    ast_cpu = cpu_seconds() - cpu0
    ast_count = sum(sum(c.values()) for c in reference.values())

    records, graph, times = run_ours(root, paths, workers)
    ours_count = sum(len(r.functions) for r in records)
    by_path = {r.path: r for r in records}
    differing = [
        rel
        for rel, expected in reference.items()
        if Counter((f.qualname, f.def_line) for f in by_path[rel].functions) != expected
    ]
    print(
        f"  reference  ast.parse + walk, 1 process:     {ast_wall:6.2f} s wall "
        f"({lines / ast_wall:,.0f} lines/s), {ast_cpu:6.2f} s CPU, "
        f"{ast_count:,} functions (no call graph)"
    )
    print(
        f"  reposim    tree-sitter, {workers} worker(s):        {times['extract']:6.2f} s wall "
        f"({lines / times['extract']:,.0f} lines/s) extraction"
    )
    print(f"             + call graph (1 process):      {times['graph']:6.2f} s")
    print(
        f"             = functions + call graph:      {times['total']:6.2f} s wall "
        f"({lines / times['total']:,.0f} lines/s), {times['cpu']:6.2f} s CPU, "
        f"{ours_count:,} functions   [target <= 10 s wall]"
    )
    print(
        f"  ratio reposim (functions + graph) / ast (functions only): "
        f"{times['total'] / ast_wall:.2f}x wall"
    )
    print(
        f"  same functions as ast: {len(reference) - len(differing):,} of {len(reference):,} "
        f"files that ast parses; differing: {', '.join(differing) or 'none'}"
    )
    flagged = [rel for rel in differing if by_path[rel].has_errors]
    print(
        f"  of those, reported as having syntax errors by tree-sitter: {len(flagged)}"
        f"/{len(differing)}; files ast rejects: {len(paths) - len(reference)}"
    )
    print(f"  {graph_line(graph)}")


def generate_c(root: Path, files: int, functions: int, seed: int = 7) -> dict[str, str]:
    """A C code base with headers; returns {caller id + call index: expected target id}."""
    rng = random.Random(seed)
    expected: dict[str, str] = {}
    (root / "include").mkdir(parents=True)
    (root / "src").mkdir()
    for m in range(files):
        header = [
            f"#ifndef MOD{m}_H",
            f"#define MOD{m}_H",
            f"#define MOD{m}_SIZE {m + 8}",
            f"typedef struct mod{m}_state {{ int count; double total; }} mod{m}_state_t;",
        ]
        header += [f"int mod{m}_f{k}(int x, mod{m}_state_t *s);" for k in range(functions)]
        header.append("#endif")
        (root / "include" / f"mod{m}.h").write_text("\n".join(header) + "\n")
    for m in range(files):
        deps = sorted(rng.sample(range(files), k=min(3, files)))
        src = ["#include <stdio.h>", f'#include "mod{m}.h"']
        src += [f'#include "mod{d}.h"' for d in deps if d != m]
        src.append(f"static int helper{m}(int v) {{ return v * MOD{m}_SIZE; }}")
        for k in range(functions):
            fid = f"src/mod{m}.c::mod{m}_f{k}"
            body = [
                f"/* Function {k} of module {m}. */",
                f"int mod{m}_f{k}(int x, mod{m}_state_t *s) {{",
                "    int acc = 0;",
                "    for (int i = 0; i < x; i++) {",
                "        if (i % 3 == 0 && s != NULL) { s->count++; acc += i; }",
                f"        else {{ acc -= helper{m}(i); }}",
                "    }",
            ]
            expected[f"{fid}#helper{m}"] = f"src/mod{m}.c::helper{m}"
            for d in deps:
                j = rng.randrange(functions)
                if d == m and j >= k:
                    continue
                body.append(f"    acc += mod{d}_f{j}(x - 1, (void *)0);")
                expected[f"{fid}#mod{d}_f{j}"] = f"src/mod{d}.c::mod{d}_f{j}"
            body += ['    printf("%d\\n", acc);', "    return acc;", "}"]
            src += body
        (root / "src" / f"mod{m}.c").write_text("\n".join(src) + "\n")
    return expected


def bench_c(label: str, root: Path, workers: int, expected: dict[str, str] | None = None) -> None:
    paths = discover(root, [Lang.C])
    lines = count_lines(root, paths)
    records, graph, times = run_ours(root, paths, workers)
    functions = sum(len(r.functions) for r in records)
    errors = sum(r.has_errors for r in records)
    print(f"C: {label}: {len(paths):,} files, {lines:,} lines")
    print(
        f"  reposim    {times['total']:6.2f} s wall ({lines / times['total']:,.0f} lines/s; "
        f"extraction {times['extract']:.2f} s + call graph {times['graph']:.2f} s), "
        f"{times['cpu']:.2f} s CPU, {functions:,} functions, {errors} file(s) with errors"
    )
    print(f"  {graph_line(graph)}")
    if expected is not None:
        got: dict[str, str | None] = {}
        for fid, edges in graph.edges.items():
            for edge in edges:
                got[f"{fid}#{edge.expr}"] = edge.target
        right = sum(got.get(k) == v for k, v in expected.items())
        print(
            f"  generated calls resolved to the function they were written to call: "
            f"{right:,}/{len(expected):,}"
        )


def bench_pinned(root: Path, workers: int) -> None:
    """Files with errors, functions and time; for Python, the presets and their contexts."""
    import ast
    import statistics

    from simulator.analysis.filters import FilterSpec
    from simulator.analysis.slicing import Slicer

    paths = discover(root)
    records, graph, times = run_ours(root, paths, workers)
    functions = sum(len(r.functions) for r in records)
    broken = sorted(r.path for r in records if r.has_errors)
    print(f"{root.name}: {len(paths)} files, {count_lines(root, paths):,} lines")
    print(
        f"  extraction + call graph {times['total']:.2f} s, {functions} functions, "
        f"{len(broken)} file(s) with errors{': ' + ', '.join(broken) if broken else ''}"
    )
    by_path = {r.path: r for r in records}
    for preset in ("r2e", "reposim"):
        try:
            spec = FilterSpec.parse([preset])
        except ValueError:
            print(f"  --filter {preset}: not available in this version")
            continue
        selected = [
            graph.functions[f.id]
            for r in records
            for f in r.functions
            if r.lang is Lang.PYTHON and spec.accepts(graph.functions[f.id], by_path[r.path])
        ]
        if not selected:
            print(f"  --filter {preset}: 0 selected")
            continue
        slicer = Slicer(graph)
        texts = failing = methods = headed = 0
        seconds: list[float] = []
        for fn in selected:
            t0 = time.perf_counter()
            context = slicer.slice(fn.id, 4000)
            seconds.append(time.perf_counter() - t0)
            for part in context.files:
                texts += 1
                try:
                    ast.parse(part.text)
                except SyntaxError:
                    failing += 1
            if fn.kind == "method" and fn.class_qualname is not None:
                methods += 1
                header = f"class {fn.class_qualname.rpartition('.')[2]}"
                headed += any(header in part.text for part in context.files)
        print(
            f"  --filter {preset}: {len(selected)} selected ({methods} methods); contexts "
            f"(budget 4000): {texts - failing}/{texts} file texts parse, {headed}/{methods} "
            f"method contexts hold their class header; slicing median "
            f"{statistics.median(seconds) * 1000:.1f} ms, max {max(seconds) * 1000:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--generated-files", type=int, default=400)
    parser.add_argument("--usr-include", action="store_true")
    parser.add_argument("--pinned", nargs="*", default=[], type=Path)
    parser.add_argument("--pinned-only", action="store_true")
    args = parser.parse_args()
    cjs = Path(__file__).resolve().parent.parent / "tests" / "analysis" / "data" / "cjs"
    for pinned in [*args.pinned, cjs]:
        bench_pinned(pinned, args.workers)
        print()
    if args.pinned_only:
        return
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"on {os.cpu_count()} CPUs (shared machine: wall times are noisy, CPU times less so)\n"
    )
    bench_stdlib(args.workers)
    print()
    import mypyc

    bench_c(
        "mypyc lib-rt (real C with bodies)", Path(mypyc.__file__).parent / "lib-rt", args.workers
    )
    print()
    with tempfile.TemporaryDirectory(prefix="reposim-bench-c-") as tmp:
        expected = generate_c(Path(tmp), args.generated_files, 25)
        bench_c(
            f"generated ({args.generated_files} .c + .h pairs)", Path(tmp), args.workers, expected
        )
    if args.usr_include:
        print()
        bench_c("/usr/include (headers)", Path("/usr/include"), args.workers)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
