"""A light macro pass for C: make code written with export and calling-convention macros parse.

There is no preprocessor here; tree-sitter parses the text as written, so
`CJS_PUBLIC(cjs_item *) cjs_parse(const char *value)` or `int CJS_CDECL main(void)` are syntax
errors to it. Before parsing, this pass rewrites a copy of the source, keeping every byte
offset (and so every line and column) where it was:

- attribute macros, object-like (`CJS_CDECL`, `MYLIB_API`: they expand to nothing or to
  attributes only) are blanked out;
- wrapper macros, function-like (`CJS_PUBLIC(type)`: they expand to their argument with
  attributes around it) keep their argument and lose the rest: `CJS_PUBLIC(int) f(void)` is
  parsed as `           int  f(void)`;
- brace macros (`#define TEST_BEGIN(name) static void name(void) {`, `#define TEST_END }`)
  are replaced by the braces they open or close, so the code between them is one block and
  the functions after it parse.

Which macros are which comes from the repository's own `#define`s (every definition of a name
must agree, whatever `#if` branch it sits in) and, for names the repository does not define,
from common conventions: `*_API`, `*_EXPORT`, `*_CDECL`, `*_STDCALL`, `WINAPI`, ... and
`*_PUBLIC(type)` / `*_API(type)`. Preprocessor lines are never rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

DEFINE = re.compile(
    rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?((?:[^\n\\]|\\\n|\\)*)", re.MULTILINE
)
IDENT = re.compile(rb"[A-Za-z_]\w*")
TOKEN = re.compile(rb"[A-Za-z_]\w*|\S")
# Tokens that only qualify a declaration: calling conventions, linkage and visibility.
ATTRIBUTE_WORDS = frozenset(
    {
        b"__cdecl",
        b"_cdecl",
        b"__stdcall",
        b"_stdcall",
        b"__fastcall",
        b"_fastcall",
        b"__thiscall",
        b"__vectorcall",
        b"__pascal",
        b"__export",
        b"__import",
        b"extern",
        b"__extension__",
    }
)
# Attribute constructs skipped whole, parentheses included.
ATTRIBUTE_CALLS = frozenset({b"__declspec", b"__attribute__", b"__attribute", b"_declspec"})
# Names the repository does not define but that are attribute macros by convention.
CONVENTIONAL_ATTRIBUTE = re.compile(
    rb"[A-Z][A-Z0-9_]*_(?:API|EXPORT|EXPORTS|IMPORT|CDECL|STDCALL|FASTCALL|CALL|CALLCONV|"
    rb"EXTERN|DECL|DECLSPEC|VISIBLE|HIDDEN|LOCAL)\Z|WINAPI\Z|APIENTRY\Z|CALLBACK\Z|WINAPIV\Z"
)
CONVENTIONAL_WRAPPER = re.compile(rb"[A-Z][A-Z0-9_]*_(?:PUBLIC|API|EXPORT|EXTERN|FUNC)\Z")


@dataclass
class MacroTable:
    """What the pass rewrites: attribute names, wrapper names, brace macros -> their braces,
    loop macros (`#define list_for_each(i, l) for (...)`, used as a statement header)."""

    attributes: set[bytes] = field(default_factory=set)
    wrappers: set[bytes] = field(default_factory=set)
    braces: dict[bytes, bytes] = field(default_factory=dict)
    loops: set[bytes] = field(default_factory=set)
    defined: set[bytes] = field(default_factory=set)  # every name the repository #defines

    def is_attribute(self, name: bytes) -> bool:
        if name in self.attributes:
            return True
        return name not in self.defined and CONVENTIONAL_ATTRIBUTE.match(name) is not None

    def rewritable(self, name: bytes) -> bool:
        return (
            name in self.braces
            or name in self.loops
            or self.is_wrapper(name)
            or self.is_attribute(name)
        )

    def merged(self, other: MacroTable) -> MacroTable:
        adds = (
            other.attributes - self.attributes
            or other.wrappers - self.wrappers
            or other.loops - self.loops
            or other.braces.keys() - self.braces.keys()
            or other.defined - self.defined
        )
        if not adds:
            return self
        return MacroTable(
            self.attributes | other.attributes,
            self.wrappers | other.wrappers,
            {**self.braces, **other.braces},
            self.loops | other.loops,
            self.defined | other.defined,
        )

    def is_wrapper(self, name: bytes) -> bool:
        if name in self.wrappers:
            return True
        return name not in self.defined and CONVENTIONAL_WRAPPER.match(name) is not None


@lru_cache(maxsize=256)
def _pattern(names: frozenset[bytes]) -> re.Pattern[bytes]:
    """A regex for these whole identifiers (only those a file uses: few, so it is fast)."""
    known = b"|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rb"\b(?:" + known + rb")\b")


def _skip_parens(tokens: list[bytes], i: int) -> int:
    """Index after the parenthesised group starting at tokens[i] == b"(" (or i if not one)."""
    if i >= len(tokens) or tokens[i] != b"(":
        return i
    depth = 0
    while i < len(tokens):
        if tokens[i] == b"(":
            depth += 1
        elif tokens[i] == b")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _only_attributes(tokens: list[bytes], attributes: set[bytes], allowed: bytes | None) -> bool:
    """Whether tokens are attribute words/constructs, plus `allowed` exactly once if given."""
    seen_allowed = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in ATTRIBUTE_CALLS:
            i = _skip_parens(tokens, i + 1)
            continue
        if token == allowed:
            seen_allowed += 1
        elif token not in ATTRIBUTE_WORDS and token not in attributes:
            return False
        i += 1
    return allowed is None or seen_allowed == 1


def collect(sources: Iterable[bytes]) -> MacroTable:
    """The macro table of a repository, from the `#define`s of its C files."""
    objects: dict[bytes, list[list[bytes]]] = {}
    functions: dict[bytes, list[tuple[list[bytes], list[bytes]]]] = {}
    for source in sources:
        if b"#" not in source:
            continue
        for match in DEFINE.finditer(source):
            name, params, body = match.group(1), match.group(2), match.group(3)
            body = _strip_comments(body.replace(b"\\\n", b" "))
            tokens = TOKEN.findall(body)
            if params is None:
                objects.setdefault(name, []).append(tokens)
            else:
                names = [p.strip() for p in params[1:-1].split(b",") if p.strip()]
                functions.setdefault(name, []).append((names, tokens))
    table = MacroTable(defined=set(objects) | set(functions))
    # Attribute macros may be defined through each other (CJS_PUBLIC uses CJS_STDCALL):
    # grow the set until it is stable.
    changed = True
    while changed:
        changed = False
        for name, bodies in objects.items():
            if name not in table.attributes and all(
                _only_attributes(b, table.attributes, None) for b in bodies
            ):
                table.attributes.add(name)
                changed = True
    for name, definitions in functions.items():
        # An identity macro (`#define KEEP(x) x`) is no wrapper: calls to it stay calls.
        if all(
            len(params) == 1 and _only_attributes(tokens, table.attributes, params[0])
            for params, tokens in definitions
        ) and (
            CONVENTIONAL_WRAPPER.match(name) is not None
            or any(len(tokens) > 1 for _, tokens in definitions)
        ):
            table.wrappers.add(name)
    for name, token_lists in [
        *((n, bodies) for n, bodies in objects.items()),
        *((n, [t for _, t in defs]) for n, defs in functions.items()),
    ]:
        if all(t and t[0] in LOOP_WORDS and t[-1] == b")" for t in token_lists):
            table.loops.add(name)
        nets = {t.count(b"{") - t.count(b"}") for t in token_lists}
        if len(nets) == 1 and (net := nets.pop()) != 0:
            table.braces[name] = b"{" * net if net > 0 else b"}" * -net
    return table


def _strip_comments(body: bytes) -> bytes:
    body = re.sub(rb"/\*.*?\*/", b" ", body, flags=re.DOTALL)
    return body.split(b"//", 1)[0]


LOOP_WORDS = frozenset({b"for", b"while", b"if", b"switch"})
CPLUSPLUS_IF = re.compile(
    rb"^[ \t]*#[ \t]*if(?:def[ \t]+__cplusplus|[ \t]+defined[ \t(]*__cplusplus)"
)
PREPROCESSOR_LINE = re.compile(rb"^[ \t]*#(?:[^\n\\]|\\\n|\\)*", re.MULTILINE)


def rewrite(source: bytes, table: MacroTable) -> bytes:
    """The source with the table's macros neutralised, byte offsets unchanged."""
    present = frozenset(n for n in set(IDENT.findall(source)) if table.rewritable(n))
    if not present and b"__cplusplus" not in source:
        return source
    out = bytearray(source)
    _blank_cplusplus(source, out)
    protected = [(m.start(), m.end()) for m in PREPROCESSOR_LINE.finditer(source)]
    p = 0
    for match in _pattern(present).finditer(source) if present else ():
        start, end = match.span()
        while p < len(protected) and protected[p][1] <= start:
            p += 1
        if p < len(protected) and protected[p][0] <= start:
            continue
        name = match.group()
        if name in table.braces:
            span_end = _call_end(source, end) if source[end : end + 1] in (b"(", b" ") else end
            replacement = table.braces[name]
            # Written as a statement (`LOCK(x);`) it parses as a call: leave it one.
            statement = (
                source[_next_nonspace(source, span_end) : _next_nonspace(source, span_end) + 1]
                == b";"
            )
            if not statement and span_end - start >= len(replacement):
                out[start:span_end] = replacement.ljust(span_end - start)
                _keep_newlines(out, source, start, span_end)
            continue
        if name in table.loops and _next_nonspace(source, end) < len(source):
            keyword = b"while" if len(name) >= 5 else b"if"
            if source[_next_nonspace(source, end)] == ord("("):
                out[start:end] = keyword.ljust(end - start)
            continue
        if table.is_wrapper(name):
            open_at = _next_nonspace(source, end)
            if open_at < len(source) and source[open_at] == ord("("):
                close = _call_end(source, open_at) - 1
                if close > open_at and source[close] == ord(")"):
                    out[start : open_at + 1] = b" " * (open_at + 1 - start)
                    out[close] = ord(" ")
                    continue
        if table.is_attribute(name):
            out[start:end] = b" " * (end - start)
    return bytes(out)


def _next_nonspace(source: bytes, i: int) -> int:
    while i < len(source) and source[i] in b" \t":
        i += 1
    return i


def _call_end(source: bytes, i: int) -> int:
    """End of a parenthesised argument list starting at or after i (i itself if there is none)."""
    j = _next_nonspace(source, i)
    if j >= len(source) or source[j] != ord("("):
        return i
    depth = 0
    while j < len(source):
        char = source[j]
        if char == ord("("):
            depth += 1
        elif char == ord(")"):
            depth -= 1
            if depth == 0:
                return j + 1
        elif char == ord("\n") and depth == 0:
            break
        j += 1
    return i


def _keep_newlines(out: bytearray, source: bytes, start: int, end: int) -> None:
    for k in range(start, end):
        if source[k] == ord("\n"):
            out[k] = ord("\n")


def _blank_cplusplus(source: bytes, out: bytearray) -> None:
    """Blank the code lines of `#ifdef __cplusplus` blocks (`extern "C" {` and its `}`).

    They are C++ only, and an `extern "C" {` opened in one block and closed in another is a
    syntax error to a C parser that sees both.
    """
    inside = False
    depth = 0
    offset = 0
    for line in source.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(b"#"):
            directive = stripped[1:].lstrip()
            if inside:
                if directive.startswith(b"if"):
                    depth += 1
                elif directive.startswith((b"endif", b"else", b"elif")):
                    if depth == 0:
                        inside = False
                    elif directive.startswith(b"endif"):
                        depth -= 1
            elif CPLUSPLUS_IF.match(line):
                inside, depth = True, 0
        elif inside:
            for k in range(offset, offset + len(line)):
                if out[k] not in (0x0A, 0x0D):
                    out[k] = 0x20
        offset += len(line)
