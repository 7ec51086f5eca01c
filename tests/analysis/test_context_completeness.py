"""Every sliced context of a realistic repository parses and holds every name its target uses.

The checker is independent of the slicer: it reads the fixture with Python's `ast`, works out
what each function needs from the repository (module-level names of its module that the
repository defines, `self.x` members of its class, members of the class held in `self.x`,
`Class.MEMBER`, `module.Class`, and the `visit_*` methods a `getattr(self, "visit_" + ...)`
dispatch reaches), and looks for a definition of each in the context, also read with `ast`.
"""

from __future__ import annotations

import ast
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from simulator.analysis import CodeIndex

FLOWGRAPH = Path(__file__).parent / "data" / "flowgraph"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> CodeIndex:
    repo = tmp_path_factory.mktemp("repo") / "flowgraph"
    shutil.copytree(FLOWGRAPH, repo)
    return CodeIndex.build(repo, workers=1)


class Repository:
    """What the fixture defines, read with ast."""

    def __init__(self, index: CodeIndex) -> None:
        self.trees = {path: ast.parse(record.source) for path, record in index.files.items()}
        self.modules = {record.module: path for path, record in index.files.items()}
        self.classes: dict[str, ast.ClassDef] = {}  # class name -> node (names are unique)
        self.top: dict[str, set[str]] = {}  # path -> module-level names the repository defines
        for path, tree in self.trees.items():
            names: set[str] = set()
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Assign):
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                elif isinstance(node, ast.ImportFrom) and node.module in self.modules:
                    names |= {a.asname or a.name for a in node.names}
            self.top[path] = names
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes[node.name] = node

    def bases(self, name: str) -> list[str]:
        node = self.classes.get(name)
        if node is None:
            return []
        out = [name]
        for base in node.bases:
            if isinstance(base, ast.Name):
                out += self.bases(base.id)
        return out

    def field_class(self, cls: str, attr: str) -> str | None:
        """`self.attr = X(...)` / `self.attr = mod.X(...)` in cls.__init__: X, if a class here."""
        for klass in self.bases(cls):
            for item in self.classes[klass].body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    for node in ast.walk(item):
                        if (
                            isinstance(node, ast.Assign)
                            and isinstance(node.value, ast.Call)
                            and any(
                                isinstance(t, ast.Attribute) and t.attr == attr
                                for t in node.targets
                            )
                        ):
                            func = node.value.func
                            name = func.attr if isinstance(func, ast.Attribute) else None
                            name = func.id if isinstance(func, ast.Name) else name
                            return name if name in self.classes else None
        return None


class Context:
    """What a context text defines, read with ast."""

    def __init__(self, text: str) -> None:
        tree = ast.parse(text)
        self.names: set[str] = set()
        self.members: dict[str, set[str]] = defaultdict(set)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self.names |= {t.id for t in targets if isinstance(t, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.names |= {(a.asname or a.name).split(".")[0] for a in node.names}
            if isinstance(node, ast.ClassDef):
                for item in ast.walk(node):
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.members[node.name].add(item.name)
                    elif isinstance(item, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                        targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                        for t in targets:
                            if isinstance(t, ast.Name):
                                self.members[node.name].add(t.id)
                            elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                                self.members[node.name].add(t.attr)


def find_function(tree: ast.Module, qualname: str) -> tuple[ast.FunctionDef, str | None]:
    """The def of a qualname (`C.m`, `f.<locals>.g`), and the class it is a method of."""
    parts = qualname.replace(".<locals>", "").split(".")
    scope: list[ast.stmt] = tree.body
    cls: str | None = None
    node: ast.AST | None = None
    for part in parts:
        node = next(
            n
            for stmt in scope
            for n in ast.walk(stmt)
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part
        )
        cls = node.name if isinstance(node, ast.ClassDef) else cls
        scope = node.body
    assert isinstance(node, ast.FunctionDef)
    return node, cls if len(parts) > 1 and cls == parts[-2] else None


def needs(repo: Repository, path: str, fn: ast.FunctionDef, cls: str | None) -> set[str]:
    """What the function needs from the repository, as `name` or `Class.member`."""
    local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not fn:
            local.add(node.name)
    out: set[str] = set()
    module_aliases = {
        n.asname or n.name
        for n in ast.walk(repo.trees[path])
        if isinstance(n, ast.alias) and n.name not in repo.classes
    }
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in repo.top[path]
            and node.id not in local
        ):
            out.add(node.id)
        if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
            continue
        owner = node.value.id
        if owner == "self" and cls is not None:
            out.add(f"{cls}.{node.attr}")
            held = repo.field_class(cls, node.attr)
            parent = next(
                (p for p in ast.walk(fn) if isinstance(p, ast.Attribute) and p.value is node),
                None,
            )
            if held is not None and parent is not None:
                out.add(f"{held}.{parent.attr}")
        elif owner in repo.classes and owner not in local:
            out.add(f"{owner}.{node.attr}")
        elif owner in module_aliases and node.attr in repo.classes:
            out.add(node.attr)
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and isinstance(node.args[1], ast.BinOp)
            and isinstance(node.args[1].left, ast.Constant)
            and cls is not None
        ):
            prefix = str(node.args[1].left.value)
            for klass in repo.classes.values():
                if cls in repo.bases(klass.name) or klass.name in repo.bases(cls):
                    out |= {
                        f"{klass.name}.{m.name}"
                        for m in klass.body
                        if isinstance(m, ast.FunctionDef) and m.name.startswith(prefix)
                    }
    return out


def present(context: Context, repo: Repository, need: str) -> bool:
    if "." not in need:
        return need in context.names
    cls, member = need.split(".", 1)
    return any(member in context.members.get(klass, set()) for klass in repo.bases(cls)) or any(
        member in context.members.get(sub, set()) for sub in repo.classes if cls in repo.bases(sub)
    )


def test_every_context_parses_and_is_complete(index: CodeIndex) -> None:
    repo = Repository(index)
    checked = 0
    missing: dict[str, set[str]] = {}
    for fn in index.functions():
        piece = index.slice(fn.id)
        for part in piece.files:
            ast.parse(part.text)  # each file's text is valid Python on its own
        context = Context(piece.text)
        node, cls = find_function(repo.trees[fn.path], fn.qualname)
        wanted = needs(repo, fn.path, node, cls)
        lacking = {need for need in wanted if not present(context, repo, need)}
        if lacking:
            missing[fn.id] = lacking
        checked += len(wanted)
    assert missing == {}
    assert checked > 60  # the checker does look at something


def test_the_parts_the_issue_names(index: CodeIndex) -> None:
    finish = index.slice("flowgraph/builder.py::Builder.finish").text
    # Its class header, the field set in __init__, the held graph's compact() body.
    assert "class Builder(Visitor):" in finish and "def __init__(self, name):" in finish
    assert "def compact(self):" in finish and "reached = {id(self.entry)}" in finish
    visit = index.slice("flowgraph/builder.py::Visitor.visit").text
    assert "def visit_pass(self, statement):" in visit and "def visit_if" in visit
    describe = index.slice("flowgraph/graph.py::Node.describe").text
    assert "MAX_LABEL = 40" in describe
    compact = index.slice("flowgraph/graph.py::Graph.compact").text
    assert 'STATEMENT = "statement"' in compact  # the enum comes whole, with its values
    assert "def size(self):" in compact  # a property
    render = index.slice("flowgraph/graph.py::Graph.render").text
    assert 'SEPARATOR = " -> "' in render  # a class constant


def test_a_cut_context_still_parses_and_names_the_cut(index: CodeIndex) -> None:
    for fn in index.functions():
        piece = index.slice(fn.id, budget=60)
        ast.parse(piece.text)
        for part in piece.files:
            ast.parse(part.text)
        if piece.dropped:
            assert "# cut for the token budget: " in piece.text
            for dropped in piece.dropped:
                assert dropped.name in piece.text


def test_definitions_in_blocks_and_headers_with_comments_stand_alone() -> None:
    index = CodeIndex.from_texts(
        {
            "lib.py": (
                "import sys\n"
                "\n"
                "\n"
                "class Mixin:\n"
                "\n"
                "    # Needs a subclass with a parser.\n"
                "\n"
                "    def parse(self, text):\n"
                "        return text.split()\n"
                "\n"
                "\n"
                "class Header(Mixin):\n"
                "    pass\n"
                "\n"
                "\n"
                "if sys.platform != 'win32':\n"
                "    def split_words(text):\n"
                "        header = Header()\n"
                "        return header.parse(text)\n"
            )
        }
    )
    for budget in (None, 0):
        piece = index.slice("lib.py::split_words", budget)
        ast.parse(piece.text)
        assert "def split_words(text):" in piece.text.splitlines()
