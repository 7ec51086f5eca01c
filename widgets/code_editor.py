"""A TextArea that stays fast on large files: it highlights only the lines it draws.

Stock `TextArea` runs the tree-sitter highlights query over the whole document when a file is
loaded and again after every edit (hundreds of milliseconds per key on a 20k-line file). Here the
tree is still kept up to date incrementally by `SyntaxAwareDocument` (`tree.edit` + reparse), but
the query runs lazily, per block of lines, the first time `_render_line` asks for a line of that
block; an edit only drops the cached blocks. Python and C use tree-sitter; other languages that
Pygments knows are lexed line by line, again only for the lines drawn; anything else is plain text.
"""

from __future__ import annotations

import abc
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from pygments.token import Token, _TokenType
from textual._tree_sitter import get_language
from textual.binding import BindingType
from textual.document._document import Document, DocumentBase, EditResult, Location
from textual.document._document_navigator import DocumentNavigator
from textual.document._syntax_aware_document import SyntaxAwareDocument
from textual.document._wrapped_document import WrappedDocument
from textual.expand_tabs import get_tab_widths
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import TextArea
from textual.widgets.text_area import Selection
from tree_sitter import Language, Parser, Query, QueryCursor, Tree

from widgets.keybindings import default_bindings

if TYPE_CHECKING:  # pygments.lexers loads with the first file Pygments highlights (cold start)
    from pygments.lexer import Lexer

# (start byte, end byte or None for "to the end of the line", highlight name), as TextArea wants.
Highlight = tuple[int, int | None, str]

# Lines are highlighted in blocks of this many: big enough that one screen needs one or two
# queries, small enough that a query takes well under a millisecond or two.
BLOCK = 64
# After an edit the tree is reparsed once typing pauses this long (seconds), and at least this
# often while typing goes on.
PARSE_DELAY = 0.25
MAX_PARSE_DELAY = 1.0

TREE_SITTER_SUFFIXES = {".py": "python", ".pyi": "python", ".pyw": "python", ".c": "c", ".h": "c"}

# Line-comment markers by file suffix (or whole name), for Ctrl+/.
_HASH = (".py", ".pyi", ".pyw", ".sh", ".bash", ".zsh", ".toml", ".yaml", ".yml", ".cfg", ".r")
_SLASHES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".js", ".jsx", ".ts", ".tsx")
_SLASHES_MORE = (".rs", ".go", ".java", ".kt", ".swift", ".cs", ".scala", ".dart", ".zig")
COMMENT_PREFIXES: dict[str, str] = {
    **dict.fromkeys(_HASH, "#"),
    **dict.fromkeys(_SLASHES + _SLASHES_MORE, "//"),
    **dict.fromkeys((".sql", ".lua", ".hs"), "--"),
    **dict.fromkeys((".ini", ".asm", ".el", ".lisp", ".clj"), ";"),
    **dict.fromkeys((".tex", ".erl"), "%"),
    **dict.fromkeys(("makefile", "gnumakefile", "dockerfile", "cmakelists.txt", ".cmake"), "#"),
    **dict.fromkeys((".mk", ".gitignore", ".dockerignore", ".env", ".pl", ".rb"), "#"),
}


# Languages without a line comment: each line is wrapped instead (as VS Code does for them).
COMMENT_WRAPS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(
        (".md", ".markdown", ".html", ".htm", ".xml", ".svg", ".xhtml"), ("<!--", "-->")
    ),
    **dict.fromkeys((".css",), ("/*", "*/")),
}


def comment_markers(path: str) -> tuple[str, str] | None:
    """How a line of this file's language is commented out: ("#", "") for Python, ("//", "")
    for C, ("<!--", "-->") for Markdown and HTML; None when RepoSim does not know."""
    name = PurePosixPath(path).name.lower()
    suffix = PurePosixPath(name).suffix
    prefix = COMMENT_PREFIXES.get(name) or COMMENT_PREFIXES.get(suffix)
    if prefix is not None:
        return prefix, ""
    return COMMENT_WRAPS.get(suffix)


def toggle_line_comments(
    lines: list[str], prefix: str, suffix: str = ""
) -> tuple[list[str], list[int], list[int]]:
    """VS Code's Ctrl+/ on whole lines: comment them all at their common indent (wrapping each in
    `prefix` … `suffix` when the language has no line comment), or, when every non-blank line
    is already commented, uncomment them. Returns the new lines and, per line, the column where
    text was inserted or removed before the text and how many characters (negative: removed)."""
    all_blank = not any(line.strip() for line in lines)
    code = lines if all_blank else [line for line in lines if line.strip()]

    def commented(line: str) -> bool:
        text = line.strip()
        return text.startswith(prefix) and (not suffix or text.endswith(suffix))

    if not all_blank and all(commented(line) for line in code):
        out, at, delta = [], [], []
        for line in lines:
            column = line.find(prefix) if line.strip() else -1
            if column < 0:
                out.append(line)
                at.append(0)
                delta.append(0)
                continue
            end = column + len(prefix)
            if line[end : end + 1] == " ":
                end += 1
            rest = line[end:]
            if suffix:
                rest = rest.rstrip()[: -len(suffix)]
                rest = rest[:-1] if rest.endswith(" ") else rest
            out.append(line[:column] + rest)
            at.append(column)
            delta.append(column - end)
        return out, at, delta
    indent = min(len(line) - len(line.lstrip()) for line in code)
    marker = prefix + " "
    closing = " " + suffix if suffix else ""
    out, at, delta = [], [], []
    for line in lines:
        if line.strip() or all_blank:
            out.append(line[:indent].ljust(indent) + marker + line[indent:] + closing)
            at.append(indent)
            delta.append(len(marker))
        else:
            out.append(line)
            at.append(0)
            delta.append(0)
    return out, at, delta


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


_QUERIES: dict[tuple[int, str], Query] = {}


def _prepared_query(language: Language, source: str) -> Query:
    """Compiling a highlights query takes tens of milliseconds: do it once per language."""
    key = (id(language), source)
    query = _QUERIES.get(key)
    if query is None:
        query = _QUERIES[key] = Query(language, source)
    return query


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
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

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


@dataclass(frozen=True)
class LineChange:
    """Rows touched by one edit: `first`..`old_last` became `first`..`new_last`."""

    first: int
    old_last: int
    new_last: int


class TrackedDocument(Document):
    """A plain Document that remembers which rows each edit touched."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.changes: list[LineChange] = []
        self._text: str | None = None

    @property
    def text(self) -> str:
        # Stock TextArea.render_line asks for the whole text on every line it draws.
        if self._text is None:
            self._text = super().text
        return self._text

    def replace_range(self, start: Location, end: Location, text: str) -> EditResult:
        top, bottom = sorted((start, end))
        self._text = None
        result = super().replace_range(start, end, text)
        self.changes.append(LineChange(top[0], bottom[0], result.end_location[0]))
        return result


class FastSyntaxDocument(SyntaxAwareDocument):
    """SyntaxAwareDocument that keeps the parser out of the keystroke.

    Stock SyntaxAwareDocument reparses after every edit, through a Python callback that is
    called thousands of times per keystroke (once per line the parser walks past), and measures
    byte offsets with a generator over every line above the edit. Here an edit only moves the
    existing tree (`tree.edit`, so highlights elsewhere stay right) and records the rows it
    touched; the reparse runs from the encoded text in C, when the editor asks for it (after
    typing pauses). The parser holds the GIL, so a thread would not help.
    """

    def __init__(self, text: str, language: Language, *, parse: bool = True) -> None:
        Document.__init__(self, text)
        self.language = language
        self._parser = Parser(language)
        self._syntax_tree: Tree | None = None  # type: ignore[assignment]
        self.changes: list[LineChange] = []
        self.needs_parse = True
        self._text: str | None = None
        if parse:
            self.reparse()

    @property
    def tree(self) -> Tree | None:
        """The syntax tree (None until the first parse); may lag edits until `reparse`."""
        return self._syntax_tree

    @property
    def text(self) -> str:
        # Stock TextArea.render_line asks for the whole text on every line it draws.
        if self._text is None:
            self._text = Document.text.fget(self)  # type: ignore[attr-defined]
        return self._text

    def reparse(self) -> None:
        source = (self.text + self.newline).encode("utf-8")
        old = self._syntax_tree
        self._syntax_tree = (
            self._parser.parse(source) if old is None else self._parser.parse(source, old)
        )
        self.needs_parse = False

    def _location_to_byte_offset(self, location: Location) -> int:
        row, column = location
        lines = self._lines
        newline = self.newline
        above = len(newline.join(lines[:row]).encode("utf-8")) + len(newline) if row else 0
        if row < len(lines):
            return above + len(lines[row][:column].encode("utf-8"))
        return above

    def replace_range(self, start: Location, end: Location, text: str) -> EditResult:
        top, bottom = sorted((start, end))
        self._text = None
        tree = self._syntax_tree
        if tree is None:
            result = Document.replace_range(self, start, end, text)
        else:
            start_byte = self._location_to_byte_offset(top)
            old_end_byte = start_byte + len(self.get_text_range(top, bottom).encode("utf-8"))
            start_point = self._location_to_point(top)
            old_end_point = self._location_to_point(bottom)
            result = Document.replace_range(self, start, end, text)
            end_location = result.end_location
            new_end_byte = start_byte + len(self.get_text_range(top, end_location).encode("utf-8"))
            tree.edit(
                start_byte=start_byte,
                old_end_byte=old_end_byte,
                new_end_byte=new_end_byte,
                start_point=start_point,
                old_end_point=old_end_point,
                new_end_point=self._location_to_point(end_location),
            )
        self.needs_parse = True
        self.changes.append(LineChange(top[0], bottom[0], result.end_location[0]))
        return result


_Row = TypeVar("_Row")


class _NoWrapRows(Sequence[_Row]):
    """A per-line table of `WrappedDocument` when nothing wraps: each entry is computed from
    its line number on demand (`_row`), one per line of the document."""

    def __init__(self, document: DocumentBase) -> None:
        self._document = document

    def __len__(self) -> int:
        return self._document.line_count

    @abc.abstractmethod
    def _row(self, line: int) -> _Row:
        """The entry of line `line` (each subclass is one of WrappedDocument's tables)."""

    @overload
    def __getitem__(self, index: int) -> _Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[_Row]: ...
    def __getitem__(self, index: int | slice) -> _Row | list[_Row]:
        if isinstance(index, slice):
            return [self._row(y) for y in range(*index.indices(len(self)))]
        size = len(self)
        if not -size <= index < size:
            raise IndexError(index)
        return self._row(index % size)


class _NoWrapOffsets(_NoWrapRows[list[int]]):
    """`WrappedDocument._wrap_offsets` when nothing wraps: an empty list for every line."""

    def _row(self, line: int) -> list[int]:
        return []


class _NoWrapLineInfo(_NoWrapRows[tuple[int, int]]):
    """`WrappedDocument._offset_to_line_info` when nothing wraps: row y is line y."""

    def _row(self, line: int) -> tuple[int, int]:
        return (line, 0)


class _NoWrapLineOffsets(_NoWrapRows[list[int]]):
    """`WrappedDocument._line_index_to_offsets` when nothing wraps: line i is at row i."""

    def _row(self, line: int) -> list[int]:
        return [line]


class LazyWrappedDocument(WrappedDocument):
    """WrappedDocument that, without soft wrap, computes nothing per line.

    Stock WrappedDocument measures tabs and wrap points for every line on load and shifts the
    offsets of every line below an edit; with wrapping off, each of those answers is simply
    "line y is row y", so they are answered on demand. With soft wrap on it is the stock class.
    """

    def wrap(self, width: int, tab_width: int | None = None) -> None:
        if width:
            self._lazy = False
            super().wrap(width, tab_width)
            return
        self._lazy = True
        self._width = 0
        if tab_width:
            self._tab_width = tab_width
        document = self.document
        self._wrap_offsets = _NoWrapOffsets(document)  # type: ignore[assignment]
        self._offset_to_line_info = _NoWrapLineInfo(document)  # type: ignore[assignment]
        self._line_index_to_offsets = _NoWrapLineOffsets(document)  # type: ignore[assignment]
        self._tab_width_cache = _NoWrapOffsets(document)  # type: ignore[assignment]

    @property
    def height(self) -> int:
        if self._lazy:
            return self.document.line_count
        return super().height

    def wrap_range(self, start: Location, old_end: Location, new_end: Location) -> None:
        if not self._lazy:
            super().wrap_range(start, old_end, new_end)

    def get_tab_widths(self, line_index: int) -> list[int]:
        if not self._lazy:
            return super().get_tab_widths(line_index)
        return [width for _, width in get_tab_widths(self.document[line_index], self._tab_width)]


class CodeEditor(TextArea):
    """A code editor whose highlighting costs what is on screen, not what is in the file."""

    # VS Code's keys where TextArea has Emacs' (widgets/keybindings.json, code_editor).
    BINDINGS: ClassVar[list[BindingType]] = list(default_bindings("code_editor"))

    def __init__(self, text: str = "", *, path: str | None = None, **kwargs: Any) -> None:
        self.path = path
        self._pygments: Lexer | None = None
        self._doc_width: int | None = None
        self._last_gutter = -1
        self._parse_timer: Timer | None = None
        self._parse_requested: float | None = None
        self._painted = False
        language: str | None = kwargs.pop("language", None)
        kwargs.setdefault("soft_wrap", False)  # code does not wrap, as in VS Code
        if path is not None:
            language = language_for(path)
            if language is None:
                self._pygments = pygments_lexer_for(path)
        # TextArea builds (and wraps) a document from the text it is given; give it nothing
        # and build the real document once, below.
        super().__init__("", **kwargs)
        self.set_reactive(TextArea.language, language)
        self._set_document(text, language)

    # -- languages -----------------------------------------------------------------------------

    def set_path_language(self, path: str) -> None:
        """Pick the highlighter from a file name: tree-sitter, Pygments, or none."""
        self.path = path
        name = language_for(path)
        self._pygments = pygments_lexer_for(path) if name is None else None
        self.set_reactive(TextArea.language, name)
        self._set_document(self.document.text, name)

    @property
    def highlighter(self) -> str:
        """What highlights this buffer: 'tree-sitter', 'pygments' or 'plain'."""
        if self._highlight_query is not None:
            return "tree-sitter"
        return "pygments" if self._pygments is not None else "plain"

    def _tree_sitter(self, name: str) -> tuple[Language, str] | None:
        registered = self._languages.get(name)
        if registered is not None and registered.language is not None:
            return registered.language, registered.highlight_query
        if name == "c":
            return c_language()
        language = get_language(name)
        if language is None:
            return None
        return language, self._get_builtin_highlight_query(name)

    def _set_document(self, text: str, language: str | None) -> None:
        """One document and one (lazy) wrapped view per load, with a fast first parse."""
        self._doc_width = None
        self._highlight_query = None
        found = self._tree_sitter(language) if language else None
        document: DocumentBase
        if found is not None:
            ts_language, query = found
            # The first parse of a big file takes a while; it runs right after the first frame
            # is painted, so the text shows at once and the colours follow.
            syntax = FastSyntaxDocument(text, ts_language, parse=False)
            self._highlight_query = _prepared_query(ts_language, query)
            document = syntax
            if self.is_mounted:
                self.call_after_refresh(self._reparse)
        else:
            document = TrackedDocument(text)
        self.document = document
        self.wrapped_document = LazyWrappedDocument(document, tab_width=self.indent_width)
        self.navigator = DocumentNavigator(self.wrapped_document)
        self._build_highlight_map()
        self.move_cursor((0, 0))
        self._rewrap_and_refresh_virtual_size()

    # -- VS Code's editing keys ----------------------------------------------------------------

    def action_document_edge(self, end: bool, select: bool = False) -> None:
        """Ctrl+Home / Ctrl+End (with Shift: select to there)."""
        document = self.document
        last = document.line_count - 1
        self.move_cursor((last, len(document[last])) if end else (0, 0), select=select)

    def action_toggle_comment(self) -> None:
        if self.read_only:
            return
        markers = comment_markers(self.path) if self.path else None
        if markers is None:
            self.notify("RepoSim does not know how this file's language comments a line.")
            return
        start, end = self.selection
        (top, _), (bottom, bottom_col) = sorted((start, end))
        if bottom > top and bottom_col == 0:
            bottom -= 1  # a selection that ends at a line's start does not take that line
        document = self.document
        lines = [document[row] for row in range(top, bottom + 1)]
        new, at, delta = toggle_line_comments(lines, *markers)
        if new == lines:
            return
        self.replace("\n".join(new), (top, 0), (bottom, len(lines[-1])))

        def moved(location: tuple[int, int]) -> tuple[int, int]:
            row, column = location
            index = row - top
            if not 0 <= index < len(new):
                return location
            if column >= at[index]:
                column = max(at[index], column + delta[index])
            return row, min(column, len(new[index]))

        self.selection = Selection(moved(start), moved(end))

    # -- highlighting --------------------------------------------------------------------------

    def _highlighting_active(self) -> bool:
        return self._highlight_query is not None or self._pygments is not None

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        if not self._painted:
            # Parse once the text is on screen: it is readable before the colours come (a
            # 20k-line file takes 0.2 s to parse), and a tab opened behind another parses
            # when it is first shown.
            self._painted = True
            self.call_after_refresh(self._reparse)
        return lines

    def _reparse(self) -> None:
        """Bring the syntax tree up to date with the text, then redraw with fresh colours."""
        if not self._painted:
            return
        self._parse_timer = None
        self._parse_requested = None
        document = self.document
        if isinstance(document, FastSyntaxDocument) and document.needs_parse:
            document.reparse()
            document.changes.clear()
            self._highlights.clear()
            self._line_cache.clear()
            self.refresh()

    def _schedule_reparse(self) -> None:
        """Reparse once typing pauses, and at least every MAX_PARSE_DELAY while it goes on."""
        if not self.is_mounted:
            return
        now = time.monotonic()
        if self._parse_requested is None:
            self._parse_requested = now
        delay = PARSE_DELAY if now - self._parse_requested < MAX_PARSE_DELAY else 0.001
        if self._parse_timer is not None:
            self._parse_timer.stop()
        self._parse_timer = self.set_timer(delay, self._reparse)

    def _build_highlight_map(self) -> None:
        """Called by TextArea after every load and edit: forget, rather than recompute, and
        after an edit forget only the rows it touched (and shift the rows below it)."""
        if not isinstance(self._highlights, LazyHighlights):
            self._highlights = LazyHighlights(self._compute_block, self._highlighting_active)
        document = self.document
        if (
            isinstance(document, FastSyntaxDocument)
            and document.needs_parse
            and document.tree is not None
        ):
            self._schedule_reparse()
        changes: list[LineChange] | None = getattr(document, "changes", None)
        gutter = self.gutter_width
        if not changes or gutter != self._last_gutter:
            self._last_gutter = gutter
            self._line_cache.clear()
            self._highlights.clear()
            if changes:
                changes.clear()
            return
        for change in changes:
            self._forget_rows(change)
        changes.clear()

    def _forget_rows(self, change: LineChange) -> None:
        shift = change.new_last - change.old_last
        highlights = self._highlights
        if shift:
            moved = {
                row + shift if row > change.old_last else row: found
                for row, found in highlights.items()
                if not change.first <= row <= change.old_last
            }
            highlights.clear()
            highlights.update(moved)
        for row in range(change.first, change.new_last + 1):
            highlights.pop(row, None)
        # Rendered lines are cached by row: drop the touched rows, and every row below when
        # lines were inserted or removed.
        cache = self._line_cache
        for key in list(cache.keys()):
            row = key[2]
            if change.first <= row <= change.new_last or (shift and row > change.first):
                cache.discard(key)

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
        document = self.document
        if not isinstance(document, FastSyntaxDocument):
            return
        if document.tree is None and not self.is_mounted:
            document.reparse()  # outside an app nothing else will
        tree = document.tree
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

    # -- size ----------------------------------------------------------------------------------

    def _refresh_size(self) -> None:
        """TextArea measures every line after every edit; the width only changes on the edited
        lines, so it is measured once per load and then grown, never re-scanned per key."""
        if self.soft_wrap:
            super()._refresh_size()
            return
        height = self.document.line_count
        if self._doc_width is None:
            lines = self.document.lines
            text = self.document.text
            if text.isascii() and "\t" not in text:
                self._doc_width = max(map(len, lines), default=0)  # one cell per character
            else:
                self._doc_width = self.document.get_size(self.indent_width).width
        else:
            row = self.cursor_location[0]
            if row < height:
                line = self.document[row].expandtabs(self.indent_width)
                self._doc_width = max(self._doc_width, len(line))
        self.virtual_size = Size(self._doc_width + self.gutter_width + 1, height)
        self._refresh_scrollbars()
