"""Code text that stands alone: a definition cut out of its file, re-indented to parse.

A method's span starts at its first decorator (or `def`), so the text cut from the file has its
first line at column 0 and every other line at the method's indentation. Such a text does not
parse when it has a decorator (`@property` at column 0, `def` indented under it). Every code
field RepoSim writes (extract's `body`, a problem's reference, the R2E and RepoST exports) is
the definition dedented as a whole, decorators with their `def`.
"""

from __future__ import annotations

import ast
import re

from simulator.analysis.model import FileRecord

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]")


def line_indent(record: FileRecord, offset: int) -> str:
    """The whitespace before `offset` on its line ("" when code precedes it)."""
    line_start = record.source.rfind(b"\n", 0, offset) + 1
    indent = record.source[line_start:offset]
    return indent.decode() if indent.strip() == b"" else ""


def strip_indent(text: str, indent: str) -> str:
    """`text` with `indent` taken off every line that starts with it (blank lines emptied)."""
    if not indent:
        return text
    return "".join(
        line[len(indent) :]
        if line.startswith(indent)
        else line.lstrip(" \t")
        if not line.strip()
        else line
        for line in text.splitlines(keepends=True)
    )


def definition_text(record: FileRecord, start: int, end: int) -> str:
    """The definition between two byte offsets (its first decorator or `def` to its end),
    dedented as a whole: the decorators and the `def` at column 0, the body under them."""
    return strip_indent(record.text(start, end), line_indent(record, start))


def parses_as_python(source: str | bytes) -> bool:
    """`ast.parse` accepts it (a syntax error, or a NUL byte, says no)."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def standalone_definition(text: str) -> str:
    """A definition's text as `definition_text` gives it, from either form RepoSim has written:
    already dedented (returned as it is), or cut at the decorator with the rest still indented
    (records made before the fix): the `def` line's indentation is taken off every line."""
    if not text or parses_as_python(text):
        return text
    for line in text.splitlines():
        found = _DEF.match(line)
        if found is not None:
            fixed = strip_indent(text, found.group(1))
            return fixed if parses_as_python(fixed) else text
    return text


def reindent(text: str, old: str, new: str) -> str:
    """`text` with the leading `old` of every line that has it replaced by `new`."""
    return "".join(
        new + line[len(old) :] if line.startswith(old) and line.strip() else line
        for line in text.splitlines(keepends=True)
    )
