"""Call graph, go-to-definition and slicing on a small hand-made Python repository."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.analysis import CodeIndex

SHAPES = {
    "shapes/__init__.py": "from .geometry import area as area_of\n",
    "shapes/constants.py": "PI = 3.14159\nUNUSED = 'never referenced'\nSCALE = PI * 2\n",
    "shapes/geometry.py": (
        "import math\n"
        "from .constants import PI, SCALE\n"
        "from . import constants as c\n"
        "\n"
        "\n"
        "def square(x):\n"
        "    return x * x\n"
        "\n"
        "\n"
        "def area(r):\n"
        '    """Area of a circle."""\n'
        "    return PI * square(r)\n"
        "\n"
        "\n"
        "def scaled(r):\n"
        "    return SCALE * c.PI * math.sqrt(r)\n"
        "\n"
        "\n"
        "def unrelated():\n"
        "    return 'nothing to see'\n"
    ),
    "shapes/models.py": (
        "from shapes.geometry import area, square as sq\n"
        "import shapes.geometry\n"
        "import shapes.geometry as geo\n"
        "\n"
        "\n"
        "class Base:\n"
        "    def describe(self):\n"
        "        return type(self).__name__\n"
        "\n"
        "\n"
        "class Circle(Base):\n"
        '    """A circle."""\n'
        "\n"
        "    def __init__(self, r):\n"
        "        self.r = r\n"
        "\n"
        "    def area(self):\n"
        "        return area(self.r)\n"
        "\n"
        "    def report(self):\n"
        "        return self.describe() + str(self.area()) + str(sq(2))\n"
        "\n"
        "    @classmethod\n"
        "    def unit(cls):\n"
        "        return cls(1)\n"
        "\n"
        "    def twice(self):\n"
        "        return super().describe() * 2\n"
        "\n"
        "\n"
        "def make(r):\n"
        "    c = Circle(r)\n"
        "    helper = lambda: 0\n"
        "    def inner():\n"
        "        return geo.square(r) + shapes.geometry.square(r)\n"
        "    return c.area() + inner() + helper() + undefined_thing() + len([r])\n"
        "\n"
        "\n"
        "def circular():\n"
        "    a = b()\n"
        "    b = a()\n"
        "    return a.x() + b.y()\n"
        "\n"
        "\n"
        "def rebound(r):\n"
        "    c = Circle(r)\n"
        "    for c in [Base()]:\n"
        "        pass\n"
        "    return c.describe()\n"
    ),
}


@pytest.fixture
def index(make_repo: Callable[..., Path]) -> CodeIndex:
    repo = make_repo(SHAPES)
    return CodeIndex.build(repo)


def _targets(index: CodeIndex, fid: str) -> dict[str, str | None]:
    return {ref.expr: ref.target for ref in index.callees(fid)}


def test_relative_and_aliased_imports_resolve(index: CodeIndex) -> None:
    assert _targets(index, "shapes/geometry.py::area") == {"square": "shapes/geometry.py::square"}
    circle_area = _targets(index, "shapes/models.py::Circle.area")
    assert circle_area == {"area": "shapes/geometry.py::area"}


def test_self_cls_super_and_instantiation(index: CodeIndex) -> None:
    report = _targets(index, "shapes/models.py::Circle.report")
    assert report["self.describe"] == "shapes/models.py::Base.describe"  # inherited
    assert report["self.area"] == "shapes/models.py::Circle.area"
    assert report["sq"] == "shapes/geometry.py::square"  # from x import y as z
    assert report["str"] is None
    assert _targets(index, "shapes/models.py::Circle.unit") == {
        "cls": "shapes/models.py::Circle.__init__"
    }
    assert _targets(index, "shapes/models.py::Circle.twice") == {
        "super().describe": "shapes/models.py::Base.describe",
        "super": None,  # the builtin itself
    }
    make = {ref.expr: ref for ref in index.callees("shapes/models.py::make")}
    assert make["Circle"].target == "shapes/models.py::Circle.__init__"
    assert make["inner"].target == "shapes/models.py::make.<locals>.inner"
    # `c = Circle(r)` is the only binding of c: c.area is Circle.area.
    assert make["c.area"].target == "shapes/models.py::Circle.area"
    # Never guessed: an undefined name and a builtin stay unresolved.
    assert make["undefined_thing"].target is None
    assert make["len"].reason == "external: builtins.len"


def test_a_variable_bound_twice_is_not_typed(index: CodeIndex) -> None:
    rebound = {ref.expr: ref for ref in index.callees("shapes/models.py::rebound")}
    # c's type is not inferred; `describe` is found by its name alone (one class defines it),
    # and the edge says so (issue 23)
    assert rebound["c.describe"].target == "shapes/models.py::Base.describe"
    assert rebound["c.describe"].reason == "by method name: the only class that defines it"


def test_variables_typed_by_each_other_do_not_loop(index: CodeIndex) -> None:
    circular = {ref.expr: ref.target for ref in index.callees("shapes/models.py::circular")}
    assert circular == {"b": None, "a": None, "a.x": None, "b.y": None}


def test_module_attributes(index: CodeIndex) -> None:
    inner = _targets(index, "shapes/models.py::make.<locals>.inner")
    assert inner == {
        "geo.square": "shapes/geometry.py::square",
        "shapes.geometry.square": "shapes/geometry.py::square",
    }
    scaled = {ref.expr: ref for ref in index.callees("shapes/geometry.py::scaled")}
    assert scaled["math.sqrt"].target is None
    assert scaled["math.sqrt"].reason == "external: math.sqrt"


def test_callers(index: CodeIndex) -> None:
    callers = {(r.caller, r.line) for r in index.callers("shapes/geometry.py::square")}
    assert callers == {
        ("shapes/geometry.py::area", 12),
        ("shapes/models.py::Circle.report", 21),
        ("shapes/models.py::make.<locals>.inner", 35),
    }
    assert {r.caller for r in index.callers("area", path="shapes/geometry.py")} == {
        "shapes/models.py::Circle.area"
    }


def test_definition_across_files(index: CodeIndex) -> None:
    # `area(self.r)` in models.py line 18: the name starts at column 15.
    loc = index.definition_at("shapes/models.py", 18, 16)
    assert loc is not None
    assert (loc.path, loc.line, loc.name, loc.kind) == (
        "shapes/geometry.py",
        10,
        "area",
        "function",
    )
    # `self.describe` jumps to the base class's method.
    loc = index.definition_at("shapes/models.py", 21, 22)
    assert loc is not None and (loc.path, loc.line, loc.name) == (
        "shapes/models.py",
        7,
        "Base.describe",
    )
    # `PI` in geometry.py resolves through the relative import to the constant.
    loc = index.definition_at("shapes/geometry.py", 12, 12)
    assert loc is not None and (loc.path, loc.line, loc.kind) == (
        "shapes/constants.py",
        1,
        "variable",
    )
    # A parameter has no definition elsewhere.
    assert index.definition_at("shapes/geometry.py", 7, 11) is None
    # On a module path of an import: the module file.
    loc = index.definition_at("shapes/models.py", 2, 15)  # `import shapes.geometry`
    assert loc is not None and (loc.path, loc.kind) == ("shapes/geometry.py", "module")
    loc = index.definition_at("shapes/models.py", 1, 14)  # `from shapes.geometry import ...`
    assert loc is not None and loc.path == "shapes/geometry.py"
    loc = index.definition_at("shapes/models.py", 1, 5)  # `shapes` alone is the package
    assert loc is not None and loc.path == "shapes/__init__.py"


def test_outline_nests_methods(index: CodeIndex) -> None:
    outline = [(s.name, s.kind, s.depth) for s in index.outline("shapes/models.py")]
    assert outline[:4] == [
        ("Base", "class", 0),
        ("describe", "method", 1),
        ("Circle", "class", 0),
        ("__init__", "method", 1),
    ]
    assert ("inner", "function", 1) in outline


def test_slice_keeps_dependencies_in_order(index: CodeIndex) -> None:
    sliced = index.slice("shapes/geometry.py::area")
    assert [f.path for f in sliced.files] == ["shapes/constants.py", "shapes/geometry.py"]
    geometry = sliced.files[-1]
    assert [(p.kind, p.name) for p in geometry.pieces] == [
        ("import", "shapes.constants"),
        ("function", "square"),
        ("target", "area"),
    ]
    assert [p.name for p in sliced.files[0].pieces] == ["PI"]
    text = sliced.text
    assert "def square(x):" in text and "PI = 3.14159" in text
    assert "unrelated" not in text and "UNUSED" not in text and "import math" not in text


def test_slice_follows_globals_and_classes(index: CodeIndex) -> None:
    sliced = index.slice("shapes/geometry.py::scaled")
    names = {(p.path, p.name, p.distance) for f in sliced.files for p in f.pieces}
    # SCALE (distance 1) needs PI (distance 2); `c.PI` is PI too.
    assert ("shapes/constants.py", "SCALE", 1) in names
    assert ("shapes/constants.py", "PI", 1) in names
    sliced = index.slice("shapes/models.py::make")
    kinds = {(p.kind, p.name) for f in sliced.files for p in f.pieces}
    assert ("class", "Circle") in kinds and ("method", "Circle.__init__") in kinds
    # The nested function is part of the target's text already: not repeated as a piece.
    assert ("function", "make.<locals>.inner") not in kinds
    # `c = Circle(r); c.area()` pulls in Circle.area.
    assert ("method", "Circle.area") in kinds
    assert ("function", "square") in kinds


def test_budget_keeps_closest_first(index: CodeIndex) -> None:
    full = index.slice("shapes/models.py::Circle.report")
    by_distance = sorted(
        (p for f in full.files for p in f.pieces if p.kind not in ("target", "import")),
        key=lambda p: p.distance,
    )
    # report -> self.area (1) -> geometry.area (2) -> PI (3)
    assert by_distance[0].distance == 1 and by_distance[-1].distance == 3
    # The target, the imports it needs and its class header are always kept, whatever the
    # budget; the text says what was cut.
    alone = index.slice("shapes/models.py::Circle.report", budget=0)
    assert [p.kind for f in alone.files for p in f.pieces] == ["import", "class", "target"]
    assert "# cut for the token budget: " in alone.text
    ast.parse(alone.text)
    smallest = min(p.tokens for p in by_distance if p.distance == 1)
    # The budget caps the whole text, cut notes included (issue 23): room for the smallest
    # close piece and for the note that then counts what was cut.
    budget = alone.tokens + smallest + 25
    tight = index.slice("shapes/models.py::Circle.report", budget=budget)
    assert tight.tokens <= budget and tight.over_budget == 0
    assert tight.dropped, "a tight budget must drop something"
    kept = [
        p
        for f in tight.files
        for p in f.pieces
        if p.kind not in ("target", "import") and not p.forced
    ]
    assert kept and {p.distance for p in kept} == {1}
    # Nothing kept depends on something dropped.
    keys = {p.key for f in tight.files for p in f.pieces}
    assert all(p.via in keys for p in kept)


def test_update_and_remove_refresh_the_graph(index: CodeIndex) -> None:
    index.update(
        "shapes/extra.py",
        "from shapes.geometry import square\n\ndef cube(x):\n    return square(x) * x\n",
    )
    assert _targets(index, "shapes/extra.py::cube") == {"square": "shapes/geometry.py::square"}
    assert "shapes/extra.py::cube" in {
        r.caller for r in index.callers("shapes/geometry.py::square")
    }
    index.remove("shapes/extra.py")
    assert index.find("shapes/extra.py::cube") == []


def test_from_texts_matches_build(index: CodeIndex) -> None:
    from_texts = CodeIndex.from_texts(SHAPES)
    assert {f.id for f in from_texts.functions()} == {f.id for f in index.functions()}
    assert _targets(from_texts, "shapes/models.py::Circle.report") == _targets(
        index, "shapes/models.py::Circle.report"
    )
