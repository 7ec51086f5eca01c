"""C extraction: function definitions, prototypes, macros, types, globals, includes, calls.

Macros are not expanded (there is no preprocessor here): tree-sitter parses the text as
written, so code that only makes sense after expansion may show up as a syntax error, and
the functions around it are still extracted.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from tree_sitter import Node

from simulator.analysis.c_macros import MacroTable, collect, rewrite
from simulator.analysis.languages import captures, parser
from simulator.analysis.model import (
    CallSite,
    FileRecord,
    FunctionRecord,
    GlobalRecord,
    ImportRecord,
    Lang,
)
from simulator.analysis.scopes import code_lines, innermost

QUERY = """
(function_definition) @fn
(call_expression function: (_) @call)
(return_statement) @ret
[(if_statement) (for_statement) (while_statement) (do_statement) (case_statement)
 (conditional_expression)] @branch
(binary_expression operator: ["&&" "||"]) @branch
(ERROR) @error
(MISSING) @error
(declaration) @decl
(preproc_def) @macro
(preproc_function_def) @fmacro
(preproc_include) @include
(type_definition) @typedef
(struct_specifier name: (_) body: (_)) @tagged
(union_specifier name: (_) body: (_)) @tagged
(enum_specifier body: (_)) @tagged
"""

LITERALS = frozenset({"number_literal", "string_literal", "char_literal", "true", "false", "null"})
DECLARATOR_WRAPPERS = frozenset(
    {
        "pointer_declarator",
        "array_declarator",
        "init_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
    }
)


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def _declared(node: Node | None) -> tuple[str, bool]:
    """The identifier a declarator declares, and whether it declares a function."""
    function = False
    while node is not None:
        if node.type in ("identifier", "type_identifier", "field_identifier"):
            return _text(node), function
        if node.type == "function_declarator":
            function = True
        elif node.type not in DECLARATOR_WRAPPERS:
            return "", function
        inner = node.child_by_field_name("declarator")
        if inner is None and node.type == "parenthesized_declarator" and node.named_child_count:
            inner = node.named_children[0]
        node = inner
    return "", function


def _function_name(definition: Node) -> str:
    """The name a function definition defines: never a word of a parameter list.

    `int UNKNOWN_MACRO main(void) {...}` after a declaration is misread by tree-sitter as the
    declaration `int UNKNOWN_MACRO` and then a definition of type `main` whose declarator is
    `(void)`: the type is the name there, the parentheses are the parameters.
    """
    declarator = definition.child_by_field_name("declarator")
    kind = definition.child_by_field_name("type")
    if (
        declarator is not None
        and declarator.type == "parenthesized_declarator"
        and kind is not None
        and kind.type == "type_identifier"
    ):
        return _text(kind)
    return _declared(declarator)[0]


def _function_declarator(node: Node | None) -> Node | None:
    while node is not None and node.type != "function_declarator":
        node = node.child_by_field_name("declarator")
    return node


def _params(decl: Node | None) -> list[str]:
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    out: list[str] = []
    for child in plist.named_children if plist is not None else []:
        if child.type == "variadic_parameter":
            out.append("...")
        elif child.type == "parameter_declaration":
            name, _ = _declared(child.child_by_field_name("declarator"))
            if name:
                out.append(name)
    return out


def _leading_comment(node: Node) -> str | None:
    comments: list[str] = []
    line = node.start_point[0]
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "comment" and prev.end_point[0] >= line - 1:
        comments.append(_text(prev))
        line = prev.start_point[0]
        prev = prev.prev_named_sibling
    if not comments:
        return None
    return "\n".join(reversed(comments))


def _body_shape(body: Node | None) -> tuple[list[Node], str | None]:
    if body is None:
        return [], None
    statements = [c for c in body.named_children if c.type != "comment"]
    single: str | None = None
    if len(statements) == 1 and statements[0].type in ("return_statement", "expression_statement"):
        inner = statements[0].named_children
        if len(inner) == 1 and inner[0].type == "call_expression":
            fn = inner[0].child_by_field_name("function")
            if fn is not None:
                single = _text(fn)
    return statements, single


def _span(node: Node) -> tuple[int, int, int, int]:
    # Preprocessor lines own their newline; a span ending at column 0 ends on the line before.
    end_row, end_col = node.end_point
    if end_col == 0 and end_row > node.start_point[0]:
        end_row -= 1
    return node.start_point[0] + 1, end_row + 1, node.start_byte, node.end_byte


def extract_c(path: str, source: bytes, macros: MacroTable | None = None) -> FileRecord:
    """Extract one C file; `macros` are the repository's (see c_macros), merged with its own."""
    table = collect([source])
    if macros is not None:
        table = macros.merged(table)
    parse_text = rewrite(source, table)
    tree = parser(Lang.C).parse(parse_text)
    root = tree.root_node
    record = FileRecord(
        path=path,
        lang=Lang.C,
        source=source,
        lines=source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1),
        parse_source=parse_text if parse_text != source else None,
    )
    caps = captures(Lang.C, QUERY, root)
    source_lines = source.split(b"\n")
    defs = sorted(caps.get("fn", []), key=lambda n: n.start_byte)
    spans = [(n.start_byte, n.end_byte) for n in defs]
    for node in defs:
        # A definition starting with a blanked macro (`CJS_PUBLIC(int) f`) starts at the macro.
        start_byte = _macro_start(source, parse_text, node.start_byte)
        fdecl = _function_declarator(node.child_by_field_name("declarator"))
        name = _function_name(node)
        body = node.child_by_field_name("body")
        body_start = body.start_byte if body is not None else node.end_byte
        specifiers = [_text(c) for c in node.children if c.type == "storage_class_specifier"]
        statements, single = _body_shape(body)
        rtype = _text(node.child_by_field_name("type"))
        top = node.child_by_field_name("declarator")
        stars = 0
        while top is not None and top.type == "pointer_declarator":
            stars += 1
            top = top.child_by_field_name("declarator")
        record.functions.append(
            FunctionRecord(
                lang=Lang.C,
                path=path,
                name=name or "<anonymous>",
                qualname=name or "<anonymous>",
                kind="function",
                class_qualname=None,
                parent_qualname=None,
                start_line=node.start_point[0] + 1,
                def_line=(fdecl or node).start_point[0] + 1,
                end_line=node.end_point[0] + 1,
                start_byte=start_byte,
                end_byte=node.end_byte,
                body_start_byte=body_start,
                signature=" ".join(
                    source[start_byte:body_start].decode("utf-8", "replace").split()
                ),
                params=_params(fdecl),
                return_type=(rtype + " " + "*" * stars).strip() if rtype else None,
                docstring=_leading_comment(node),
                decorators=[],
                is_static="static" in specifiers,
                statements=len(statements),
                code_lines=code_lines(
                    [(n.start_point[0], n.end_point[0]) for n in statements],
                    source_lines,
                    (b"//", b"/*", b"*"),
                ),
                single_call=single,
            )
        )
    functions = record.functions

    calls = sorted(caps.get("call", []), key=lambda n: n.start_byte)
    for node, where in zip(calls, innermost(spans, [n.start_byte for n in calls]), strict=True):
        if where >= 0:
            row, col = node.start_point
            expr = _text(node) if node.type == "identifier" else " ".join(_text(node).split())
            functions[where].calls.append(CallSite(expr[:80], row + 1, col))

    rets = sorted(caps.get("ret", []), key=lambda n: n.start_byte)
    for node, where in zip(rets, innermost(spans, [n.start_byte for n in rets]), strict=True):
        if where < 0:
            continue
        fn = functions[where]
        fn.returns += 1
        value = node.named_children[0] if node.named_child_count else None
        if value is not None and value.type != "comment":
            fn.value_returns += 1
            if value.type in LITERALS:
                fn.literal_returns += 1

    for where in innermost(spans, sorted(n.start_byte for n in caps.get("branch", []))):
        if where >= 0:
            functions[where].branches += 1

    errors = sorted(caps.get("error", []), key=lambda n: n.start_byte)
    if root.has_error or errors:
        record.has_errors = True
        record.errors = [(n.start_point[0] + 1, n.start_point[1]) for n in errors]
        for where in innermost(spans, [n.start_byte for n in errors]):
            if where >= 0:
                functions[where].in_error = True

    outside = _outside_functions(spans)
    for node in caps.get("include", []):
        target = node.child_by_field_name("path")
        if target is None:
            continue
        text = _text(target)
        system = target.type == "system_lib_string"
        record.imports.append(
            ImportRecord(
                None,
                text.strip('<>"'),
                text.strip('<>"'),
                "system" if system else None,
                *_span(node),
            )
        )
    for node in caps.get("macro", []):
        record.globals.append(
            GlobalRecord(_text(node.child_by_field_name("name")), "macro", *_span(node))
        )
    for node in caps.get("fmacro", []):
        record.globals.append(
            GlobalRecord(_text(node.child_by_field_name("name")), "function-macro", *_span(node))
        )
    for node in caps.get("typedef", []):
        if outside(node.start_byte):
            for decl in node.children_by_field_name("declarator"):
                name, _ = _declared(decl)
                if name:
                    record.globals.append(GlobalRecord(name, "type", *_span(node)))
    for node in caps.get("tagged", []):
        if not outside(node.start_byte):
            continue
        holder = (
            node.parent
            if node.parent is not None and node.parent.type in ("type_definition", "declaration")
            else node
        )
        name = _text(node.child_by_field_name("name"))
        if name:
            record.globals.append(GlobalRecord(name, "type", *_span(holder)))
        if node.type == "enum_specifier":
            body = node.child_by_field_name("body")
            for enumerator in body.named_children if body is not None else []:
                if enumerator.type == "enumerator":
                    record.globals.append(
                        GlobalRecord(
                            _text(enumerator.child_by_field_name("name")),
                            "constant",
                            *_span(holder),
                        )
                    )
    for node in caps.get("decl", []):
        if not outside(node.start_byte) or (
            node.parent is not None
            and node.parent.type
            not in (
                "translation_unit",
                "preproc_if",
                "preproc_ifdef",
                "preproc_else",
                "preproc_elif",
                "linkage_specification",
                "declaration_list",
            )
        ):
            continue
        for decl in node.children_by_field_name("declarator"):
            name, function = _declared(decl)
            if name:
                record.globals.append(
                    GlobalRecord(name, "prototype" if function else "variable", *_span(node))
                )
    record.globals.sort(key=lambda g: g.start_byte)
    return record


def _macro_start(source: bytes, parse_text: bytes, start: int) -> int:
    """Where a definition starts in the source when the macro pass blanked what led it."""
    if parse_text is source:
        return start
    k = start
    while k > 0 and parse_text[k - 1] in b" \t":
        k -= 1
    while k < start and source[k] in b" \t":
        k += 1
    return k


def _outside_functions(spans: list[tuple[int, int]]) -> Callable[[int], bool]:
    starts = [s for s, _ in spans]

    def outside(pos: int) -> bool:
        i = bisect_right(starts, pos) - 1
        return i < 0 or spans[i][1] <= pos

    return outside
