"""Code text that parses on its own: bodies, contexts within budget, callees found by name.

Every code field RepoSim writes is read by other tools with `ast.parse` (R2E's `code_ast`,
RepoST's `extract_func`), so a decorated method's text must parse alone, a context must parse
with methods that sit under `if TYPE_CHECKING: ... else:` in a class body, and a token budget is
a cap (what does not fit is named, not silently kept).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.analysis import CodeIndex
from simulator.analysis.code_text import standalone_definition
from simulator.analysis.tokens import token_counter

DECORATED = '''\
import functools


class Shape:
    """A shape."""

    @property
    def area(self):
        """Its area."""
        width = self.width
        return width * width

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def unit(name):
        """A unit shape."""
        shape = Shape()
        shape.name = name
        return shape


@functools.lru_cache(maxsize=None)
def scale(value, factor):
    """Scale a value."""
    out = value * factor
    return out
'''


def extract(root: Path, *args: str) -> list[dict]:
    command = [sys.executable, "-m", "reposim", "extract", str(root), "--json"]
    done = subprocess.run(
        [*command, "--lang", "python", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return [r for r in map(json.loads, done.stdout.splitlines()) if "span" in r]


def test_every_body_of_extract_parses_with_its_decorators(tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text(DECORATED)
    records = {r["qualname"]: r for r in extract(tmp_path, "--filter", "none")}
    for qualname in ("Shape.area", "Shape.unit", "scale"):
        body = records[qualname]["body"]
        tree = ast.parse(body)  # R2E's code_ast: ast.parse(code).body[0]
        assert isinstance(tree.body[0], ast.FunctionDef)
        assert tree.body[0].name == qualname.rsplit(".", 1)[-1]
    assert records["Shape.area"]["body"].startswith("@property\ndef area(self):\n")
    assert records["Shape.unit"]["body"].splitlines()[:3] == [
        "@staticmethod",
        "@functools.lru_cache(maxsize=None)",
        "def unit(name):",
    ]


def test_bodies_written_before_the_fix_are_made_to_stand_alone() -> None:
    old = '@property\n    def area(self):\n        """Its area."""\n        return 1\n'
    fixed = standalone_definition(old)
    assert fixed == '@property\ndef area(self):\n    """Its area."""\n    return 1\n'
    assert standalone_definition(fixed) == fixed


TYPE_CHECKING_CLASS = '''\
from typing import TYPE_CHECKING


class Block:
    """A block of a tree."""

    size = 3

    if TYPE_CHECKING:

        def grow(self, by: int) -> int: ...

    else:

        def grow(self, by):
            """Grow the block."""
            self.size += by
            return self.size

    def double(self):
        """Double the block."""
        total = self.grow(self.size)
        return total


def prune(block):
    """Prune a block when it can be pruned."""
    if block.can_prune():
        return block.double()
    return None


class Tree:
    def can_prune(self):
        """Whether the tree can be pruned."""
        return False
'''


def test_methods_under_type_checking_in_a_class_body_parse_in_contexts() -> None:
    index = CodeIndex.from_texts({"blocks.py": TYPE_CHECKING_CLASS})
    context = index.slice("blocks.py::Block.double", None)
    ast.parse(context.text)
    for part in context.files:
        ast.parse(part.text)
    assert "\n    def grow(self, by" in context.text


def test_a_call_on_an_untyped_value_resolves_when_one_class_defines_the_method() -> None:
    index = CodeIndex.from_texts({"blocks.py": TYPE_CHECKING_CLASS})
    edges = {edge.expr: edge for edge in index.graph.callees("blocks.py::prune")}
    assert edges["block.can_prune"].target == "blocks.py::Tree.can_prune"
    assert edges["block.can_prune"].reason == "by method name: the only class that defines it"
    # `double` is defined by one class too; `get`/`append` are builtin types' methods
    assert edges["block.double"].target == "blocks.py::Block.double"
    context = index.slice("blocks.py::prune", None)
    assert "def can_prune(self):" in context.text


def test_a_name_two_classes_define_or_a_builtin_method_stays_unresolved() -> None:
    index = CodeIndex.from_texts(
        {
            "m.py": (
                "class A:\n    def run(self):\n        return 1\n\n\n"
                "class B:\n    def run(self):\n        return 2\n\n    def get(self):\n"
                "        return 3\n\n\n"
                "def go(thing):\n    thing.get()\n    return thing.run()\n"
            )
        }
    )
    edges = {edge.expr: edge for edge in index.graph.callees("m.py::go")}
    assert edges["thing.run"].target is None
    assert edges["thing.get"].target is None


def _many_classes(count: int) -> str:
    doc = " ".join(f"word{i}" for i in range(120))
    parts = []
    for i in range(count):
        parts.append(
            f'class Helper{i}:\n    """{doc}"""\n\n    def work{i}(self, x):\n'
            f"        return x + {i}\n"
        )
    calls = "\n".join(f"    total += Helper{i}().work{i}(x)" for i in range(count))
    doc = '"""Sum of helpers."""'
    parts.append(f"def target(x):\n    {doc}\n    total = 0\n{calls}\n    return total\n")
    return "\n\n".join(parts)


@pytest.mark.parametrize("budget", [600, 1000, 2500])
def test_the_budget_is_a_cap_on_the_whole_context_text(budget: int) -> None:
    index = CodeIndex.from_texts({"many.py": _many_classes(30)})
    context = index.slice("many.py::target", budget)
    _, count = token_counter()
    assert count(context.text) <= budget
    assert context.tokens == count(context.text)
    assert context.budget == budget
    ast.parse(context.text)
    assert context.dropped, "the fixture needs more than the budget"
    assert "# cut for the token budget:" in context.text


def test_a_target_larger_than_its_budget_names_the_overflow() -> None:
    index = CodeIndex.from_texts({"many.py": _many_classes(3)})
    context = index.slice("many.py::target", 10)
    _, count = token_counter()
    data = context.as_dict()
    assert data["over_budget"] == count(context.text) - 10 > 0
    assert "def target(x):" in context.text
