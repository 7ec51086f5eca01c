"""Extraction, call graph and slicing on a small hand-made C repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.analysis import CodeIndex


@pytest.fixture
def index(c_repo: Path) -> CodeIndex:
    return CodeIndex.build(c_repo)


def test_functions_and_metadata(index: CodeIndex) -> None:
    names = {f.id for f in index.functions()}
    assert {
        "include/vec.h::vec_sum",
        "src/vec.c::vec_dot",
        "src/vec.c::scale",
        "src/vec.c::vec_norm2",
        "src/main.c::scale",
        "src/main.c::main",
        "src/broken.c::good_before",
        "src/broken.c::good_after",
    } <= names
    dot = index.find("src/vec.c::vec_dot")[0]
    assert dot.params == ["a", "b"] and dot.return_type == "double"
    assert dot.docstring == "/* Dot product of two vectors. */"
    assert dot.signature == "double vec_dot(vec_t a, vec_t b)"
    norm = index.find("src/vec.c::vec_norm2")[0]
    assert norm.branches == 2  # the `if` and the `&&`
    assert index.find("src/vec.c::scale")[0].is_static


def test_calls_resolve_through_headers_and_translation_units(index: CodeIndex) -> None:
    norm = {r.expr: r for r in index.callees("src/vec.c::vec_norm2")}
    assert norm["scale"].target == "src/vec.c::scale"  # the static one of its own file
    assert norm["vec_dot"].target == "src/vec.c::vec_dot"
    assert norm["SQUARE"].target == "include/vec.h::SQUARE"
    assert norm["vec_sum"].target == "include/vec.h::vec_sum"  # static inline in the header
    main = {r.expr: r for r in index.callees("src/main.c::main")}
    assert main["vec_norm2"].target == "src/vec.c::vec_norm2"  # another translation unit
    assert main["scale"].target == "src/main.c::scale"  # never the other file's static
    assert main["printf"].target is None and main["printf"].reason == "external: printf"
    assert main["vec_missing"].target is None
    assert "declared in include/vec.h" in (main["vec_missing"].reason or "")
    assert main["cb"].target is None


def test_callers_in_c(index: CodeIndex) -> None:
    assert {r.caller for r in index.callers("src/vec.c::vec_dot")} == {"src/vec.c::vec_norm2"}
    assert {r.caller for r in index.callers("src/vec.c::scale")} == {"src/vec.c::vec_norm2"}


def test_syntax_error_keeps_the_other_functions(index: CodeIndex) -> None:
    broken = index.files["src/broken.c"]
    assert broken.has_errors and broken.errors and broken.errors[0][0] == 3
    after = index.find("src/broken.c::good_after")[0]
    assert not after.in_error
    assert {r.target for r in index.callees(after.id)} == {"src/broken.c::good_before"}
    assert not index.files["src/vec.c"].has_errors


def test_definition_and_outline(index: CodeIndex) -> None:
    # `vec_norm2(v)` in main.c line 8.
    loc = index.definition_at("src/main.c", 8, 22)
    assert loc is not None and (loc.path, loc.line, loc.name) == ("src/vec.c", 10, "vec_norm2")
    loc = index.definition_at("src/main.c", 2, 12)  # #include "vec.h"
    assert loc is not None and (loc.path, loc.kind) == ("include/vec.h", "header")
    loc = index.definition_at("src/main.c", 7, 5)  # vec_t
    assert loc is not None and (loc.path, loc.kind) == ("include/vec.h", "type")
    outline = [(s.name, s.kind) for s in index.outline("include/vec.h")]
    assert ("VEC_MAX", "macro") in outline and ("SQUARE", "function-macro") in outline
    assert ("vec_dot", "prototype") in outline and ("vec_sum", "function") in outline


def test_slice_in_c(index: CodeIndex) -> None:
    sliced = index.slice("src/vec.c::vec_norm2")
    assert [f.path for f in sliced.files] == ["include/vec.h", "src/vec.c"]
    header = {p.name for p in sliced.files[0].pieces}
    assert {"SQUARE", "vec_sum", "vec_t"} <= header
    own = [(p.kind, p.name) for p in sliced.files[1].pieces]
    assert own[0] == ("import", "../include/vec.h")
    assert ("function", "vec_dot") in own and ("function", "scale") in own
    assert ("macro", "VEC_MAX") in {(p.kind, p.name) for p in sliced.files[0].pieces}
    assert own[-1] == ("target", "vec_norm2")
