"""`reposim extract` run as a user would run it (a real process) on real git repositories."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import reposim

PY_PROJECT = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "from .util import clamp\n"
        "LIMIT = 10\n"
        "\n"
        "\n"
        "def scale(values, factor):\n"
        '    """Scale every value and clamp it to LIMIT."""\n'
        "    out = []\n"
        "    for v in values:\n"
        "        if v > 0:\n"
        "            out.append(clamp(v * factor, LIMIT))\n"
        "    return out\n"
        "\n"
        "\n"
        "def __repr__():\n"
        "    return 'x'\n"
        "\n"
        "\n"
        "def wrapper(values):\n"
        '    """Just a wrapper."""\n'
        "    return scale(values, 2)\n"
    ),
    "pkg/util.py": (
        "def clamp(value, limit):\n"
        '    """Clamp value to limit."""\n'
        "    if value > limit:\n"
        "        return limit\n"
        "    return value\n"
    ),
    "pkg/broken.py": (
        "def fine(a):\n"
        "    return a + 1\n"
        "\n"
        "\n"
        "def broken(a:\n"
        "    return a +\n"
        "\n"
        "\n"
        "def also_fine(b):\n"
        "    return fine(b) * 2\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import scale\n\n\ndef test_scale():\n    assert scale([1], 2)\n"
    ),
}


def by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in doc["functions"]}


def test_syntax_error_is_reported_and_the_rest_extracted(
    make_repo: Callable[..., Path], tmp_path: Path
) -> None:
    repo = make_repo(PY_PROJECT)
    out = tmp_path / "out.json"
    result = reposim("extract", str(repo), "--filter", "none", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "1 file(s) had syntax errors" in result.stderr and "pkg/broken.py" in result.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "reposim.extract/1"
    files = {f["path"]: f for f in doc["files"]}
    assert files["pkg/broken.py"]["has_errors"] and files["pkg/broken.py"]["errors"]
    assert not files["pkg/core.py"]["has_errors"]
    assert doc["summary"]["files_with_errors"] == ["pkg/broken.py"]
    functions = by_id(doc)
    assert {"pkg/broken.py::fine", "pkg/broken.py::also_fine"} <= set(functions)
    also = functions["pkg/broken.py::also_fine"]
    assert [c["target"] for c in also["calls"]] == ["pkg/broken.py::fine"]
    assert "pkg/core.py::scale" in functions and "pkg/util.py::clamp" in functions
    scale = functions["pkg/core.py::scale"]
    assert scale["docstring"] == "Scale every value and clamp it to LIMIT."
    assert scale["params"] == ["values", "factor"]
    assert scale["metrics"]["branches"] == 2
    assert {c["expr"]: c["target"] for c in scale["calls"]} == {
        "out.append": None,
        "clamp": "pkg/util.py::clamp",
    }
    assert {c["caller"] for c in scale["called_by"]} == {
        "pkg/core.py::wrapper",
        "tests/test_core.py::test_scale",
    }
    context = scale["context"]
    assert context["mode"] == "sliced"
    assert [f["path"] for f in context["files"]] == ["pkg/util.py", "pkg/core.py"]
    assert "LIMIT = 10" in context["text"] and "def clamp(value, limit):" in context["text"]


def test_r2e_filters_pick_real_targets(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo(PY_PROJECT)
    out = tmp_path / "out.json"
    result = reposim("extract", str(repo), "--filter", "r2e", "--context", "none", "-o", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    # clamp and scale pass every R2E rule; wrapper has one statement besides its docstring,
    # __repr__ starts with `__`, broken.py is rejected by ast.parse, the test has no docstring.
    assert set(by_id(doc)) == {"pkg/core.py::scale", "pkg/util.py::clamp"}
    assert doc["summary"]["selected"] == 2 and doc["summary"]["functions"] == 7
    assert doc["functions"][0]["context"] is None
    assert "r2e-size" in doc["filters"] and "no-keywords" not in doc["filters"]


def test_json_lines_stream_on_c(c_repo: Path) -> None:
    result = reposim(
        "extract", str(c_repo), "--lang", "c", "--filter", "none", "--json", "--budget", "200"
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["languages"] == ["c"]
    assert lines[-1]["type"] == "summary"
    kinds = [line["type"] for line in lines]
    assert kinds.count("file") == 4
    functions = {line["id"]: line for line in lines if line["type"] == "function"}
    main = functions["src/main.c::main"]
    assert {c["expr"]: c["target"] for c in main["calls"]}["vec_norm2"] == "src/vec.c::vec_norm2"
    norm = functions["src/vec.c::vec_norm2"]
    assert norm["context"]["tokens"] <= 200 or norm["context"]["files"][-1]["pieces"] == [
        p for p in norm["context"]["files"][-1]["pieces"] if p["kind"] in ("target", "import")
    ]
    assert lines[-1]["files_with_errors"] == ["src/broken.c"]


def test_user_errors_are_one_sentence(tmp_path: Path) -> None:
    missing = reposim("extract", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"reposim: error: {tmp_path / 'nope'} does not exist."
    empty = reposim("extract", str(tmp_path))
    assert empty.returncode == 2 and "no python or c files" in empty.stderr
    bad = reposim("extract", str(tmp_path), "--filter", "shiny")
    assert bad.returncode == 2 and "unknown filter 'shiny'" in bad.stderr
    assert "Traceback" not in missing.stderr + empty.stderr + bad.stderr
    listed = reposim("extract", str(tmp_path), "--list-filters")
    assert listed.returncode == 0 and "no-keywords" in listed.stdout and "r2e" in listed.stdout
    assert "reposim              preset (the default)" in listed.stdout


def test_reposim_preset_is_the_default(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo(PY_PROJECT)
    out = tmp_path / "out.json"
    result = reposim("extract", str(repo), "--context", "none", "-o", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    assert doc["filters"]["takes-args"] == "functions" and "r2e-size" not in doc["filters"]
    # wrapper is a single call, the test file is a test, broken.py does not parse.
    assert set(by_id(doc)) == {"pkg/core.py::scale", "pkg/util.py::clamp"}


def test_full_context_is_the_whole_file(make_repo: Callable[..., Path], tmp_path: Path) -> None:
    repo = make_repo(PY_PROJECT)
    out = tmp_path / "out.jsonl"
    result = reposim(
        "extract",
        str(repo),
        "--context",
        "full",
        "--filter",
        "has-docstring",
        "--json",
        "-o",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    functions = {line["id"]: line for line in lines if line["type"] == "function"}
    assert set(functions) == {
        "pkg/core.py::scale",
        "pkg/core.py::wrapper",
        "pkg/util.py::clamp",
    }
    clamp = functions["pkg/util.py::clamp"]["context"]
    assert clamp == {"mode": "full", "path": "pkg/util.py", "text": PY_PROJECT["pkg/util.py"]}
