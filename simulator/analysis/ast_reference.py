"""The reference the tree-sitter extractor is checked and benchmarked against: Python's `ast`.

Yields what `ast` sees as functions and methods, as (qualname, def line) pairs with
`__qualname__`-style names, so a test can compare sets and the benchmark can time it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator


def ast_functions(source: bytes) -> Iterator[tuple[str, int]]:
    """Raises SyntaxError (or ValueError for NUL bytes) when `ast` cannot parse the file."""
    tree = ast.parse(source)
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                qual = prefix + child.name
                yield qual, child.lineno
                stack.append((child, qual + ".<locals>."))
            elif isinstance(child, ast.ClassDef):
                stack.append((child, prefix + child.name + "."))
            else:
                stack.append((child, prefix))
