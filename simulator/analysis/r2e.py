"""R2E's target-selection rules, reproduced on Python's own `ast` as R2E applies them.

R2E (r2e-project/r2e, snapshot 524492e5) picks functions and methods in
`r2e/repo_builder/fut_extractor/`: `extract_repo_data.py` walks the files, `extract_functions.py`
and `extract_methods.py` choose the definitions, `extract_base.py` holds the shared rules, and
`r2e/models/function.py` counts code lines. Each rule below is named after what it checks and
cites the function it reproduces; docs/extract-filters.md lists them with R2E's decision on
edge cases. Everything is computed from `ast`, like R2E, so `ast.unparse` formatting and
`ast.Constant` typing give the same answers as R2E's code.

What R2E does not decide from the source alone is left out and documented: its `callee_count`
gate only applies when a PyCG call graph was computed beforehand (R2E's default is not to run
PyCG, and a missing graph keeps every function).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

# extract_repo_data.py: MAX_LINES_FUNCTION / MAX_LINES_METHOD (strictly fewer code lines).
MAX_LINES_FUNCTION = 25
MAX_LINES_METHOD = 20
# extract_base.py: filter_docstring_keywords (BAD_DOC_SUBSTRINGS), matched against whole tokens.
DOCSTRING_BLOCKLIST = frozenset({"test", "transformer", "training", "https", "http", "todo"})
# extract_base.py: filter_func_body_keywords (BAD_CODE_SUBSTRINGS), matched against whole
# identifiers (`ast.Name`) and constants (`str(value)`), lowercased.
BODY_BLOCKLIST = frozenset(
    {
        "demo",
        "gcp",
        "s3",
        "openai",
        "aws",
        "cuda",
        "tensorflow",
        "triton",
        "gpu",
        "nvidia",
        "scheduler",
        "async",
        "job",
        "do_not_import",
        "do_not_run",
        "do_not_call",
        "plt",
        "plot",
        "matplotlib",
        "seaborn",
        "plotly",
        "argparse",
        "main",
        "cuda_visible_devices",
        "multiprocess",
        "multiprocessing",
        "pool",
        "processpool",
        "threadpool",
        "joblib",
        "pebble",
    }
)
# extract_base.py: filter_bad_function_name (BAD_FUNCTION_NAME_PREFIXES), on the lowered name.
NAME_PREFIXES = ("test", "train_", "main", "demo", "example", "render_pep", "_init")
# extract_methods.py: filter_with_decorator(allowed_decorators=[...]); functions allow none.
METHOD_DECORATORS = frozenset({"staticmethod", "classmethod"})

# Every rule, in the order R2E applies them, with what it keeps.
RULES: dict[str, str] = {
    "r2e-scope": (
        "a `def` (not `async def`) at module level or directly in a module-level class, "
        "in a .py file without hidden path parts that ast.parse accepts"
    ),
    "r2e-dunder": "its name does not start with `__`",
    "r2e-docstring": "has a docstring (ast.get_docstring is not None, an empty one counts)",
    "r2e-args": "functions: takes at least one argument (methods are not checked)",
    "r2e-returns": "functions: a `return` statement directly in the body (methods: not checked)",
    "r2e-literal-returns": (
        "at most 2/3 of the `return`s directly in the body return an ast.Constant"
    ),
    "r2e-decorators": "functions: no decorator; methods: only @staticmethod / @classmethod",
    "r2e-docstring-words": (
        "no docstring word (nltk word_tokenize, lowered) in {test, todo, http, https, "
        "training, transformer}"
    ),
    "r2e-body-words": (
        "no identifier or constant equal to one of R2E's 31 code words (main, job, pool, "
        "plot, async, gpu, ...)"
    ),
    "r2e-name": "its lowered name starts with none of test, train_, main, demo, example, "
    "render_pep, _init",
    "r2e-statements": (
        "functions: more than 2 statements, docstring included (R2E assumes body[0] is it)"
    ),
    "r2e-wrapper": (
        "methods: not a wrapper (docstring only; one statement mentioning `self.`; or "
        "that and a statement mentioning `return`)"
    ),
    "r2e-size": "fewer than 25 (functions) / 20 (methods) code lines, docstring excluded",
}


@dataclass(frozen=True)
class Verdict:
    """R2E's decision on one definition: the rules it fails (empty = R2E picks it)."""

    kind: str  # "function" or "method"
    failed: frozenset[str]


# ------------------------------------------------------------------ docstring words


_SPACE_AROUND = re.compile(r"""(\.\.\.|--|[*()\[\]{}<>;@#$%&?!"“”«»‘„’]|`+)""")
_COMMA_COLON = re.compile(r"([:,])(?=\D|$)")
_CLITIC = re.compile(r"(?i)(?<=[^'\s])('s|'m|'d|'re|'ve|'ll|n't|')(?=\s|$)")
_SENTENCE_END = re.compile(r"(?<=[^.\s])\.(?=\s|$|[?!)\";}\]*:@'({\[])")


def docstring_words(text: str) -> set[str]:
    """The lowered tokens nltk's `word_tokenize` gives for a docstring, as far as whole words go.

    R2E tokenizes with nltk (punkt sentences, then the Treebank-style word tokenizer) and
    compares whole tokens with its blocklist. This is not nltk: it separates what that
    tokenizer separates from words (brackets, quotes, backticks, `*;@#$%&?!`, `...`, `--`,
    a comma or colon not followed by a digit, clitics such as `'s`, a closing `'`, and the
    period that ends a sentence) and keeps together what it keeps together (`test-case`,
    `test/train`, `test.py`, `x=test`, `test:3`, `'test` with a leading quote).
    """
    text = _SENTENCE_END.sub(" . ", text)
    text = _SPACE_AROUND.sub(r" \1 ", text)
    text = _COMMA_COLON.sub(r" \1 ", text)
    text = _CLITIC.sub(r" \1", text)
    return {token.lower() for token in text.split()}


# ------------------------------------------------------------------------- rules


def in_scope_path(path: str) -> bool:
    """extract_repo_data.py: `.py` files whose path has no part starting with a dot."""
    pure = PurePosixPath(path)
    return pure.suffix == ".py" and not any(part.startswith(".") for part in pure.parts)


def _docstring_node(fn: ast.FunctionDef) -> str | None:
    first = fn.body[0] if fn.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.value.value
    return None


def _body_tokens(fn: ast.FunctionDef) -> set[str]:
    """extract_base.py get_func_body_tokens_lowered: every Name id and str(Constant), lowered."""
    tokens: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            tokens.add(node.id.lower())
        elif isinstance(node, ast.Constant):
            tokens.add(str(node.value).lower())
    return tokens


def _code_lines(fn: ast.FunctionDef) -> int:
    """r2e/models/function.py num_code_lines: unparsed lines of each statement, docstring out."""
    lines = 0
    for i, stmt in enumerate(fn.body):
        if (
            i == 0
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            continue
        lines += ast.unparse(stmt).count("\n") + 1
    return lines


def _literal_return(fn: ast.FunctionDef) -> bool:
    """extract_base.py has_literal_return: top-level returns, more than 2/3 of them constant."""
    constant = [isinstance(n.value, ast.Constant) for n in fn.body if isinstance(n, ast.Return)]
    return sum(constant) > 2 / 3 * len(constant)


def _num_args(fn: ast.FunctionDef) -> int:
    """extract_functions.py get_num_args."""
    args = fn.args
    return (
        len(args.args)
        + len(args.kwonlyargs)
        + len(args.posonlyargs)
        + (0 if args.kwarg is None else 1)
        + (0 if args.vararg is None else 1)
    )


def _is_wrapper_method(fn: ast.FunctionDef) -> bool:
    """extract_methods.py is_wrapper_method (substring tests on ast.unparse, as R2E does)."""
    body = fn.body
    if len(body) == 1:
        return True
    if len(body) == 2 and "self." in ast.unparse(body[1]):
        return True
    return len(body) == 3 and "self." in ast.unparse(body[1]) and "return" in ast.unparse(body[2])


def judge(fn: ast.FunctionDef, kind: str) -> Verdict:
    """Every R2E rule on one in-scope definition (`kind` is "function" or "method")."""
    failed: set[str] = set()
    method = kind == "method"
    if fn.name.startswith("__"):
        failed.add("r2e-dunder")
    doc = _docstring_node(fn)
    if ast.get_docstring(fn) is None:
        failed.add("r2e-docstring")
    if not method:
        if _num_args(fn) == 0:
            failed.add("r2e-args")
        if not any(isinstance(node, ast.Return) for node in fn.body):
            failed.add("r2e-returns")
    if _literal_return(fn):
        failed.add("r2e-literal-returns")
    allowed = METHOD_DECORATORS if method else frozenset()
    if not all(ast.unparse(d) in allowed for d in fn.decorator_list):
        failed.add("r2e-decorators")
    if doc is not None and not docstring_words(doc).isdisjoint(DOCSTRING_BLOCKLIST):
        failed.add("r2e-docstring-words")
    if not _body_tokens(fn).isdisjoint(BODY_BLOCKLIST):
        failed.add("r2e-body-words")
    if fn.name.lower().startswith(NAME_PREFIXES):
        failed.add("r2e-name")
    if method:
        if _is_wrapper_method(fn):
            failed.add("r2e-wrapper")
    elif len(fn.body) <= 2:
        failed.add("r2e-statements")
    if _code_lines(fn) >= (MAX_LINES_METHOD if method else MAX_LINES_FUNCTION):
        failed.add("r2e-size")
    return Verdict(kind, frozenset(failed))


@lru_cache(maxsize=16)
def file_verdicts(path: str, source: bytes) -> dict[tuple[str, int], Verdict] | None:
    """R2E's decision on each definition of a file, by (qualname, line of `def`).

    None when R2E would not look at the file at all: not `.py`, a hidden path part, not
    UTF-8, or rejected by `ast.parse` (extract_repo_data.py skips such files).
    """
    if not in_scope_path(path):
        return None
    try:
        tree = ast.parse(source.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return None
    out: dict[tuple[str, int], Verdict] = {}
    for node in tree.body:  # extract_functions.py get_functions_from_ast
        if isinstance(node, ast.FunctionDef):
            out[(node.name, node.lineno)] = judge(node, "function")
        elif isinstance(node, ast.ClassDef):  # extract_methods.py get_methods_from_ast
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    out[(f"{node.name}.{sub.name}", sub.lineno)] = judge(sub, "method")
    return out


OUT_OF_SCOPE = Verdict("function", frozenset({"r2e-scope"}))


def verdict(path: str, source: bytes, qualname: str, def_line: int) -> Verdict:
    """R2E's decision on the definition of `qualname` whose `def` is on `def_line`."""
    verdicts = file_verdicts(path, source)
    if verdicts is None:
        return OUT_OF_SCOPE
    return verdicts.get((qualname, def_line), OUT_OF_SCOPE)
