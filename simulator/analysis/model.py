"""Records produced by extraction: files, functions, classes, module-level symbols, imports.

Lines are 1-based, columns 0-based (as in Python's `ast`), byte offsets index the file's
UTF-8 bytes. Records are plain dataclasses without slots: worker processes pickle them back,
and a `__dict__` pickles in C where slots go through a Python-level `__getstate__`. Texts
are sliced from `FileRecord.source` on demand instead of being copied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple


class Lang(StrEnum):
    PYTHON = "python"
    C = "c"


class CallSite(NamedTuple):
    """One call written in a function body, as text (`foo`, `mod.foo`, `self.bar`)."""

    expr: str
    line: int
    col: int


@dataclass
class FunctionRecord:
    lang: Lang
    path: str
    name: str
    qualname: str
    kind: str  # "function" or "method"
    class_qualname: str | None
    parent_qualname: str | None  # enclosing function, for nested functions
    start_line: int  # first decorator (Python) or first line of the definition
    def_line: int  # line of `def` / of the function's name (what `ast` reports)
    end_line: int
    start_byte: int
    end_byte: int
    body_start_byte: int
    signature: str
    params: list[str]
    return_type: str | None
    docstring: str | None
    decorators: list[str]
    is_async: bool = False
    is_static: bool = False  # C `static`
    branches: int = 0
    returns: int = 0
    value_returns: int = 0
    literal_returns: int = 0
    yields: int = 0  # `yield` / `yield from` expressions: a generator produces values
    statements: int = 0  # statements directly in the body, docstring excluded
    code_lines: int = 0  # lines of the body's statements, docstring, blanks and comments out
    single_call: str | None = None  # the callee if the body is just `return f(...)`/`f(...)`
    in_error: bool = False  # the definition overlaps a syntax error
    calls: list[CallSite] = field(default_factory=list)
    # Local names bound in the body: to the callee if every binding is `name = callee(...)`
    # (so `x = C(); x.m()` can resolve), else to None.
    assigns: dict[str, str | None] = field(default_factory=dict)
    id: str = ""

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1


@dataclass
class ClassRecord:
    path: str
    name: str
    qualname: str
    parent_qualname: str | None
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    header_end_byte: int  # end of `class X(Base):` (and its docstring, if any)
    bases: list[str]


@dataclass
class GlobalRecord:
    """A module-level name: a Python assignment, or in C a variable, macro, type or prototype."""

    name: str
    kind: str  # "variable", "macro", "function-macro", "type", "prototype"
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


@dataclass
class ImportRecord:
    """One name bound by an import (Python) or one `#include` (C, `name` is the header)."""

    scope: str | None  # qualname of the function the import sits in, None at module level
    name: str  # the local name it binds (`z` for `from x import y as z`)
    module: str  # absolute module, relative ones resolved against the importing file
    attr: str | None  # `y` for `from x import y`, None for `import x`
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    star: bool = False


@dataclass
class FileRecord:
    path: str  # relative to the analysed root, with forward slashes
    lang: Lang
    source: bytes
    has_errors: bool = False
    errors: list[tuple[int, int]] = field(default_factory=list)  # (line, col) of each error
    module: str = ""  # dotted Python module name
    is_package: bool = False  # an `__init__.py`
    functions: list[FunctionRecord] = field(default_factory=list)
    classes: list[ClassRecord] = field(default_factory=list)
    globals: list[GlobalRecord] = field(default_factory=list)
    imports: list[ImportRecord] = field(default_factory=list)
    lines: int = 0
    # What was parsed when it differs from `source` (C after the macro pass, same offsets).
    parse_source: bytes | None = None

    @property
    def tree_source(self) -> bytes:
        return self.parse_source if self.parse_source is not None else self.source

    def text(self, start_byte: int, end_byte: int) -> str:
        return self.source[start_byte:end_byte].decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Location:
    """Where a symbol is defined, for the editor's go-to-definition."""

    path: str
    line: int
    col: int
    end_line: int
    name: str
    kind: str  # "function", "method", "class", "variable", "module", "macro", ...


@dataclass(frozen=True, slots=True)
class Symbol:
    """One entry of a file's outline; `depth` is the nesting level (0 = module level)."""

    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    depth: int
