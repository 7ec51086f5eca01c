"""A TextArea that stays fast on large files: it highlights only the lines it draws.

Stock `TextArea` runs the tree-sitter highlights query over the whole document when a file is
loaded and again after every edit (hundreds of milliseconds per key on a 20k-line file). Here the
tree is still kept up to date incrementally by `SyntaxAwareDocument` (`tree.edit` + reparse), but
the query runs lazily, per block of lines, the first time `_render_line` asks for a line of that
block; an edit only drops the cached blocks. Python and C use tree-sitter; other languages that
Pygments knows are lexed line by line, again only for the lines drawn; anything else is plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.token import Token, _TokenType
from pygments.util import ClassNotFound
from textual.geometry import Size
from textual.widgets import TextArea
from tree_sitter import Language, QueryCursor

# (start byte, end byte or None for "to the end of the line", highlight name), as TextArea wants.
Highlight = tuple[int, int | None, str]

# Lines are highlighted in blocks of this many: big enough that one screen needs one or two
# queries, small enough that a query takes well under a millisecond or two.
BLOCK = 64

TREE_SITTER_SUFFIXES = {".py": "python", ".pyi": "python", ".pyw": "python", ".c": "c", ".h": "c"}

# tree-sitter-c's capture names, renamed to the names TextArea themes give styles to.
_C_CAPTURE_RENAMES = {
    "@constant": "@constant.builtin",
    "@function.special": "@keyword",
    "@delimiter": "@punctuation.delimiter",
    "@property": "@variable",
    "@label": "@variable",
}

# Pygments token types (most specific first) to TextArea highlight names.
_PYGMENTS_NAMES: list[tuple[_TokenType, str]] = [
    (Token.Comment, "comment"),
    (Token.Literal.String.Doc, "string.documentation"),
    (Token.Literal.String, "string"),
    (Token.Literal.Number, "number"),
    (Token.Keyword.Constant, "boolean"),
    (Token.Keyword.Type, "type.builtin"),
    (Token.Keyword, "keyword"),
    (Token.Name.Builtin, "function.call"),
    (Token.Name.Function, "function"),
    (Token.Name.Class, "class"),
    (Token.Name.Tag, "tag"),
    (Token.Name.Attribute, "css.property"),
    (Token.Name.Decorator, "function"),
    (Token.Operator.Word, "keyword.operator"),
    (Token.Operator, "operator"),
    (Token.Generic.Heading, "heading"),
    (Token.Generic.Subheading, "heading"),
    (Token.Generic.Strong, "bold"),
    (Token.Generic.Emph, "italic"),
]


@cache
def _pygments_name(token: _TokenType) -> str | None:
    for parent, name in _PYGMENTS_NAMES:
        if token[: len(parent)] == parent:
            return name
    return None


@cache
def c_language() -> tuple[Language, str]:
    """The tree-sitter C grammar and its highlights query (shipped with tree_sitter_c)."""
    import tree_sitter_c

    query = resources.files("tree_sitter_c").joinpath("queries/highlights.scm").read_text()
    for old, new in _C_CAPTURE_RENAMES.items():
        query = re.sub(re.escape(old) + r"\b(?![.\w])", new, query)
    return Language(tree_sitter_c.language()), query


def language_for(path: str) -> str | None:
    """The tree-sitter language name for a path, or None."""
    return TREE_SITTER_SUFFIXES.get(PurePosixPath(path).suffix.lower())


def pygments_lexer_for(path: str) -> Lexer | None:
    try:
        lexer = get_lexer_for_filename(PurePosixPath(path).name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return lexer


class LazyHighlights(dict[int, list[Highlight]]):
    """Per-line highlights, computed a block at a time when a line is first looked up."""

    def __init__(self, compute_block: Callable[[int], None], active: Callable[[], bool]) -> None:
        super().__init__()
        self._compute_block = compute_block
        self._active = active

    def __bool__(self) -> bool:
        return self._active()

    def __missing__(self, row: int) -> list[Highlight]:
        self._compute_block(row)
        return self.get(row, [])


class CodeEditor(TextArea):
    """A code editor whose highlighting costs what is on screen, not what is in the file."""

    def __init__(self, text: str = "", *, path: str | None = None, **kwargs: Any) -> None:
        self._pygments: Lexer | None = None
        self._doc_width: int | None = None
        super().__init__(text, **kwargs)
        if path is not None:
            self.set_path_language(path)

    # -- languages -----------------------------------------------------------------------------

    def set_path_language(self, path: str) -> None:
        """Pick the highlighter from a file name: tree-sitter, Pygments, or none."""
        name = language_for(path)
        if name == "c" and "c" not in self._languages:
            language, query = c_language()
            self.register_language("c", language, query)
        if name is not None:
            self._pygments = None
            self.language = name
        else:
            self._pygments = pygments_lexer_for(path)
            self.language = None
            self._build_highlight_map()

    @property
    def highlighter(self) -> str:
        """What highlights this buffer: 'tree-sitter', 'pygments' or 'plain'."""
        if self._highlight_query is not None:
            return "tree-sitter"
        return "pygments" if self._pygments is not None else "plain"

    # -- highlighting --------------------------------------------------------------------------

    def _highlighting_active(self) -> bool:
        return self._highlight_query is not None or self._pygments is not None

    def _build_highlight_map(self) -> None:
        """Called by TextArea after every load and edit: forget, rather than recompute."""
        self._line_cache.clear()
        if not isinstance(self._highlights, LazyHighlights):
            self._highlights = LazyHighlights(self._compute_block, self._highlighting_active)
        self._highlights.clear()

    def _compute_block(self, row: int) -> None:
        highlights = self._highlights
        line_count = self.document.line_count
        if row < 0 or row >= line_count:
            return
        start = row - row % BLOCK
        end = min(start + BLOCK, line_count)
        for index in range(start, end):
            highlights[index] = []
        if self._highlight_query is not None:
            self._query_block(start, end)
        elif self._pygments is not None:
            self._lex_block(start, end)

    def _query_block(self, start: int, end: int) -> None:
        highlights = self._highlights
        cursor = QueryCursor(self._highlight_query)  # type: ignore[arg-type]
        cursor.set_point_range((start, 0), (end, 0))
        tree = getattr(self.document, "_syntax_tree", None)
        if tree is None:
            return
        for name, nodes in cursor.captures(tree.root_node).items():
            for node in nodes:
                first, first_col = node.start_point
                last, last_col = node.end_point
                if first == last:
                    if start <= first < end:
                        highlights[first].append((first_col, last_col, name))
                    continue
                if start <= first < end:
                    highlights[first].append((first_col, None, name))
                for middle in range(max(first + 1, start), min(last, end)):
                    highlights[middle].append((0, None, name))
                if start <= last < end:
                    highlights[last].append((0, last_col, name))

    def _lex_block(self, start: int, end: int) -> None:
        assert self._pygments is not None
        highlights = self._highlights
        document = self.document
        for index in range(start, end):
            line = document[index]
            if not line:
                continue
            column = 0
            found = highlights[index]
            for _index, token, value in self._pygments.get_tokens_unprocessed(line):
                size = len(value.encode("utf-8"))
                name = _pygments_name(token)
                if name is not None and value.strip():
                    found.append((column, column + size, name))
                column += size

    def _set_document(self, text: str, language: str | None) -> None:
        self._doc_width = None
        super()._set_document(text, language)

    # -- size ----------------------------------------------------------------------------------

    def _refresh_size(self) -> None:
        """TextArea measures every line after every edit; the width only changes on the edited
        lines, so it is measured once per load and then grown, never re-scanned per key."""
        if self.soft_wrap:
            super()._refresh_size()
            return
        height = self.document.line_count
        if self._doc_width is None:
            self._doc_width = self.document.get_size(self.indent_width).width
        else:
            row = self.cursor_location[0]
            if row < height:
                line = self.document[row].expandtabs(self.indent_width)
                self._doc_width = max(self._doc_width, len(line))
        self.virtual_size = Size(self._doc_width + self.gutter_width + 1, height)
        self._refresh_scrollbars()
