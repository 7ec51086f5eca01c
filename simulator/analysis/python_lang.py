"""Python extraction: functions, classes, module globals, imports and call sites.

One tree-sitter query collects everything; `scopes` places each capture in its innermost
definition. A file with syntax errors still yields every definition tree-sitter recovered.
"""

from __future__ import annotations

import inspect
import itertools
import re

from tree_sitter import Node

from simulator.analysis.languages import captures, parser
from simulator.analysis.model import (
    CallSite,
    ClassRecord,
    FileRecord,
    FunctionRecord,
    GlobalRecord,
    ImportRecord,
    Lang,
)
from simulator.analysis.scopes import code_lines, innermost, parents

QUERY = """
(function_definition) @fn
(class_definition) @cls
(call function: (_) @call)
(import_statement) @import
(import_from_statement) @import
(return_statement) @ret
(yield) @yield
[(if_statement) (elif_clause) (for_statement) (while_statement) (except_clause)
 (conditional_expression) (boolean_operator) (case_clause) (for_in_clause) (if_clause)] @branch
(ERROR) @error
(MISSING) @error
(module (expression_statement) @stmt)
(assignment left: (identifier)) @assign
(for_statement left: (identifier) @rebind)
"""

LITERALS = frozenset({"string", "concatenated_string", "integer", "float", "true", "false", "none"})
EMPTY_CONTAINERS = frozenset({"[]", "{}", "()"})
DOTTED = re.compile(r"[A-Za-z_][\w.]*\Z")
STRING_PREFIX = re.compile(r"[rRbBuUfF]*('''|\"\"\"|'|\")")


def _text(node: Node | None) -> str:
    if node is None:
        return ""
    raw = node.text
    return raw.decode("utf-8", errors="replace") if raw is not None else ""


def package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def resolve_relative(module: str, is_package: bool, level: int, name: str) -> str:
    """`from ..x import y` inside `module` -> the absolute name of `..x`."""
    base = package_of(module, is_package)
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    if not name:
        return base
    return f"{base}.{name}" if base else name


def docstring_of(literal: str) -> str:
    """The text of a docstring literal, indentation cleaned like `inspect.cleandoc`."""
    match = STRING_PREFIX.match(literal)
    if match is None:
        return literal
    quote = match.group(1)
    body = literal[match.end() :]
    if body.endswith(quote):
        body = body[: -len(quote)]
    return inspect.cleandoc(body)


def call_expr(node: Node) -> str:
    text = _text(node)
    if node.type == "identifier":
        return text
    compact = "".join(text.split())
    if DOTTED.match(compact):
        return compact
    if compact.startswith("super()."):
        return compact if DOTTED.match(compact[8:]) else compact[:80]
    return compact[:80]


def _params(node: Node | None) -> list[str]:
    out: list[str] = []
    if node is None:
        return out
    for child in node.named_children:
        kind = child.type
        if kind in (
            "identifier",
            "list_splat_pattern",
            "dictionary_splat_pattern",
            "keyword_separator",
            "positional_separator",
        ):
            out.append(_text(child))
        elif kind in ("default_parameter", "typed_default_parameter"):
            out.append(_text(child.child_by_field_name("name")))
        elif kind == "typed_parameter" and child.named_child_count:
            first = child.named_children[0]
            out.append(_text(first))
    return out


def _body_shape(body: Node | None) -> tuple[str | None, list[Node], str | None]:
    """(docstring literal, statements besides it, the callee if it is a one-call wrapper)."""
    if body is None:
        return None, [], None
    statements = [c for c in body.named_children if c.type != "comment"]
    doc: str | None = None
    if statements and statements[0].type == "expression_statement":
        first = statements[0].named_children
        if len(first) == 1 and first[0].type in ("string", "concatenated_string"):
            doc = _text(first[0])
            statements = statements[1:]
    single: str | None = None
    if len(statements) == 1 and statements[0].type in ("return_statement", "expression_statement"):
        inner = statements[0].named_children
        if len(inner) == 1 and inner[0].type == "call":
            fn = inner[0].child_by_field_name("function")
            if fn is not None:
                single = call_expr(fn)
    return doc, statements, single


def extract_python(
    path: str, source: bytes, module: str, is_package: bool, *, recover: bool = True
) -> FileRecord:
    tree = parser(Lang.PYTHON).parse(source)
    root = tree.root_node
    record = FileRecord(
        path=path,
        lang=Lang.PYTHON,
        source=source,
        module=module,
        is_package=is_package,
        lines=source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1),
    )
    caps = captures(Lang.PYTHON, QUERY, root)
    source_lines = source.split(b"\n")

    defs: list[Node] = sorted(caps.get("fn", []) + caps.get("cls", []), key=lambda n: n.start_byte)
    spans = [(n.start_byte, n.end_byte) for n in defs]
    parent_of = parents(spans)
    qualnames: list[str] = []
    is_fn: list[bool] = []
    records: list[FunctionRecord | ClassRecord] = []
    for i, node in enumerate(defs):
        name = _text(node.child_by_field_name("name"))
        p = parent_of[i]
        if p < 0:
            qual = name
        elif is_fn[p]:
            qual = f"{qualnames[p]}.<locals>.{name}"
        else:
            qual = f"{qualnames[p]}.{name}"
        qualnames.append(qual)
        function = node.type == "function_definition"
        is_fn.append(function)
        enclosing_fn = p
        while enclosing_fn >= 0 and not is_fn[enclosing_fn]:
            enclosing_fn = parent_of[enclosing_fn]
        outer = node.parent
        decorated = outer is not None and outer.type == "decorated_definition"
        start = outer if decorated and outer is not None else node
        body = node.child_by_field_name("body")
        doc_literal, body_statements, single = _body_shape(body)
        body_start = body.start_byte if body is not None else node.end_byte
        if function:
            fn = FunctionRecord(
                lang=Lang.PYTHON,
                path=path,
                name=name,
                qualname=qual,
                kind="method" if p >= 0 and not is_fn[p] else "function",
                class_qualname=qualnames[p] if p >= 0 and not is_fn[p] else None,
                parent_qualname=qualnames[enclosing_fn] if enclosing_fn >= 0 else None,
                start_line=start.start_point[0] + 1,
                def_line=node.start_point[0] + 1,
                end_line=node.end_point[0] + 1,
                start_byte=start.start_byte,
                end_byte=node.end_byte,
                body_start_byte=body_start,
                signature=source[node.start_byte : body_start]
                .decode("utf-8", errors="replace")
                .rstrip()
                .removesuffix(":")
                .rstrip(),
                params=_params(node.child_by_field_name("parameters")),
                return_type=_text(node.child_by_field_name("return_type")) or None,
                docstring=docstring_of(doc_literal) if doc_literal is not None else None,
                decorators=[
                    _text(d)[1:].strip()
                    for d in (outer.named_children if decorated and outer is not None else [])
                    if d.type == "decorator"
                ],
                is_async=_text(node.child(0)) == "async",
                statements=len(body_statements),
                code_lines=code_lines(
                    [(n.start_point[0], n.end_point[0]) for n in body_statements],
                    source_lines,
                    (b"#",),
                ),
                single_call=single,
            )
            records.append(fn)
            record.functions.append(fn)
        else:
            supers = node.child_by_field_name("superclasses")
            header_end = body_start
            if doc_literal is not None and body is not None:
                header_end = body.named_children[0].end_byte if body.named_children else body_start
            cls = ClassRecord(
                path=path,
                name=name,
                qualname=qual,
                parent_qualname=qualnames[enclosing_fn] if enclosing_fn >= 0 else None,
                start_line=start.start_point[0] + 1,
                end_line=node.end_point[0] + 1,
                start_byte=start.start_byte,
                end_byte=node.end_byte,
                header_end_byte=header_end,
                bases=[
                    call_expr(b)
                    for b in (supers.named_children if supers is not None else [])
                    if b.type in ("identifier", "attribute")
                ],
            )
            records.append(cls)
            record.classes.append(cls)

    def function_at(index: int) -> FunctionRecord | None:
        rec = records[index] if index >= 0 else None
        return rec if isinstance(rec, FunctionRecord) else None

    calls = sorted(caps.get("call", []), key=lambda n: n.start_byte)
    for node, where in zip(calls, innermost(spans, [n.start_byte for n in calls]), strict=True):
        owner = function_at(where)
        if owner is not None:
            row, col = node.start_point
            owner.calls.append(CallSite(call_expr(node), row + 1, col))

    rets = sorted(caps.get("ret", []), key=lambda n: n.start_byte)
    for node, where in zip(rets, innermost(spans, [n.start_byte for n in rets]), strict=True):
        owner = function_at(where)
        if owner is None:
            continue
        owner.returns += 1
        value = node.named_children[0] if node.named_child_count else None
        if value is not None and value.type != "comment":
            owner.value_returns += 1
            if value.type in LITERALS or (
                value.type in ("list", "dictionary", "tuple") and _text(value) in EMPTY_CONTAINERS
            ):
                owner.literal_returns += 1

    # A generator produces values through `yield` (`yield from` included).
    for where in innermost(spans, sorted(n.start_byte for n in caps.get("yield", []))):
        owner = function_at(where)
        if owner is not None:
            owner.yields += 1

    branches = sorted(n.start_byte for n in caps.get("branch", []))
    for where in innermost(spans, branches):
        owner = function_at(where)
        if owner is not None:
            owner.branches += 1

    errors = sorted(caps.get("error", []), key=lambda n: n.start_byte)
    if root.has_error or errors:
        record.has_errors = True
        record.errors = [(n.start_point[0] + 1, n.start_point[1]) for n in errors]
        for where in innermost(spans, [n.start_byte for n in errors]):
            while where >= 0:
                rec = records[where]
                if isinstance(rec, FunctionRecord):
                    rec.in_error = True
                where = parent_of[where]

    imports = sorted(caps.get("import", []), key=lambda n: n.start_byte)
    for node, where in zip(imports, innermost(spans, [n.start_byte for n in imports]), strict=True):
        scope = where
        while scope >= 0 and not is_fn[scope]:
            scope = parent_of[scope]
        _imports(record, node, qualnames[scope] if scope >= 0 else None)

    bindings = sorted(caps.get("assign", []) + caps.get("rebind", []), key=lambda n: n.start_byte)
    for node, where in zip(
        bindings, innermost(spans, [n.start_byte for n in bindings]), strict=True
    ):
        owner = function_at(where)
        if owner is None:
            continue
        if node.type == "assignment":
            name = _text(node.child_by_field_name("left"))
            right = node.child_by_field_name("right")
            callee = (
                right.child_by_field_name("function")
                if right is not None and right.type == "call"
                else None
            )
            bound = call_expr(callee) if callee is not None else None
        else:
            name, bound = _text(node), None
        if name in owner.assigns and owner.assigns[name] != bound:
            bound = None
        owner.assigns[name] = bound

    for stmt in caps.get("stmt", []):
        _globals(record, stmt)
    if recover and record.has_errors:
        _recover(record, root)
    return record


NOT_NEWLINE = re.compile(rb"[^\n]")
TOP_LEVEL_DEF = re.compile(rb"^(?:async[ \t]+def|def|class|@)\b", re.MULTILINE)


def _recover(record: FileRecord, root: Node) -> None:
    """Re-parse the definitions that an error swallowed, one top-level chunk at a time.

    tree-sitter's recovery can let one unclosed bracket turn the rest of a file into a single
    ERROR node. Every line starting at column 0 with `def`/`class`/`@` inside such a region
    starts a chunk; each chunk is parsed alone, with everything else blanked out (newlines
    kept) so that lines and byte offsets stay those of the real file.
    """
    regions = [root] if root.type == "ERROR" else [c for c in root.children if c.type == "ERROR"]
    source = record.source
    blank = NOT_NEWLINE.sub(b" ", source)
    for region in regions:
        start, end = region.start_byte, region.end_byte
        cuts = sorted(
            {start} | {m.start() + start for m in TOP_LEVEL_DEF.finditer(source[start:end])} | {end}
        )
        if len(cuts) <= 2:
            continue  # nothing after the damage to rescue
        parts = [
            extract_python(
                record.path,
                blank[:lo] + source[lo:hi] + blank[hi:],
                record.module,
                record.is_package,
                recover=False,
            )
            for lo, hi in itertools.pairwise(cuts)
        ]
        found = sum(1 for f in record.functions if start <= f.start_byte < end)
        # A `def` at column 0 inside a string also cuts; keep whichever reading finds more.
        if sum(len(p.functions) for p in parts) <= found:
            continue
        record.functions = [f for f in record.functions if not start <= f.start_byte < end]
        record.classes = [c for c in record.classes if not start <= c.start_byte < end]
        record.globals = [g for g in record.globals if not start <= g.start_byte < end]
        record.imports = [i for i in record.imports if not start <= i.start_byte < end]
        first, last = region.start_point[0] + 1, region.end_point[0] + 1
        record.errors = [e for e in record.errors if not first <= e[0] <= last]
        for part in parts:
            record.functions.extend(part.functions)
            record.classes.extend(part.classes)
            record.globals.extend(part.globals)
            record.imports.extend(part.imports)
            record.errors.extend(part.errors)
        for items in (record.functions, record.classes, record.globals, record.imports):
            items.sort(key=lambda item: item.start_byte)
    record.errors = sorted(set(record.errors))


def _imports(record: FileRecord, node: Node, scope: str | None) -> None:
    span = (node.start_point[0] + 1, node.end_point[0] + 1, node.start_byte, node.end_byte)
    if node.type == "import_statement":
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                module = _text(name.child_by_field_name("name"))
                local = _text(name.child_by_field_name("alias"))
            else:
                module = _text(name)
                local = module.split(".")[0]
            record.imports.append(ImportRecord(scope, local, module, None, *span))
        return
    target = node.child_by_field_name("module_name")
    if target is None:
        return
    if target.type == "relative_import":
        prefix = target.named_children[0] if target.named_child_count else None
        level = len(_text(prefix)) if prefix is not None and prefix.type == "import_prefix" else 0
        dotted = next((_text(c) for c in target.named_children if c.type == "dotted_name"), "")
        module = resolve_relative(record.module, record.is_package, level, dotted)
    else:
        module = _text(target)
    for child in node.named_children:
        if child.type == "wildcard_import":
            record.imports.append(ImportRecord(scope, "*", module, None, *span, star=True))
    for name in node.children_by_field_name("name"):
        if name.type == "aliased_import":
            attr = _text(name.child_by_field_name("name"))
            local = _text(name.child_by_field_name("alias"))
        else:
            attr = local = _text(name)
        record.imports.append(ImportRecord(scope, local, module, attr, *span))


def _globals(record: FileRecord, stmt: Node) -> None:
    first = stmt.named_children[0] if stmt.named_child_count else None
    if first is None or first.type != "assignment":
        return
    left = first.child_by_field_name("left")
    if left is None:
        return
    names = (
        [left]
        if left.type == "identifier"
        else [c for c in left.named_children if c.type == "identifier"]
        if left.type in ("pattern_list", "tuple_pattern")
        else []
    )
    for name in names:
        record.globals.append(
            GlobalRecord(
                _text(name),
                "variable",
                stmt.start_point[0] + 1,
                stmt.end_point[0] + 1,
                stmt.start_byte,
                stmt.end_byte,
            )
        )
