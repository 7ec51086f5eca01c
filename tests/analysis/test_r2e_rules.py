"""`--filter r2e` gives R2E's decision on a repository written to exercise each of its rules.

Every definition below is named after the rule it is meant to trip (or `picked_*` when R2E
keeps it); the expected sets are R2E's decisions read off its code (r2e-project/r2e at 524492e5,
`r2e/repo_builder/fut_extractor/`), one comment per case saying which line decides.
"""

from __future__ import annotations

import pytest

from simulator.analysis import CodeIndex, FilterSpec
from simulator.analysis.r2e import docstring_words

LONG_OK = "\n".join(f"    v{i} = a + {i}" for i in range(23)) + "\n    return v22\n"
LONG_TOO = "\n".join(f"    v{i} = a + {i}" for i in range(24)) + "\n    return v23\n"

FUNCTIONS = (
    "import functools\n"
    "\n"
    "\n"
    "def picked_plain(a, b):\n"
    '    """Sum two numbers, then double."""\n'
    "    total = a + b\n"
    "    return total * 2\n"
    "\n"
    "\n"
    "def picked_empty_docstring(a):\n"
    '    """"""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def picked_hyphenated(a):\n"
    '    """A test-case helper for test/train splits (see test.py)."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def picked_nested_literals(a):\n"
    '    """Only top-level returns count for the literal rule."""\n'
    "    if a == 1:\n"
    "        return 1\n"
    "    if a == 2:\n"
    "        return 2\n"
    "    return a * 2\n"
    "\n"
    "\n"
    "def picked_long_statement(a):\n"
    '    """One statement over several lines counts as one line once unparsed."""\n'
    + LONG_OK.replace(
        "    v0 = a + 0\n", "    v0 = {\n        'x': a,\n        'y': 0,\n    }['x']\n"
    )
    + "\n"
    "\n"
    "def _init_table(a):\n"
    '    """Name prefix _init."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def __private(a):\n"
    '    """Starts with two underscores."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def no_docstring(a):\n"
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def no_args():\n"
    '    """Takes nothing."""\n'
    "    total = 1 + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def nested_return_only(a):\n"
    '    """Returns only inside a branch."""\n'
    "    total = a + 1\n"
    "    if total:\n"
    "        return total\n"
    "\n"
    "\n"
    "def generator(a):\n"
    '    """Yields its values."""\n'
    "    total = a + 1\n"
    "    for i in range(total):\n"
    "        yield i\n"
    "\n"
    "\n"
    "def literal_return(a):\n"
    '    """Returns a constant."""\n'
    "    total = a + 1\n"
    "    return None\n"
    "\n"
    "\n"
    "@functools.lru_cache\n"
    "def decorated(a):\n"
    '    """Any decorator on a function."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def docstring_test(a):\n"
    '    """Test whether a is even."""\n'
    "    total = a % 2\n"
    "    return total == 0\n"
    "\n"
    "\n"
    "def docstring_url(a):\n"
    '    """Formula from https://example.org/formula."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def docstring_todo(a):\n"
    '    """Half done (TODO: negative numbers)."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def body_name(a):\n"
    '    """A variable called pool."""\n'
    "    pool = [a]\n"
    "    return pool\n"
    "\n"
    "\n"
    "def body_constant(a, mode='fast'):\n"
    '    """A string constant equal to a blocked word."""\n'
    "    label = 'main' if mode else a\n"
    "    return label\n"
    "\n"
    "\n"
    "def one_statement(a):\n"
    '    """A docstring and one statement."""\n'
    "    return a * 2\n"
    "\n"
    "\n"
    "def long_function(a):\n"
    '    """25 code lines."""\n' + LONG_TOO + "\n"
    "\n"
    "async def coroutine(a):\n"
    '    """An async def."""\n'
    "    total = a + 1\n"
    "    return total\n"
    "\n"
    "\n"
    "def outer(a):\n"
    '    """Holds a nested function."""\n'
    "    def inner(b):\n"
    '        """Nested."""\n'
    "        total = b + 1\n"
    "        return total\n"
    "    return inner(a)\n"
    "\n"
    "\n"
    "if True:\n"
    "    def under_if(a):\n"
    '        """Defined in an if block."""\n'
    "        total = a + 1\n"
    "        return total\n"
)

METHODS = (
    "class Shape:\n"
    '    """A rectangle."""\n'
    "\n"
    "    def __init__(self, w, h):\n"
    "        self.w = w\n"
    "        self.h = h\n"
    "\n"
    "    def picked_area(self):\n"
    '        """Width times height."""\n'
    "        w = self.w\n"
    "        h = self.h\n"
    "        return w * h\n"
    "\n"
    "    def picked_pure(self, x):\n"
    '        """One statement without self: methods have no statement count."""\n'
    "        return x * 2\n"
    "\n"
    "    def picked_mutates(self, v):\n"
    '        """Methods need neither arguments nor a return."""\n'
    "        self.w = v\n"
    "        self.h = v * 2\n"
    "        self.area = v * v * 2\n"
    "\n"
    "    @staticmethod\n"
    "    def picked_static(a):\n"
    '        """staticmethod is allowed on methods."""\n'
    "        total = a + 1\n"
    "        return total\n"
    "\n"
    "    def getter(self):\n"
    '        """One statement mentioning self."""\n'
    "        return self.w\n"
    "\n"
    "    def setter(self, v):\n"
    '        """Sets, then a statement mentioning return."""\n'
    "        self.w = v\n"
    "        return v\n"
    "\n"
    "    def docstring_only(self):\n"
    '        """Nothing else."""\n'
    "\n"
    "    def literal(self, x):\n"
    '        """Returns a constant."""\n'
    "        y = x\n"
    "        return 'done'\n"
    "\n"
    "    @property\n"
    "    def decorated(self):\n"
    '        """property is not allowed."""\n'
    "        w = self.w\n"
    "        h = self.h\n"
    "        return w + h\n"
    "\n"
    "    def __len__(self):\n"
    '        """A dunder."""\n'
    "        w = self.w\n"
    "        h = self.h\n"
    "        return w + h\n"
    "\n"
    "    def testing_name(self):\n"
    '        """Name starts with a blocked prefix."""\n'
    "        w = self.w\n"
    "        h = self.h\n"
    "        return w + h\n"
    "\n"
    "    def long_method(self, a):\n"
    '        """20 code lines."""\n'
    + "\n".join(f"        v{i} = a + {i}" for i in range(19))
    + "\n        return v18\n"
    "\n"
    "    async def coroutine(self):\n"
    '        """An async method."""\n'
    "        w = self.w\n"
    "        return w\n"
    "\n"
    "    class Inner:\n"
    "        def nested_class_method(self, a):\n"
    '            """In a nested class."""\n'
    "            total = a + 1\n"
    "            return total\n"
)

HELPER = 'def helper(a):\n    """Add one to a number."""\n    total = a + 1\n    return total\n'

REPO = {
    "pkg/__init__.py": "",
    "pkg/functions.py": FUNCTIONS,
    "pkg/methods.py": METHODS,
    "tests/test_helpers.py": HELPER,
    ".hidden/mod.py": HELPER,
    "pkg/stub.pyi": HELPER,
    "pkg/py2.py": "print 'python 2'\n\n\n" + HELPER,
}

# R2E's decision: the rules each definition fails (absent = R2E picks it).
EXPECTED: dict[str, set[str]] = {
    "pkg/functions.py::_init_table": {"r2e-name"},  # filter_bad_function_name: "_init"
    "pkg/functions.py::__private": {"r2e-dunder"},  # filter_dunder_methods: startswith("__")
    # has_docstring; and filter_onlt_one_stmt counts body[0] as the docstring, so two
    # statements without one are "one statement" too.
    "pkg/functions.py::no_docstring": {"r2e-docstring", "r2e-statements"},
    "pkg/functions.py::no_args": {"r2e-args"},  # get_num_args == 0
    "pkg/functions.py::nested_return_only": {"r2e-returns"},  # no ast.Return in body
    "pkg/functions.py::generator": {"r2e-returns"},  # a generator has no top-level return
    "pkg/functions.py::literal_return": {"r2e-literal-returns"},  # 1 of 1 > 2/3
    "pkg/functions.py::decorated": {"r2e-decorators"},  # allowed_decorators=[] for functions
    "pkg/functions.py::docstring_test": {"r2e-docstring-words"},  # token "test"
    "pkg/functions.py::docstring_url": {"r2e-docstring-words"},  # "https" ":" "//example..."
    "pkg/functions.py::docstring_todo": {"r2e-docstring-words"},  # "(" "todo" ":"
    "pkg/functions.py::body_name": {"r2e-body-words"},  # ast.Name "pool"
    "pkg/functions.py::body_constant": {"r2e-body-words"},  # ast.Constant "main"
    "pkg/functions.py::one_statement": {"r2e-statements"},  # len(body) > 2 fails
    "pkg/functions.py::long_function": {"r2e-size"},  # num_code_lines 25, not < 25
    "pkg/functions.py::coroutine": {"r2e-scope"},  # ast.AsyncFunctionDef is not collected
    "pkg/functions.py::outer.<locals>.inner": {"r2e-scope"},  # only astree.body is walked
    "pkg/functions.py::under_if": {"r2e-scope"},  # inside an `if` at module level
    "pkg/methods.py::Shape.__init__": {"r2e-dunder", "r2e-docstring", "r2e-wrapper"},
    "pkg/methods.py::Shape.getter": {"r2e-wrapper"},  # len 2, "self." in body[1]
    "pkg/methods.py::Shape.setter": {"r2e-wrapper"},  # len 3, self. then "return"
    "pkg/methods.py::Shape.docstring_only": {"r2e-wrapper"},  # len(body) == 1
    "pkg/methods.py::Shape.literal": {"r2e-literal-returns"},
    "pkg/methods.py::Shape.decorated": {"r2e-decorators"},  # only static/classmethod
    "pkg/methods.py::Shape.__len__": {"r2e-dunder"},
    "pkg/methods.py::Shape.testing_name": {"r2e-name"},  # prefix "test"
    "pkg/methods.py::Shape.long_method": {"r2e-size"},  # 20 code lines, not < 20
    "pkg/methods.py::Shape.coroutine": {"r2e-scope"},
    "pkg/methods.py::Shape.Inner.nested_class_method": {"r2e-scope"},  # class in a class
    ".hidden/mod.py::helper": {"r2e-scope"},  # a path part starting with "."
    "pkg/stub.pyi::helper": {"r2e-scope"},  # not .py
    "pkg/py2.py::helper": {"r2e-scope"},  # ast.parse fails: the file is skipped
}
PICKED = {
    "pkg/functions.py::picked_plain",
    "pkg/functions.py::picked_empty_docstring",
    "pkg/functions.py::picked_hyphenated",
    "pkg/functions.py::picked_nested_literals",
    "pkg/functions.py::picked_long_statement",
    "pkg/functions.py::outer",  # a docstring, a nested def, `return inner(a)`: 3 statements
    "pkg/methods.py::Shape.picked_area",
    "pkg/methods.py::Shape.picked_pure",
    "pkg/methods.py::Shape.picked_mutates",
    "pkg/methods.py::Shape.picked_static",
    "tests/test_helpers.py::helper",  # no test-path rule in R2E
}


@pytest.fixture(scope="module")
def index() -> CodeIndex:
    return CodeIndex.from_texts(REPO)


def test_every_definition_gets_r2es_decision(index: CodeIndex) -> None:
    spec = FilterSpec.parse(["r2e"])
    files = index.files
    got = {fn.id: set(spec.rejected_by(fn, files[fn.path])) for fn in index.functions()}
    assert set(got) == set(EXPECTED) | PICKED
    assert {ident for ident, failed in got.items() if not failed} == PICKED
    assert {ident: got[ident] for ident in EXPECTED} == EXPECTED


def test_reposim_keeps_what_r2e_drops_for_the_wrong_reason(index: CodeIndex) -> None:
    spec = FilterSpec.default()
    files = index.files
    kept = {fn.id for fn in index.functions() if spec.accepts(fn, files[fn.path], index.graph)}
    # A generator yields its values; "test" in the condition sense; a URL as a reference;
    # a cache decorator; a variable named pool; 25 code lines.
    for ident in (
        "generator",
        "docstring_test",
        "docstring_url",
        "decorated",
        "body_name",
        "long_function",
        "nested_return_only",
    ):
        assert f"pkg/functions.py::{ident}" in kept, ident
    # ... and drops what a benchmark cannot use: a TODO, a one-liner, a test file, a method
    # that only reads an attribute, a file Python rejects.
    for ident in (
        "pkg/functions.py::docstring_todo",
        "pkg/functions.py::one_statement",
        "tests/test_helpers.py::helper",
        "pkg/methods.py::Shape.getter",
        "pkg/methods.py::Shape.picked_pure",
        "pkg/py2.py::helper",
        "pkg/functions.py::coroutine",
        "pkg/functions.py::outer.<locals>.inner",
    ):
        assert ident not in kept, ident
    assert "pkg/methods.py::Shape.picked_mutates" in kept


def test_connected_uses_the_call_graph() -> None:
    index = CodeIndex.from_texts(
        {
            "m.py": (
                "def leaf(a):\n    return a + 1\n\n\n"
                "def caller(a):\n    return leaf(a) * 2\n\n\n"
                "def alone(a):\n    return len(a)\n"
            )
        }
    )
    spec = FilterSpec.parse(["connected"])
    kept = {
        fn.qualname
        for fn in index.functions()
        if spec.accepts(fn, index.files[fn.path], index.graph)
    }
    assert kept == {"leaf", "caller"}
    assert FilterSpec.parse(["r2e", "connected"]).needs_graph
    with pytest.raises(ValueError, match="call graph"):
        spec.accepts(next(iter(index.functions())), index.files["m.py"])


@pytest.mark.parametrize(
    ("text", "blocked"),
    [
        ("Test whether x is even.", {"test"}),
        ("Run the `test` now.", {"test"}),
        ("A test-case for test/train and test.py.", set()),
        ("See https://example.org and http://x.", {"https", "http"}),
        ("**TODO** later", {"todo"}),
        ("It is the test's input.", {"test"}),
        ("One test. Then training", {"test", "training"}),
        ("x=test, test:3", set()),
        ("Tests, testing, transformers.", set()),
    ],
)
def test_docstring_words_split_like_nltk(text: str, blocked: set[str]) -> None:
    words = docstring_words(text)
    assert words & {"test", "todo", "http", "https", "training", "transformer"} == blocked
