"""tree-sitter languages and parsers (py-tree-sitter >= 0.25 API), one set per process."""

from __future__ import annotations

from functools import cache
from pathlib import PurePosixPath

import tree_sitter_c
import tree_sitter_python
from tree_sitter import Language, Parser, Query

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
