"""`CodeIndex`: the analysis as the editor uses it — outline, go to definition, callers, callees.

Build it from a directory on disk (`CodeIndex.build(root)`) or from texts the UI read through
the session (`CodeIndex.from_texts({...})`), then keep it current with `update(path, text)` and
`remove(path)`. Nothing here does I/O after `build`, so it is cheap to call from a worker.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from simulator.analysis.graph import CallGraph, Edge, Target
from simulator.analysis.languages import lang_of
from simulator.analysis.model import FileRecord, FunctionRecord, Lang, Location, Symbol
from simulator.analysis.project import (
    discover,
    extract_source,
    extract_tree,
    header_macros,
    module_names,
)
from simulator.analysis.scopes import parents
from simulator.analysis.slicing import Slice, Slicer, parsed

NAME_NODES = frozenset({"identifier", "type_identifier"})


@dataclass(frozen=True, slots=True)
class CallRef:
    """One call: who calls (`caller`, at path:line:col), what (`expr`), and what it resolved to."""

    caller: str  # symbol id of the calling function
    path: str
    line: int
    col: int
    expr: str
    target: str | None  # symbol id, None when unresolved
    reason: str | None  # why it is unresolved
    location: Location | None  # where the target is defined, when resolved


class CodeIndex:
    def __init__(self, files: Mapping[str, FileRecord] | None = None) -> None:
        self._files: dict[str, FileRecord] = dict(files or {})
        self._graph: CallGraph | None = None
        self._slicer: Slicer | None = None

    # ------------------------------------------------------------ building

    @classmethod
    def build(
        cls,
        root: Path,
        *,
        langs: Collection[Lang] = (Lang.PYTHON, Lang.C),
        workers: int | None = None,
        on_file: Callable[[FileRecord], None] | None = None,
    ) -> CodeIndex:
        records = extract_tree(root, discover(root, langs), workers=workers, on_file=on_file)
        return cls({r.path: r for r in records})

    @classmethod
    def from_texts(cls, texts: Mapping[str, str | bytes]) -> CodeIndex:
        """Index files given as {relative path: text}; other paths are ignored."""
        paths = [p for p in texts if lang_of(p) is not None]
        names = module_names(paths)
        sources = {p: t.encode() if isinstance(t, str) else t for p, t in texts.items()}
        macros = header_macros(sources)
        records = {}
        for path in paths:
            records[path] = extract_source(
                path, sources[path], *names.get(path, ("", False)), macros
            )
        return cls(records)

    def update(self, path: str, text: str | bytes) -> FileRecord | None:
        """Re-extract one file after it changed (or was created); None if not Python/C."""
        if lang_of(path) is None:
            return None
        source = text.encode() if isinstance(text, str) else text
        names = module_names([*self._files, path])
        macros = None
        if lang_of(path) is Lang.C:
            headers = {p: r.source for p, r in self._files.items() if p.endswith(".h")}
            if path.endswith(".h"):
                headers[path] = source
            macros = header_macros(headers)
        record = extract_source(path, source, *names.get(path, ("", False)), macros)
        self._files[path] = record
        self._invalidate()
        return record

    def remove(self, path: str) -> None:
        if self._files.pop(path, None) is not None:
            self._invalidate()

    def _invalidate(self) -> None:
        self._graph = None
        self._slicer = None

    # ------------------------------------------------------------- queries

    @property
    def graph(self) -> CallGraph:
        if self._graph is None:
            self._graph = CallGraph(self._files.values())
        return self._graph

    @property
    def files(self) -> Mapping[str, FileRecord]:
        return self._files

    def functions(self) -> Iterator[FunctionRecord]:
        graph = self.graph
        for record in self._files.values():
            for fn in record.functions:
                yield graph.functions[fn.id]

    def find(self, name: str, path: str | None = None) -> list[FunctionRecord]:
        """Functions by symbol id (`path::qualname`) or by qualname (optionally in one file)."""
        graph = self.graph
        if "::" in name:
            fn = graph.functions.get(name)
            return [fn] if fn is not None else []
        return [
            fn
            for fn in graph.functions.values()
            if fn.qualname == name and (path is None or fn.path == path)
        ]

    def outline(self, path: str) -> list[Symbol]:
        """Classes, functions and module-level names of a file, in source order, with depth."""
        record = self._files.get(path)
        if record is None:
            return []
        items: list[tuple[int, int, str, str, str, int, int]] = []
        for fn in record.functions:
            items.append(
                (
                    fn.start_byte,
                    fn.end_byte,
                    fn.name,
                    fn.qualname,
                    fn.kind,
                    fn.def_line,
                    fn.end_line,
                )
            )
        for cls in record.classes:
            items.append(
                (
                    cls.start_byte,
                    cls.end_byte,
                    cls.name,
                    cls.qualname,
                    "class",
                    cls.start_line,
                    cls.end_line,
                )
            )
        for glob in record.globals:
            if glob.kind != "prototype" or record.lang is Lang.C:
                items.append(
                    (
                        glob.start_byte,
                        glob.end_byte,
                        glob.name,
                        glob.name,
                        glob.kind,
                        glob.start_line,
                        glob.end_line,
                    )
                )
        items.sort(key=lambda item: (item[0], -item[1]))
        nesting = parents([(i[0], i[1]) for i in items])
        depth: list[int] = []
        for parent in nesting:
            depth.append(depth[parent] + 1 if parent >= 0 else 0)
        return [
            Symbol(name, qual, kind, line, end, d)
            for (_s, _e, name, qual, kind, line, end), d in zip(items, depth, strict=True)
        ]

    def definition_at(self, path: str, line: int, col: int) -> Location | None:
        """Where the name at line (1-based), col (0-based) is defined, if in this repository."""
        record = self._files.get(path)
        if record is None:
            return None
        tree = parsed(record.lang, record.tree_source)
        point = (line - 1, col)
        node = tree.root_node.named_descendant_for_point_range(point, point)
        if node is None:
            return None
        include = node if node.type == "preproc_include" else node.parent
        while include is not None and include.type not in ("preproc_include", "translation_unit"):
            include = include.parent
        if include is not None and include.type == "preproc_include":
            return self._header(record, include)
        if node.type not in NAME_NODES:
            return None
        module = self._imported_module(record, node)
        if module is not None:
            return module
        expr = node.text.decode("utf-8", "replace") if node.text is not None else ""
        parent = node.parent
        if record.lang is Lang.PYTHON and parent is not None:
            if parent.type in ("function_definition", "class_definition") and (
                parent.child_by_field_name("name") == node
            ):
                return Location(
                    path,
                    line,
                    node.start_point[1],
                    parent.end_point[0] + 1,
                    expr,
                    "class" if parent.type == "class_definition" else "function",
                )
            if parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
                chain = record.text(parent.start_byte, node.end_byte)
                expr = "".join(chain.split())
        scope = self._function_at(record, node.start_byte)
        value = self.graph.resolve(record, scope, expr)
        return _location(value) if isinstance(value, Target) else None

    def _header(self, record: FileRecord, include: Node) -> Location | None:
        target = include.child_by_field_name("path")
        name = target.text.decode("utf-8", "replace").strip('<>"') if target and target.text else ""
        header = self.graph.find_header(record.path, name) if name else None
        if header is None:
            return None
        return Location(header, 1, 0, max(self._files[header].lines, 1), name, "header")

    def _imported_module(self, record: FileRecord, node: Node) -> Location | None:
        """`import a.b` / `from a.b import c`: a name inside the module path names a module."""
        dotted = node.parent
        statement = dotted.parent if dotted is not None else None
        if dotted is None or dotted.type != "dotted_name" or statement is None:
            return None
        if statement.type == "aliased_import":
            statement = statement.parent
        if statement is None or statement.type not in ("import_statement", "import_from_statement"):
            return None
        if statement.type == "import_from_statement" and (
            statement.child_by_field_name("module_name") != dotted
        ):
            return None  # an imported name, resolved like any other name
        module = record.text(dotted.start_byte, node.end_byte).replace(" ", "")
        found = self.graph.modules.get(module)
        if found is None:
            return None
        rec = found.record
        return Location(rec.path, 1, 0, max(rec.lines, 1), module, "module")

    @staticmethod
    def _function_at(record: FileRecord, offset: int) -> FunctionRecord | None:
        best: FunctionRecord | None = None
        for fn in record.functions:
            if fn.start_byte <= offset < fn.end_byte and (
                best is None or fn.start_byte >= best.start_byte
            ):
                best = fn
        return best

    def callers(self, name: str, path: str | None = None) -> list[CallRef]:
        """Calls to the function(s) `name` (symbol id or qualname) from this repository."""
        graph = self.graph
        out: list[CallRef] = []
        for fn in self.find(name, path):
            for edge in graph.callers(fn.id):
                out.append(self._ref(edge))
            # A class's callers are its instantiations, recorded against __init__.
        return sorted(out, key=lambda r: (r.path, r.line, r.col))

    def callees(self, name: str, path: str | None = None) -> list[CallRef]:
        """Every call the function(s) `name` make, resolved or not, in source order."""
        graph = self.graph
        return [self._ref(edge) for fn in self.find(name, path) for edge in graph.callees(fn.id)]

    def _ref(self, edge: Edge) -> CallRef:
        graph = self.graph
        caller = graph.functions[edge.caller]
        location: Location | None = None
        if edge.target is not None:
            fn = graph.functions.get(edge.target)
            if fn is not None:
                location = Location(fn.path, fn.def_line, 0, fn.end_line, fn.qualname, fn.kind)
            else:
                path, _, qual = edge.target.partition("::")
                cls = graph.classes.get(edge.target)
                line = cls.start_line if cls is not None else 1
                end = cls.end_line if cls is not None else line
                location = Location(path, line, 0, end, qual, edge.target_kind or "symbol")
        return CallRef(
            edge.caller,
            caller.path,
            edge.line,
            edge.col,
            edge.expr,
            edge.target,
            edge.reason,
            location,
        )

    def slice(self, name: str, budget: int | None = None) -> Slice:
        """The dependency-sliced context of one function (symbol id or unique qualname)."""
        found = self.find(name)
        if len(found) != 1:
            raise KeyError(
                f"{name} names {len(found)} functions; give its id (path::qualname)."
                if found
                else f"no function {name} in the index"
            )
        if self._slicer is None:
            self._slicer = Slicer(self.graph)
        return self._slicer.slice(found[0].id, budget)


def _location(target: Target) -> Location:
    return Location(target.path, target.line, 0, target.end_line, target.name, target.kind)
