"""tree-sitter languages and parsers (py-tree-sitter >= 0.25 API), one set per process."""

from __future__ import annotations

from functools import cache
from pathlib import PurePosixPath

import tree_sitter_c
import tree_sitter_python
from tree_sitter import Language, Node, Parser, Query, QueryCursor

from simulator.analysis.model import Lang

SUFFIXES: dict[str, Lang] = {".py": Lang.PYTHON, ".pyi": Lang.PYTHON, ".c": Lang.C, ".h": Lang.C}


def lang_of(path: str) -> Lang | None:
    return SUFFIXES.get(PurePosixPath(path).suffix)


@cache
def language(lang: Lang) -> Language:
    if lang is Lang.PYTHON:
        return Language(tree_sitter_python.language())
    return Language(tree_sitter_c.language())


@cache
def parser(lang: Lang) -> Parser:
    return Parser(language(lang))


@cache
def query(lang: Lang, source: str) -> Query:
    return Query(language(lang), source)


def captures(lang: Lang, source: str, root: Node) -> dict[str, list[Node]]:
    """The captures of a query under root, each list in source order (the outer node first when
    two start at the same byte): the order tree-sitter yields them in is not stable from one
    parse to the next, and the index must be the same however and wherever it is built."""
    found = QueryCursor(query(lang, source)).captures(root)
    return {
        name: sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte, n.type))
        for name, nodes in found.items()
    }
