"""Masking a target (signature and docstring kept) and splicing an implementation in its place."""

from __future__ import annotations

import ast
import textwrap

from simulator.harness.target import Target


class SpliceError(Exception):
    """A generated answer that holds no usable definition of the target."""


def indentation(target: Target, source: str) -> str:
    line = source.splitlines()[target.start_line - 1]
    return line[: len(line) - len(line.lstrip())]


def reference_text(target: Target, source: str) -> str:
    """The target's whole lines in `source` (decorators included), dedented."""
    lines = source.splitlines(keepends=True)[target.start_line - 1 : target.end_line]
    return textwrap.dedent("".join(lines))


def masked(target: Target, source: str) -> str:
    """The target with its body replaced by `...`: decorators, signature and docstring stay."""
    body = reference_text(target, source)
    tree = ast.parse(body)
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
    lines = body.splitlines()
    first = function.body[0]
    keep_until = first.lineno - 1  # the lines before the first statement (decorators, def)
    kept = lines[:keep_until]
    inner = " " * (first.col_offset)
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        kept = lines[: first.end_lineno]
    return "\n".join([*kept, f"{inner}..."]) + "\n"


def extract_function(code: str, name: str) -> str:
    """The definition of `name` (decorators included) in a model's code, dedented."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise SpliceError(f"the code does not parse (line {exc.lineno}: {exc.msg})") from None
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    ]
    if not found:
        raise SpliceError(f"the code defines no function named {name}")
    node = found[0]
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = code.splitlines()[first - 1 : node.end_lineno]
    return textwrap.dedent("\n".join(lines)) + "\n"


def splice(source: str, target: Target, implementation: str) -> str:
    """`source` with the target's lines replaced by `implementation` at the target's indent."""
    lines = source.splitlines(keepends=True)
    indent = indentation(target, source)
    body = textwrap.indent(textwrap.dedent(implementation), indent)
    if not body.endswith("\n"):
        body += "\n"
    return "".join([*lines[: target.start_line - 1], body, *lines[target.end_line :]])
