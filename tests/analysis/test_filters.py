"""Each filter on its own, on functions written to pass or fail it."""

from __future__ import annotations

import pytest

from simulator.analysis import CodeIndex, FilterSpec

SOURCE = {
    "lib/funcs.py": (
        "import subprocess\n"
        "\n"
        "\n"
        "def documented(a, b):\n"
        '    """Add."""\n'
        "    total = a + b\n"
        "    return total\n"
        "\n"
        "\n"
        "def no_args():\n"
        "    value = 1\n"
        "    value += 1\n"
        "    return value\n"
        "\n"
        "\n"
        "def literal_returns(x):\n"
        "    if x:\n"
        "        return True\n"
        "    return False\n"
        "\n"
        "\n"
        "def no_return(x):\n"
        "    y = x\n"
        "    del y\n"
        "\n"
        "\n"
        "def wrapper(x):\n"
        "    return documented(x, 1)\n"
        "\n"
        "\n"
        "def runs_git(x):\n"
        "    out = subprocess.run(['git', x])\n"
        "    return out.returncode + 1\n"
        "\n"
        "\n"
        "class Box:\n"
        "    def __len__(self):\n"
        "        size = 0\n"
        "        return size + 1\n"
        "\n"
        "    def method(self):\n"
        "        size = 0\n"
        "        return size + 1\n"
    ),
    "tests/test_funcs.py": "def test_it(x):\n    y = x\n    return y + 1\n",
}


@pytest.fixture(scope="module")
def index() -> CodeIndex:
    return CodeIndex.from_texts(SOURCE)


def passing(index: CodeIndex, spec: str) -> set[str]:
    parsed = FilterSpec.parse([spec])
    return {fn.qualname for fn in index.functions() if parsed.accepts(fn, index.files[fn.path])}


ALL = {
    "documented",
    "no_args",
    "literal_returns",
    "no_return",
    "wrapper",
    "runs_git",
    "Box.__len__",
    "Box.method",
    "test_it",
}


@pytest.mark.parametrize(
    ("spec", "rejected"),
    [
        ("has-docstring", ALL - {"documented"}),
        ("takes-args", {"no_args", "Box.__len__", "Box.method"}),
        ("returns-value", {"no_return"}),
        ("not-literal-returns", {"literal_returns"}),
        ("body-lines=4..", ALL - {"documented", "no_args", "literal_returns"}),
        ("body-lines=..3", {"documented", "no_args", "literal_returns"}),
        ("no-dunder", {"Box.__len__"}),
        ("no-tests", {"test_it"}),
        ("no-keywords", {"runs_git"}),
        ("no-keywords=network", set()),
        ("no-keywords=size", {"Box.__len__", "Box.method"}),
        ("not-wrapper", {"wrapper"}),
        ("no-errors", set()),
    ],
)
def test_each_filter(index: CodeIndex, spec: str, rejected: set[str]) -> None:
    assert passing(index, spec) == ALL - rejected


def test_filters_combine_and_r2e_is_all(index: CodeIndex) -> None:
    assert passing(index, "takes-args,returns-value") == ALL - {
        "no_args",
        "Box.__len__",
        "Box.method",
        "no_return",
    }
    assert passing(index, "r2e") == {"documented"}
    assert FilterSpec.parse(["r2e", "body-lines=1..9"]).as_dict()["body-lines"] == "1..9"


def test_unknown_filter_and_bad_bounds_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown filter 'shiny'"):
        FilterSpec.parse(["shiny"])
    with pytest.raises(ValueError, match=r"MIN\.\.MAX"):
        FilterSpec.parse(["body-lines=ten"])
