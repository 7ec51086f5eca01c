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

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache

from tree_sitter import Node, QueryCursor, Tree

from simulator.analysis.code_text import line_indent, reindent, strip_indent
from simulator.analysis.graph import CallGraph, Instance, Target
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
    whole: bool = False  # a class given whole (an enum): pieces inside it are part of it
    forced: bool = False  # kept whatever the budget: a class header its members need
    # Class headers: where the class ends, whether the header has a body (a docstring),
    # and the indentation of its body (for `...` when no member is kept).
    end_of_class: int = 0
    has_body: bool = True
    body_indent: str = ""

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
            "forced": self.forced,
        }


CUT_NAMES = 12  # pieces a cut note names; it counts the rest (`dropped` lists them all)


def cut_names(names: Iterable[str], brief: bool = False) -> str:
    """What a cut note says: the pieces' names, or only how many when names do not fit."""
    listed = list(names)
    if brief:
        return f"{len(listed)} piece{'s' if len(listed) != 1 else ''} (listed in `dropped`)"
    if len(listed) <= CUT_NAMES:
        return ", ".join(listed)
    return ", ".join(listed[:CUT_NAMES]) + f" and {len(listed) - CUT_NAMES} more"


@dataclass
class SliceFile:
    path: str
    pieces: list[Piece]
    cut: list[Piece] = field(default_factory=list)  # dropped for the budget
    brief: bool = False  # the cut note counts the pieces instead of naming them

    @property
    def text(self) -> str:
        """The pieces as one valid Python (or C) text: members under their class headers."""
        out: list[str] = []
        open_classes: list[Piece] = []  # headers whose members may follow
        members: list[int] = []  # members written under each open header
        previous: Piece | None = None

        def close_until(start: int) -> None:
            while open_classes and open_classes[-1].end_of_class <= start:
                header = open_classes.pop()
                count = members.pop()
                if count == 0 and not header.has_body:
                    out.append("\n" + header.body_indent + "...")

        for piece in self.pieces:
            close_until(piece.start_byte)
            if previous is not None:
                imports = piece.kind == "import" and previous.kind == "import"
                out.append("\n" if imports else "\n\n")
            if members:
                members[-1] += 1
            out.append(piece.text)
            if piece.kind == "class" and not piece.whole:
                open_classes.append(piece)
                members.append(0)
            previous = piece
        close_until(1 << 62)
        if self.cut:
            names = cut_names(
                (f"{p.name} (lines {p.start_line}-{p.end_line})" for p in self.cut), self.brief
            )
            out.append(f"\n\n# cut for the token budget: {names}")
        return "".join(out)


@dataclass
class Slice:
    target: str
    budget: int | None
    tokens: int
    token_counter: str
    files: list[SliceFile]
    dropped: list[Piece]
    over_budget: int = 0  # tokens past the budget when the target and its headers alone exceed it
    brief: bool = False  # cut notes count the pieces instead of naming them (names did not fit)

    @property
    def text(self) -> str:
        """The context as one text: each file's pieces under a `# file: path` line."""
        shown = {f.path for f in self.files}
        elsewhere = [p for p in self.dropped if p.path not in shown]
        tail = ""
        if elsewhere:
            names = cut_names(
                (f"{p.path}: {p.name} (lines {p.start_line}-{p.end_line})" for p in elsewhere),
                self.brief,
            )
            tail = f"\n# cut for the token budget: {names}\n"
        return "\n\n".join(f"# file: {f.path}\n{f.text}" for f in self.files) + "\n" + tail

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
            "over_budget": self.over_budget,
            "text": self.text,
        }


def _header_has_body(header: str) -> bool:
    """Whether `class X(...):` text goes on with a body (a docstring) after its colon."""
    code = (line.split("#", 1)[0].rstrip() for line in reversed(header.splitlines()))
    last = next((line for line in code if line.strip()), "")
    return not last.endswith(":")


ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"})
PROPERTY_DECORATORS = frozenset({"property", "cached_property", "functools.cached_property"})
VISITOR = re.compile(r"""getattr\(\s*self\s*,\s*f?["']([A-Za-z_]\w*?)(?:\{|["']\s*\+)""")
FIELDS_QUERY = """
(assignment left: (attribute object: (identifier) @obj attribute: (identifier) @attr)) @assign
(augmented_assignment left: (attribute object: (identifier) @obj attribute: (identifier) @attr))
  @assign
"""


@dataclass
class ClassInfo:
    """What a class's body and methods define besides methods: constants and instance fields."""

    constants: dict[str, tuple[int, int]]  # class-level `NAME = ...`: (start, end) bytes
    fields: dict[str, str]  # `self.NAME = ...`: the id of the method that sets it first
    field_calls: dict[str, tuple[str, str]]  # `self.NAME = f(...)`: (method id, callee)
    is_enum: bool


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
        self._class_info: dict[str, ClassInfo] = {}
        # Texts, token counts and names of function pieces and class headers, by symbol id:
        # the same pieces come back in the slices of many targets.
        self._function_cache: dict[str, tuple[str, int, list[str]]] = {}
        self._header_cache: dict[str, tuple[str, int, list[str], bool]] = {}

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
            # Past the budget (three times over) only the target's own dependencies are
            # still looked up, so that the text can name what was cut.
            over = limit is not None and discovered > limit and piece.distance > 0
            if piece.distance >= max_depth or over:
                continue
            owner = self.graph.files[piece.path]
            deps: list[tuple[Piece, FunctionRecord | None]] = []
            if owner.lang is Lang.PYTHON:
                deps += self._dispatched(piece, scope, piece.distance + 1)
            for name in piece.names:
                deps += self._dependencies(owner, scope, name, piece.distance + 1)
            for dep, dep_scope in deps:
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
        """Whether dep is already part of a piece's text (a nested function, an enum member)."""
        return any(
            p.path == dep.path
            and (p.kind != "class" or p.whole)
            and p.start_byte <= dep.start_byte
            and dep.end_byte <= p.end_byte
            and (p.start_byte, p.end_byte) != (dep.start_byte, dep.end_byte)
            for p in pieces
        )

    def _dependencies(
        self, record: FileRecord, scope: FunctionRecord | None, name: str, distance: int
    ) -> list[tuple[Piece, FunctionRecord | None]]:
        """Pieces a name used by a piece needs: what it resolves to, and class members.

        `self.x` / `cls.x` in a method: a method or property (resolved like a call), a class
        constant, or an instance field (the method that sets it, `__init__` first); then
        `self.x.m` when the field is set to `Class(...)`: that class's `m`. `Class.X`: the
        class and its constant `X` (an enum's members come with the whole enum).
        """
        out: list[tuple[Piece, FunctionRecord | None]] = []
        found = self._resolve(record, scope, name)
        if found is not None:
            out += self._pieces_for(found, distance)
        if record.lang is not Lang.PYTHON:
            return out
        parts = name.split(".")
        if len(parts) < 2:
            return out
        head = self.graph.resolve(record, scope, parts[0])
        if isinstance(head, Instance):
            out += self._members(head.cls, parts[1:], distance)
        elif isinstance(head, Target) and head.kind == "class":
            out += self._members(head, parts[1:], distance)
        elif isinstance(head, Target) and head.kind == "module" and len(parts) >= 3:
            value = self.graph.resolve(record, scope, ".".join(parts[:2]))
            if isinstance(value, Target) and value.kind == "class":
                out += self._members(value, parts[2:], distance)
        return out

    def _members(
        self, cls: Target, attrs: list[str], distance: int
    ) -> list[tuple[Piece, FunctionRecord | None]]:
        graph = self.graph
        attr = attrs[0]
        out: list[tuple[Piece, FunctionRecord | None]] = []
        for klass in graph.mro(cls):
            info = self.class_info(klass)
            if attr in info.constants:
                out.append((self._constant(klass, attr, info, distance), None))
                return out
            setter = info.fields.get(attr)
            if setter is None:
                continue
            fn = graph.functions[setter]
            out.append((self._piece_for_function(fn, fn.kind, distance), fn))
            call = info.field_calls.get(attr)
            if call is not None and len(attrs) >= 2:
                method_id, callee = call
                method = graph.functions[method_id]
                held = graph.resolve(graph.files[method.path], method, callee)
                if isinstance(held, Target) and held.kind == "class":
                    member = graph.member(held, attrs[1])
                    if isinstance(member, Target):
                        out += self._pieces_for(member, distance)
                    out += self._members(held, attrs[1:], distance)
            return out
        return out

    def _dispatched(
        self, piece: Piece, scope: FunctionRecord | None, distance: int
    ) -> list[tuple[Piece, FunctionRecord | None]]:
        """`getattr(self, "visit_" + ...)`: every `visit_*` method of the class, of its bases
        and of its subclasses (a visitor base class dispatches to its subclasses' methods)."""
        prefixes = set(VISITOR.findall(piece.text))
        cls = self.graph.method_class(scope) if prefixes else None
        if cls is None:
            return []
        graph = self.graph
        out: list[tuple[Piece, FunctionRecord | None]] = []
        seen: set[tuple[str, str]] = set()
        family = list(graph.mro(cls))
        for ident, klass_record in graph.classes.items():
            path = ident.partition("::")[0]
            klass_target = Target(
                "class",
                path,
                klass_record.qualname,
                klass_record.start_line,
                klass_record.end_line,
                ident,
            )
            if klass_target not in family and cls in graph.mro(klass_target):
                family.append(klass_target)
        for klass in family:
            for fn in self.graph.files[klass.path].functions:
                if (
                    fn.class_qualname == klass.name
                    and (klass.id, fn.name) not in seen
                    and any(fn.name.startswith(p) for p in prefixes)
                ):
                    seen.add((klass.id, fn.name))
                    out.append((self._piece_for_function(fn, "method", distance), fn))
        return out

    def class_info(self, cls: Target) -> ClassInfo:
        info = self._class_info.get(cls.id)
        if info is None:
            info = self._class_info[cls.id] = self._read_class(cls)
        return info

    def _read_class(self, cls: Target) -> ClassInfo:
        graph = self.graph
        record = graph.files[cls.path]
        klass = graph.classes[cls.id]
        tree = parsed(record.lang, record.tree_source)
        node = tree.root_node.descendant_for_byte_range(klass.start_byte, klass.end_byte)
        while node is not None and node.type != "class_definition":
            node = (
                node.child_by_field_name("definition")
                if node.type == "decorated_definition"
                else None
            )
        constants: dict[str, tuple[int, int]] = {}
        body = node.child_by_field_name("body") if node is not None else None
        for stmt in body.named_children if body is not None else []:
            first = (
                stmt.named_children[0]
                if stmt.type == "expression_statement" and stmt.named_child_count
                else None
            )
            if first is not None and first.type == "assignment":
                left = first.child_by_field_name("left")
                if left is not None and left.type == "identifier" and left.text is not None:
                    constants.setdefault(left.text.decode(), (stmt.start_byte, stmt.end_byte))
        methods = sorted(
            (fn for fn in record.functions if fn.class_qualname == klass.qualname),
            key=lambda fn: (fn.name != "__init__", fn.start_byte),
        )
        fields: dict[str, str] = {}
        field_calls: dict[str, tuple[str, str]] = {}
        cursor = QueryCursor(query(Lang.PYTHON, FIELDS_QUERY))
        for fn in methods:
            if not fn.params or fn.params[0] != "self":
                continue
            cursor.set_byte_range(fn.start_byte, fn.end_byte)
            for _, caps in cursor.matches(tree.root_node):
                obj = caps["obj"][0]
                if obj.text != b"self":
                    continue
                attr = caps["attr"][0].text
                name = attr.decode() if attr is not None else ""
                if not name or name in fields:
                    continue
                fields[name] = fn.id
                right = caps["assign"][0].child_by_field_name("right")
                callee = (
                    right.child_by_field_name("function")
                    if right is not None and right.type == "call"
                    else None
                )
                if callee is not None and callee.text is not None:
                    field_calls[name] = (fn.id, "".join(callee.text.decode().split()))
        is_enum = any(base.rpartition(".")[2] in ENUM_BASES for base in klass.bases) or any(
            self.class_info(base).is_enum for base in graph.mro(cls)[1:]
        )
        return ClassInfo(constants, fields, field_calls, is_enum)

    def _constant(self, cls: Target, name: str, info: ClassInfo, distance: int) -> Piece:
        record = self.graph.files[cls.path]
        start, end = info.constants[name]
        text = self._indented(record, start, end)
        return Piece(
            "variable",
            f"{cls.name}.{name}",
            record.path,
            record.source.count(b"\n", 0, start) + 1,
            record.source.count(b"\n", 0, end) + 1,
            start,
            end,
            distance,
            text,
            self.count(text),
            names_in(record, start, end),
        )

    @staticmethod
    def _indented(record: FileRecord, start: int, end: int) -> str:
        """The text between two offsets, its first line indented like the source line."""
        text = record.text(start, end)
        line_start = record.source.rfind(b"\n", 0, start) + 1
        indent = record.source[line_start:start]
        return indent.decode() + text if indent.strip() == b"" else text

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
            if out[0][0].whole:
                return out
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
        cached = self._function_cache.get(fn.id)
        if cached is None:
            record = self.graph.files[fn.path]
            # Re-indent a method's first line like the rest: the span starts at `def`/`@`.
            text = self._indented(record, fn.start_byte, fn.end_byte)
            names = names_in(record, fn.start_byte, fn.end_byte)
            cached = self._function_cache[fn.id] = (text, self.count(text), names)
        text, tokens, names = cached
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
            tokens,
            [n for n in names if n not in fn.params],
        )

    def _class_header(self, path: str, qualname: str, distance: int) -> Piece:
        """`class X(Base):` and its docstring; an enum whole (its members are its values)."""
        ident = f"{path}::{qualname}"
        cls = self.graph.classes[ident]
        record = self.graph.files[path]
        cached = self._header_cache.get(ident)
        if cached is None:
            target = Target("class", path, qualname, cls.start_line, cls.end_line, ident)
            whole = record.lang is Lang.PYTHON and self.class_info(target).is_enum
            end = cls.end_byte if whole else cls.header_end_byte
            text = self._indented(record, cls.start_byte, end).rstrip()
            names = names_in(record, cls.start_byte, end)
            cached = self._header_cache[ident] = (text, self.count(text), names, whole)
        text, tokens, names, whole = cached
        end = cls.end_byte if whole else cls.header_end_byte
        line_start = record.source.rfind(b"\n", 0, cls.start_byte) + 1
        indent = record.source[line_start : cls.start_byte].decode()
        return Piece(
            "class",
            qualname,
            path,
            cls.start_line,
            cls.start_line + text.count("\n"),
            cls.start_byte,
            end,
            distance,
            text,
            tokens,
            names,
            whole=whole,
            end_of_class=cls.end_byte,
            has_body=whole or _header_has_body(text),
            body_indent=(indent if indent.strip() == "" else "") + "    ",
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
        """The slice within `budget` tokens of its whole text (file lines, separators and the
        cut notes included): pieces are chosen, closest first, against the largest allowance
        whose text fits (a binary search when the budget itself overshoots); what cannot be
        cut (the target, its imports, the headers around it) and still overshoots is reported
        as `over_budget`."""
        if budget is None:
            result = self._cut_once(target, record, order, None)
            result.tokens = self.count(result.text)
            return result
        whole = self._fitted(target, record, order, budget, budget)
        if whole.tokens <= budget:
            return whole
        best = self._fitted(target, record, order, 0, budget)
        if best.tokens > budget:  # what is never cut overshoots alone: say by how much
            best.over_budget = best.tokens - budget
            return best
        low, high = 1, budget - 1  # the largest allowance whose text fits
        while low <= high:
            middle = (low + high) // 2
            tried = self._fitted(target, record, order, middle, budget)
            if tried.tokens <= budget:
                best, low = tried, middle + 1
            else:
                high = middle - 1
        return best

    def _fitted(
        self, target: str, record: FileRecord, order: list[Piece], allowance: int, budget: int
    ) -> Slice:
        """The cut at `allowance` tokens of pieces, its cut notes brief when only that fits."""
        result = self._cut_once(target, record, order, allowance)
        result.budget = budget
        result.tokens = self.count(result.text)
        if result.tokens > budget and result.dropped:
            self._set_brief(result, True)
            brief = self.count(result.text)
            if brief <= budget:
                result.tokens = brief
            else:
                self._set_brief(result, False)
        return result

    @staticmethod
    def _set_brief(result: Slice, brief: bool) -> None:
        result.brief = brief
        for part in result.files:
            part.brief = brief

    def _cut_once(
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
                # a copy: completing the file re-indents it, and a cut may be tried again
                kept[(item.path, item.start_byte)] = replace(item)
        used += self._complete(kept)
        by_file: dict[str, list[Piece]] = {}
        for piece in kept.values():
            by_file.setdefault(piece.path, []).append(piece)
        depth = {path: max(p.distance for p in items) for path, items in by_file.items()}
        paths = sorted(by_file, key=lambda p: (p == record.path, -depth[p], p))
        files = [
            SliceFile(
                path,
                sorted(by_file[path], key=lambda p: (p.kind != "import", p.start_byte)),
                [p for p in dropped if p.path == path],
            )
            for path in paths
        ]
        return Slice(target, budget, used, self.counter_name, files, dropped)

    def _complete(self, kept: dict[tuple[str, int], Piece]) -> int:
        """Make every file's pieces valid Python; returns the tokens this added.

        A member (method, class constant) gets the header of each class around it, kept
        whatever the budget; a piece nested in a function that is not itself kept is
        dedented to stand alone; a piece inside an enum given whole is dropped (it is there).
        """
        added = 0
        for key, piece in list(kept.items()):
            record = self.graph.files[piece.path]
            if record.lang is not Lang.PYTHON or piece.kind == "import":
                continue
            if any(
                other.whole
                and other.path == piece.path
                and other.start_byte <= piece.start_byte
                and piece.end_byte <= other.end_byte
                and other is not piece
                for other in kept.values()
            ):
                del kept[key]
                continue
            chain = self._enclosing(record, piece.start_byte, piece.end_byte)
            functions = [k for k, (kind, _, _) in enumerate(chain) if kind == "function"]
            classes = chain[functions[-1] + 1 :] if functions else chain
            # What stands in a function that is not kept, or in an `if`/`try` block at module
            # level, comes out of it: the outermost class header (or the piece) at column 0.
            anchor = classes[0][2] if classes else piece.start_byte
            indent = line_indent(record, anchor)
            piece.text = strip_indent(piece.text, indent)
            if classes:
                # A member defined in a block of its class body (`if TYPE_CHECKING: ... else:`)
                # goes where the class's members stand: under the header, not deeper.
                own = line_indent(record, piece.start_byte)
                want = self._member_indent(record, classes[-1][2])
                if want is not None and len(own) > len(want) and own.startswith(want):
                    piece.text = reindent(piece.text, own[len(indent) :], want[len(indent) :])
            for _, qualname, start in classes:
                if (piece.path, start) in kept:
                    continue
                header = self._class_header(piece.path, qualname, piece.distance)
                header.forced = True
                header.text = strip_indent(header.text, indent)
                header.body_indent = header.body_indent.removeprefix(indent)
                for item in [*self._imports_for(header), header]:
                    if (item.path, item.start_byte) not in kept:
                        kept[(item.path, item.start_byte)] = item
                        added += item.tokens
        return added

    @staticmethod
    def _member_indent(record: FileRecord, class_start: int) -> str | None:
        """The indentation of the first statement in the body of the class starting there."""
        tree = parsed(record.lang, record.tree_source)
        node: Node | None = tree.root_node.descendant_for_byte_range(class_start, class_start)
        while node is not None and node.type not in ("class_definition", "decorated_definition"):
            node = node.parent
        if node is not None and node.type == "decorated_definition":
            node = node.child_by_field_name("definition")
        body = node.child_by_field_name("body") if node is not None else None
        for stmt in body.named_children if body is not None else []:
            if stmt.type != "comment":
                return line_indent(record, stmt.start_byte)
        return None

    @staticmethod
    def _enclosing(record: FileRecord, start: int, end: int) -> list[tuple[str, str, int]]:
        """(kind, qualname, start) of the classes and functions around a span, outermost first."""
        around: list[tuple[int, str, str]] = []
        for cls in record.classes:
            if cls.header_end_byte <= start and end <= cls.end_byte:
                around.append((cls.start_byte, "class", cls.qualname))
        for fn in record.functions:
            if fn.body_start_byte <= start and end <= fn.end_byte:
                around.append((fn.start_byte, "function", fn.qualname))
        return [(kind, qual, start) for start, kind, qual in sorted(around)]
