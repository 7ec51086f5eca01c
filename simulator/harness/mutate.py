"""Small mutants of one function: operator, constant, condition and return swaps; for a
function none of those changes (its statements are calls and assignments of names: a setter,
a generator that yields what it was given), each statement removed instead.

Each mutant is the whole file with one change inside the target, made by replacing the exact
source span of one syntax node (line numbers never move, so the runner can swap the mutant's
code object into the live function). The mutation score of a harness is the share of mutants
it kills; a harness that lets most of them through would also pass a wrong implementation.
"""

from __future__ import annotations

import ast
import bisect
import io
import tokenize
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

BINOP_SWAPS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "*"),
    ast.Mod: ("%", "//"),
    ast.Pow: ("**", "*"),
    ast.BitAnd: ("&", "|"),
    ast.BitOr: ("|", "&"),
    ast.BitXor: ("^", "&"),
    ast.LShift: ("<<", ">>"),
    ast.RShift: (">>", "<<"),
}
COMPARE_SWAPS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
}


# statements the fallback operator removes (returns have their own operator)
_REMOVABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.Delete)


@dataclass(frozen=True)
class Mutant:
    id: str
    operator: str  # operator | constant | condition | return | statement
    line: int
    description: str
    source: str  # the whole file, mutated
    diff: str = ""  # the change as a unified diff of a few lines (what a survivor record keeps)

    def summary(self) -> dict[str, Any]:
        """What a record keeps of a mutant: everything but the mutated file."""
        data = asdict(self)
        del data["source"]
        return data


@dataclass(frozen=True)
class _Edit:
    operator: str
    line: int
    start: int  # byte offsets in the file
    end: int
    text: str
    description: str


class MutationError(Exception):
    """The target could not be found or parsed; the message is one clear sentence."""


def mutants(
    source: str, def_line: int, name: str, *, limit: int | None = 40, path: str = ""
) -> list[Mutant]:
    """Mutants of the function `name` defined on `def_line` of `source` (at most `limit`,
    spread evenly over the function when there are more); `path` names the file in each
    mutant's diff."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise MutationError(f"the file does not parse (line {exc.lineno}: {exc.msg}).") from None
    function = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.lineno == def_line
            and node.name == name
        ),
        None,
    )
    if function is None:
        raise MutationError(f"no function {name} is defined on line {def_line}.")
    data = source.encode("utf-8")
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    collector = _Collector(data, starts)
    edits = collector.collect(function)
    if not edits:  # nothing to swap: the statements themselves are what a bug would drop
        edits = collector.removals(function, source)
    edits.sort(key=lambda e: (e.start, e.end, e.text))
    if limit is not None and len(edits) > limit:
        step = len(edits) / limit
        edits = [edits[int(i * step)] for i in range(limit)]
    lines = [line.decode("utf-8") for line in data.splitlines(keepends=True)]  # as `starts`
    out = []
    for number, edit in enumerate(edits):
        mutated = data[: edit.start] + edit.text.encode("utf-8") + data[edit.end :]
        diff = _diff(lines, starts, edit, path or "target.py")
        out.append(
            Mutant(f"m{number}", edit.operator, edit.line, edit.description, mutated.decode(), diff)
        )
    return out


def _line_of(starts: list[int], offset: int) -> int:
    """The 1-based line holding byte `offset` (`starts` are the lines' byte offsets)."""
    return bisect.bisect_right(starts, offset)


def _range(start: int, size: int) -> str:
    """A hunk's range as diff writes it: `5` for one line, `5,3`, `4,0` when empty."""
    if size == 1:
        return str(start)
    return f"{start if size else start - 1},{size}"


def _diff(lines: Sequence[str], starts: list[int], edit: _Edit, path: str, context: int = 1) -> str:
    """A unified diff of one edit: the lines it touches, as they were and as the mutant has
    them, with `context` lines either side. Built from the edit's span, not by diffing the
    whole file for each of up to 40 mutants."""
    first = _line_of(starts, edit.start)
    last = _line_of(starts, max(edit.start, edit.end - 1))
    before = "".join(lines[first - 1 : last])
    head = before.encode("utf-8")[: edit.start - starts[first - 1]]
    tail = before.encode("utf-8")[edit.end - starts[first - 1] :]
    after = (head + edit.text.encode("utf-8") + tail).decode("utf-8")
    old = before.splitlines()
    new = after.splitlines()
    above = [line.rstrip("\r\n") for line in lines[max(0, first - 1 - context) : first - 1]]
    below = [line.rstrip("\r\n") for line in lines[last : last + context]]
    start = first - len(above)
    body = (
        [f" {line}" for line in above]
        + [f"-{line}" for line in old]
        + [f"+{line}" for line in new]
        + [f" {line}" for line in below]
    )
    size_old = len(above) + len(old) + len(below)
    size_new = len(above) + len(new) + len(below)
    hunk = f"@@ -{_range(start, size_old)} +{_range(start, size_new)} @@"
    return "\n".join([f"--- a/{path}", f"+++ b/{path}", hunk, *body]) + "\n"


class _Collector:
    def __init__(self, data: bytes, starts: list[int]) -> None:
        self.data = data
        self.starts = starts
        self.edits: list[_Edit] = []

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def add(self, operator: str, line: int, start: int, end: int, text: str, what: str) -> None:
        self.edits.append(_Edit(operator, line, start, end, text, f"line {line}: {what}"))

    def collect(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[_Edit]:
        body = list(function.body)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]  # the docstring is not behaviour
        for statement in body:
            for node in ast.walk(statement):
                self.visit(node)
        return self.edits

    def removals(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, source: str
    ) -> list[_Edit]:
        """Each simple statement of the function (a call, an assignment, a yield, a raise)
        replaced by `pass` (continued over as many lines, so no line number moves)."""
        found = []
        for node in ast.walk(function):
            if node is function or not isinstance(node, _REMOVABLE):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring or a bare constant: not behaviour
            start, end = self.span(node)
            lines = (node.end_lineno or node.lineno) - node.lineno
            text = "pass" + " \\\n" * lines
            mutated = (self.data[:start] + text.encode() + self.data[end:]).decode("utf-8")
            try:
                ast.parse(mutated)
            except SyntaxError:
                continue
            first = self.text(start, end).splitlines()[0].strip()
            found.append(
                _Edit(
                    "statement",
                    node.lineno,
                    start,
                    end,
                    text,
                    f"line {node.lineno}: `{first}` removed",
                )
            )
        return found

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAPS:
            old, new = BINOP_SWAPS[type(node.op)]
            self.between(node.left, node.right, old, new, "operator")
        elif isinstance(node, ast.AugAssign) and type(node.op) in BINOP_SWAPS:
            old, new = BINOP_SWAPS[type(node.op)]
            self.between(node.target, node.value, old + "=", new + "=", "operator")
        elif isinstance(node, ast.Compare):
            left: ast.AST = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if type(op) in COMPARE_SWAPS:
                    old, new = COMPARE_SWAPS[type(op)]
                    self.between(left, right, old, new, "operator")
                left = right
        elif isinstance(node, ast.BoolOp):
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            for left, right in zip(node.values, node.values[1:], strict=False):
                self.between(left, right, old, new, "operator")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = self.span(node)
            operand = self.text(*self.span(node.operand))
            self.add("condition", node.lineno, start, end, f"({operand})", "`not` dropped")
        elif isinstance(node, ast.If | ast.While | ast.IfExp):
            start, end = self.span(node.test)
            test = self.text(start, end)
            self.add("condition", node.test.lineno, start, end, f"(not ({test}))", "negated test")
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                start, end = self.span(node.value)
                self.add("return", node.lineno, start, end, "None", "returns None")
        elif isinstance(node, ast.Constant):
            self.constant(node)

    def constant(self, node: ast.Constant) -> None:
        value = node.value
        new: str | None
        if isinstance(value, bool):
            new = repr(not value)
        elif isinstance(value, int | float):
            new = repr(value + 1)
        elif isinstance(value, str):
            new = "''" if value else "'X'"
        else:
            new = None
        start, end = self.span(node)
        if new is not None and self.text(start, end).strip()[:1] not in ("f", "F"):
            self.add("constant", node.lineno, start, end, new, f"{self.text(start, end)} -> {new}")

    def between(self, left: ast.AST, right: ast.AST, old: str, new: str, kind: str) -> None:
        start = self.span(left)[1]
        end = self.span(right)[0]
        found = _find_token(self.text(start, end), old)
        if found is None:
            return
        at, length = found
        byte_at = start + len(self.text(start, end)[:at].encode("utf-8"))
        line = left.end_lineno or left.lineno  # type: ignore[attr-defined]
        self.add(kind, line, byte_at, byte_at + length, new, f"`{old}` -> `{new}`")


def _find_token(segment: str, wanted: str) -> tuple[int, int] | None:
    """Where the operator `wanted` (e.g. `<=`, `not in`, `and`) is written in the text between
    two operands: (character offset, length). Parentheses and comments are skipped."""
    parts = wanted.split()
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(segment).readline)
            if t.type in (tokenize.OP, tokenize.NAME)
        ]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    lines = segment.splitlines(keepends=True) or [""]
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    for i in range(len(tokens) - len(parts) + 1):
        window = tokens[i : i + len(parts)]
        if [t.string for t in window] == parts:
            first, last = window[0], window[-1]
            begin = line_starts[first.start[0] - 1] + first.start[1]
            finish = line_starts[last.end[0] - 1] + last.end[1]
            return begin, finish - begin
    return None


def reach_lines(source: str, line: int) -> list[int]:
    """The lines of the innermost statement holding `line` (a compound statement with its
    body): a test that runs none of them runs a mutant of that line exactly as it runs the
    reference, so the mutant runner need not run it against that mutant."""
    best: tuple[int, int] | None = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            span = (node.lineno, node.end_lineno or node.lineno)
            if best is None or span[1] - span[0] < best[1] - best[0]:
                best = span
    return list(range(best[0], best[1] + 1)) if best else []
