"""Dependency slicing: the smallest context a function needs, cut to a token budget.

Starting from the target, every name its code uses is resolved (functions it calls or
passes around, classes it instantiates or names, module globals and constants, C macros and
types), breadth first: distance 1 are the target's own dependencies, distance 2 theirs, and so
on. Pieces are kept closest first until the budget is spent; each kept piece brings the
import lines (Python) or `#include`s (C) of its file that it relies on. The result is grouped
per file, files in dependency order (what is needed comes before what needs it, the target's
file last), and pieces in source order within a file.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

from tree_sitter import Node, QueryCursor, Tree

from simulator.analysis.graph import CallGraph, Target
from simulator.analysis.languages import parser, query
from simulator.analysis.model import FileRecord, FunctionRecord, Lang
from simulator.analysis.python_lang import DOTTED
from simulator.analysis.tokens import token_counter

PY_NAMES = "(identifier) @id (attribute) @chain"
C_NAMES = "(identifier) @id (type_identifier) @id"
DEFAULT_DEPTH = 4


@dataclass
class Piece:
    kind: str  # target, function, method, class, variable, macro, type, import, ...
    name: str
    path: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    distance: int
    text: str
    tokens: int = 0
    names: list[str] = field(default_factory=list)  # what the piece refers to
    via: tuple[str, int] | None = None  # (path, start byte) of the piece that needed it

    @property
    def key(self) -> tuple[str, int]:
        return (self.path, self.start_byte)

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.name,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "distance": self.distance,
            "tokens": self.tokens,
        }


@dataclass
class SliceFile:
    path: str
    pieces: list[Piece]

    @property
    def text(self) -> str:
        out: list[str] = []
        for i, piece in enumerate(self.pieces):
            if i:
                consecutive_imports = piece.kind == "import" and self.pieces[i - 1].kind == "import"
                out.append("\n" if consecutive_imports else "\n\n")
            out.append(piece.text)
        return "".join(out)


@dataclass
class Slice:
    target: str
    budget: int | None
    tokens: int
    token_counter: str
    files: list[SliceFile]
    dropped: list[Piece]

    @property
    def text(self) -> str:
        """The context as one text: each file's pieces under a `# file: path` line."""
        return "\n\n".join(f"# file: {f.path}\n{f.text}" for f in self.files) + "\n"

    def as_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "budget": self.budget,
            "tokens": self.tokens,
            "token_counter": self.token_counter,
            "files": [
                {"path": f.path, "pieces": [p.as_dict() for p in f.pieces], "text": f.text}
                for f in self.files
            ],
            "dropped": [{"path": p.path, **p.as_dict()} for p in self.dropped],
            "text": self.text,
        }


@lru_cache(maxsize=64)
def parsed(lang: Lang, source: bytes) -> Tree:
    return parser(lang).parse(source)


def names_in(record: FileRecord, start: int, end: int) -> list[str]:
    """Names and dotted chains the code between two byte offsets refers to, in order."""
    tree = parsed(record.lang, record.tree_source)
    cursor = QueryCursor(query(record.lang, PY_NAMES if record.lang is Lang.PYTHON else C_NAMES))
    cursor.set_byte_range(start, end)
    seen: dict[str, None] = {}
    for _, caps in cursor.matches(tree.root_node):
        for node in caps.get("id", []) + caps.get("chain", []):
            if not (start <= node.start_byte < end):
                continue
            name = _reference(node, record.lang)
            if name:
                seen.setdefault(name, None)
    return list(seen)


def _reference(node: Node, lang: Lang) -> str | None:
    parent = node.parent
    raw = node.text.decode("utf-8", "replace") if node.text is not None else ""
    if lang is Lang.C:
        if parent is not None and parent.type in ("preproc_def", "preproc_function_def"):
            return None
        return raw
    if node.type == "attribute":
        if parent is not None and parent.type == "attribute":
            return None  # only the outermost chain
        chain = "".join(raw.split())
        return chain if DOTTED.match(chain) else None
    if parent is not None:
        if parent.type == "attribute":
            return None  # part of a chain, reported with it
        if parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
            return None
    return raw


class Slicer:
    """Builds dependency slices over one call graph."""

    def __init__(self, graph: CallGraph) -> None:
        self.graph = graph
        self.counter_name, self.count = token_counter()

    def slice(
        self, target: str, budget: int | None = None, *, max_depth: int = DEFAULT_DEPTH
    ) -> Slice:
        fn = self.graph.functions.get(target)
        if fn is None:
            raise KeyError(f"no function {target} in the index")
        record = self.graph.files[fn.path]
        root = self._piece_for_function(fn, "target", 0)
        pieces: dict[tuple[str, int, int], Piece] = {(fn.path, fn.start_byte, fn.end_byte): root}
        order: list[Piece] = [root]
        queue: deque[tuple[Piece, FunctionRecord | None]] = deque([(root, fn)])
        discovered = root.tokens
        limit = budget * 3 if budget is not None else None
        while queue:
            piece, scope = queue.popleft()
            if piece.distance >= max_depth or (limit is not None and discovered > limit):
                continue
            owner = self.graph.files[piece.path]
            for name in piece.names:
                found = self._resolve(owner, scope, name)
                if found is None:
                    continue
                for dep, dep_scope in self._pieces_for(found, piece.distance + 1):
                    key = (dep.path, dep.start_byte, dep.end_byte)
                    if key in pieces or self._inside(dep, order):
                        continue
                    pieces[key] = dep
                    dep.via = piece.key
                    order.append(dep)
                    discovered += dep.tokens
                    queue.append((dep, dep_scope))
        return self._cut(target, record, order, budget)

    @staticmethod
    def _inside(dep: Piece, pieces: list[Piece]) -> bool:
        """Whether dep is already part of a piece's text (a nested function, a method)."""
        return any(
            p.path == dep.path
            and p.kind != "class"
            and p.start_byte <= dep.start_byte
            and dep.end_byte <= p.end_byte
            for p in pieces
        )

    def _resolve(
        self, record: FileRecord, scope: FunctionRecord | None, name: str
    ) -> Target | None:
        parts = name.split(".")
        for size in range(len(parts), 0, -1):
            value = self.graph.resolve(record, scope, ".".join(parts[:size]))
            if isinstance(value, Target):
                return None if value.kind == "module" else value
        return None

    def _pieces_for(
        self, target: Target, distance: int
    ) -> list[tuple[Piece, FunctionRecord | None]]:
        graph = self.graph
        out: list[tuple[Piece, FunctionRecord | None]]
        if target.kind in ("function", "method"):
            fn = graph.functions[target.id]
            out = [(self._piece_for_function(fn, fn.kind, distance), fn)]
            if fn.class_qualname is not None:
                cls = graph.classes.get(f"{fn.path}::{fn.class_qualname}")
                if cls is not None:
                    out.insert(0, (self._class_header(fn.path, cls.qualname, distance), None))
            return out
        if target.kind == "class":
            out = [(self._class_header(target.path, target.name, distance), None)]
            init = graph.constructor(target)
            if init is not None:
                fn = graph.functions[init.id]
                out.append((self._piece_for_function(fn, "method", distance), fn))
            return out
        record = graph.files[target.path]
        glob = next(
            (g for g in record.globals if g.name == target.name and g.start_line == target.line),
            None,
        )
        if glob is None:
            return []
        text = record.text(glob.start_byte, glob.end_byte).rstrip()
        names = [n for n in names_in(record, glob.start_byte, glob.end_byte) if n != glob.name]
        return [
            (
                Piece(
                    target.kind,
                    glob.name,
                    record.path,
                    glob.start_line,
                    glob.end_line,
                    glob.start_byte,
                    glob.end_byte,
                    distance,
                    text,
                    self.count(text),
                    names,
                ),
                None,
            )
        ]

    def _piece_for_function(self, fn: FunctionRecord, kind: str, distance: int) -> Piece:
        record = self.graph.files[fn.path]
        text = record.text(fn.start_byte, fn.end_byte)
        # Re-indent a method's first line like the rest: the span starts at `def`/`@`.
        line_start = record.source.rfind(b"\n", 0, fn.start_byte) + 1
        indent = record.source[line_start : fn.start_byte]
        if indent.strip() == b"":
            text = indent.decode() + text
        names = names_in(record, fn.start_byte, fn.end_byte)
        return Piece(
            kind,
            fn.qualname,
            fn.path,
            fn.start_line,
            fn.end_line,
            fn.start_byte,
            fn.end_byte,
            distance,
            text,
            self.count(text),
            [n for n in names if n not in fn.params],
        )

    def _class_header(self, path: str, qualname: str, distance: int) -> Piece:
        cls = self.graph.classes[f"{path}::{qualname}"]
        record = self.graph.files[path]
        text = record.text(cls.start_byte, cls.header_end_byte).rstrip()
        line_start = record.source.rfind(b"\n", 0, cls.start_byte) + 1
        indent = record.source[line_start : cls.start_byte]
        if indent.strip() == b"":
            text = indent.decode() + text
        end_line = cls.start_line + text.count("\n")
        return Piece(
            "class",
            qualname,
            path,
            cls.start_line,
            end_line,
            cls.start_byte,
            cls.header_end_byte,
            distance,
            text,
            self.count(text),
            names_in(record, cls.start_byte, cls.header_end_byte),
        )

    def _imports_for(self, piece: Piece) -> list[Piece]:
        record = self.graph.files[piece.path]
        out: list[Piece] = []
        seen: set[int] = set()
        heads = {n.split(".")[0] for n in piece.names}
        for imp in record.imports:
            if imp.scope is not None or imp.start_byte in seen:
                continue
            if record.lang is Lang.PYTHON and imp.name not in heads:
                continue
            seen.add(imp.start_byte)
            text = record.text(imp.start_byte, imp.end_byte).rstrip()
            out.append(
                Piece(
                    "import",
                    imp.module,
                    record.path,
                    imp.start_line,
                    imp.end_line,
                    imp.start_byte,
                    imp.end_byte,
                    piece.distance,
                    text,
                    self.count(text),
                )
            )
        return out

    def _cut(
        self, target: str, record: FileRecord, order: list[Piece], budget: int | None
    ) -> Slice:
        ranked = sorted(enumerate(order), key=lambda item: (item[1].distance, item[0]))
        kept: dict[tuple[str, int], Piece] = {}
        dropped: list[Piece] = []
        used = 0
        for _, piece in ranked:
            imports = [
                imp for imp in self._imports_for(piece) if (imp.path, imp.start_byte) not in kept
            ]
            cost = piece.tokens + sum(i.tokens for i in imports)
            # A dependency whose dependent was dropped would be an orphan: drop it too.
            orphan = piece.via is not None and piece.via not in kept
            if piece.kind != "target" and (orphan or (budget is not None and used + cost > budget)):
                dropped.append(piece)
                continue
            used += cost
            for item in [*imports, piece]:
                kept[(item.path, item.start_byte)] = item
        by_file: dict[str, list[Piece]] = {}
        for piece in kept.values():
            by_file.setdefault(piece.path, []).append(piece)
        depth = {path: max(p.distance for p in items) for path, items in by_file.items()}
        paths = sorted(by_file, key=lambda p: (p == record.path, -depth[p], p))
        files = [
            SliceFile(
                path,
                sorted(by_file[path], key=lambda p: (p.kind != "import", p.start_byte)),
            )
            for path in paths
        ]
        return Slice(target, budget, used, self.counter_name, files, dropped)
