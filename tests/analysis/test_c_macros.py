"""C written with export and calling-convention macros (cJSON's style) parses, names right."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from simulator.analysis import CodeIndex
from simulator.analysis.c_macros import collect, rewrite

CJS = Path(__file__).parent / "data" / "cjs"

FUNCTIONS = {
    "cjs.c": [
        "cjs_version",
        "internal_malloc",
        "internal_free",
        "cjs_init_hooks",
        "new_item",
        "skip_whitespace",
        "is_digit",
        "parse_value",
        "cjs_parse",
        "cjs_delete",
        "cjs_array_size",
        "cjs_array_item",
        "cjs_is_number",
        "cjs_number_value",
    ],
    "cjs.h": [],
    "cjs_utils.c": ["cjs_utils_sum", "cjs_utils_max"],
    "cjs_utils.h": [],
    "test.c": ["print_sum", "main"],
    # UNIT_BEGIN(name) ... UNIT_END open and close a function's braces: what is between
    # them is not an ordinary function, the functions around them are.
    "tests/parse_tests.c": ["parse_or_die", "count_numbers", "first_number", "main"],
    "tests/unit.h": [],
}


def test_no_file_has_errors_and_every_name_is_right(tmp_path: Path) -> None:
    repo = tmp_path / "cjs"
    shutil.copytree(CJS, repo)
    index = CodeIndex.build(repo, workers=1)
    assert {p: r.has_errors for p, r in index.files.items()} == dict.fromkeys(FUNCTIONS, False)
    assert {p: [f.name for f in r.functions] for p, r in index.files.items()} == FUNCTIONS
    graph = index.graph
    parse = graph.functions["cjs.c::cjs_parse"]
    assert parse.return_type == "cjs_item *" and parse.params == ["value"]
    assert parse.signature == "CJS_PUBLIC(cjs_item *) cjs_parse(const char *value)"
    assert parse.body_start_byte > parse.start_byte  # offsets are the file's own
    assert index.files["cjs.c"].text(parse.start_byte, parse.start_byte + 10) == "CJS_PUBLIC"
    # Calls resolve across files through the macros.
    callees = {e.expr: e.target for e in graph.callees("cjs_utils.c::cjs_utils_max")}
    assert callees["cjs_array_size"] == "cjs.c::cjs_array_size"
    assert callees["cjs_number_value"] == "cjs.c::cjs_number_value"
    assert {e.caller for e in graph.callers("cjs.c::cjs_delete")} >= {
        "cjs.c::cjs_parse",
        "cjs.c::cjs_delete",
        "test.c::print_sum",
    }
    # The loop macro is a loop to the metrics; the editor index sees the same functions.
    assert graph.functions["cjs.c::cjs_array_size"].branches == 1
    texts = {p: (repo / p).read_bytes() for p in FUNCTIONS}
    from_texts = CodeIndex.from_texts(texts)
    assert {p: [f.name for f in r.functions] for p, r in from_texts.files.items()} == FUNCTIONS


def test_the_pass_keeps_offsets_and_touches_no_directive() -> None:
    header = (CJS / "cjs.h").read_bytes()
    table = collect([header])
    assert {b"CJS_CDECL", b"CJS_STDCALL"} <= table.attributes
    assert table.wrappers == {b"CJS_PUBLIC"}
    assert table.loops == {b"cjs_array_for_each"}
    source = (CJS / "cjs.c").read_bytes()
    out = rewrite(source, table.merged(collect([source])))
    assert len(out) == len(source) and out.count(b"\n") == source.count(b"\n")
    assert b"CJS_PUBLIC(" not in out and b"CJS_CDECL" not in out.split(b"\n#", 1)[0]
    for before, after in zip(source.splitlines(), out.splitlines(), strict=True):
        if before.lstrip().startswith(b"#"):
            assert before == after


def test_conventional_macros_without_definitions(make_repo: Callable[..., Path]) -> None:
    repo = make_repo(
        {
            "api.c": (
                "MYLIB_API int MYLIB_CALL add(int a, int b) { return a + b; }\n"
                "ZZ_PUBLIC(double) half(double x) { return x / 2; }\n"
                "int WINAPI win_main(void) { return add(1, 2); }\n"
            )
        },
        name="api",
    )
    index = CodeIndex.build(repo, workers=1)
    record = index.files["api.c"]
    assert not record.has_errors
    assert [f.name for f in record.functions] == ["add", "half", "win_main"]


def test_a_name_never_comes_from_a_parameter_list() -> None:
    # An unknown macro the pass cannot recognise (defined nowhere, no convention) still does
    # not make `void` the function's name (tree-sitter reads `main` as a type there).
    source = (
        'static void create_objects(void)\n{\n    puts("x");\n}\n\n'
        "int ODDCONV main(void)\n{\n    create_objects();\n    return 0;\n}\n"
    )
    index = CodeIndex.from_texts({"test.c": source})
    assert [f.name for f in index.files["test.c"].functions] == ["create_objects", "main"]
